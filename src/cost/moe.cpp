// The MoE block of one layer: router, dispatch (all-to-all), the expert FFNs inside each
// expert group, combine (docs/cost-model.md, "Mixture of experts").
#include "cost/env.hpp"

namespace shardwise::detail {

void moe_block(Env& e, OpTimer& t, const LayerShape& s, double T, Lay ffn_need) {
  const Plan& p = *e.plan;
  const double tg = T / static_cast<double>(e.a);  // tokens per attention group
  const double h = static_cast<double>(s.hidden);
  const double tp = static_cast<double>(e.tp), w = static_cast<double>(e.w);
  double &comm = t.comm, &comp = t.comp;
  const auto flush = [&](const char* name, int slot, int group) { t.flush(name, slot, group); };
  const auto act = [&](int group, double bytes) { t.act(group, bytes); };
  const double k = static_cast<double>(s.top_k);
  const double local_experts = static_cast<double>(s.experts / e.ep);
  const double etp = static_cast<double>(e.etp);
  const double tok_group = T * k / static_cast<double>(e.ep);  // routed token copies per expert group
  // router: none (replicated in the tp group) | tokens
  const Lay rl = norm_lay(p, Slot::kRouter);
  comm = convert(e, ffn_need, rl, e.g_tp, tg * h * e.ab, "tp");
  {
    const double rows = rl == Lay::kSt ? tg / tp : tg;
    comp = gemm_time(e, rows, 2.0 * rows * s.router_params, s.router_params * e.wb + rows * (h + static_cast<double>(s.experts)) * e.ab);
    flush("router", static_cast<int>(Slot::kRouter), kGroupRouter);
  }
  // dispatch: each rank sends its T/W tokens' top-k copies to the experts' ranks (all-to-all over W)
  comm = coll(e, CollKind::kAllToAll, e.g_w, T * k * h * e.ab, "mlp");
  flush("dispatch", -1, kGroupConst);
  // expert FFNs inside each expert group of etp ranks: ffn (split each expert) | tokens (split the tokens)
  const int c1 = ch(p, Slot::kExpertFfn1), c2 = ch(p, Slot::kExpertFfn2);
  const Lay e1_in = c1 == 0 ? Lay::kR : Lay::kSt, e1_out = c1 == 0 ? Lay::kSf : Lay::kSt;
  const Lay e2_in = c2 == 0 ? Lay::kSf : Lay::kSt, e2_out = c2 == 0 ? Lay::kP : Lay::kSt;
  const double f = static_cast<double>(s.expert_ffn), up = static_cast<double>(s.mlp_mats - 1);
  comm = convert(e, Lay::kSt, e1_in, e.g_etp, tok_group * h * e.ab, "etp");
  {
    const double rows = c1 == 0 ? tok_group : tok_group / etp;
    const double params = local_experts * s.expert_ffn1_params / (c1 == 0 ? etp : 1.0);
    const double out_f = up * f / (c1 == 0 ? etp : 1.0);
    // each local expert is its own GEMM with rows / local_experts tokens on average
    const double rows_per_expert = std::max(rows / local_experts, 1.0);
    comp = gemm_time(e, rows_per_expert, 2.0 * rows * params / local_experts, params * e.wb + rows * (h + out_f) * e.ab);
    act(kGroupExperts, rows * (h + out_f) * e.ab);
    flush("expert_ffn1", static_cast<int>(Slot::kExpertFfn1), kGroupExperts);
  }
  comm = convert(e, e1_out, e2_in, e.g_etp, tok_group * f * e.ab, "etp");
  {
    const double rows = c2 == 0 ? tok_group : tok_group / etp;
    const double params = local_experts * s.expert_ffn2_params / (c2 == 0 ? etp : 1.0);
    const double in_f = c2 == 0 ? f / etp : f;
    const double rows_per_expert = std::max(rows / local_experts, 1.0);
    comp = gemm_time(e, rows_per_expert, 2.0 * rows * params / local_experts, params * e.wb + rows * (in_f + h) * e.ab);
    flush("expert_ffn2", static_cast<int>(Slot::kExpertFfn2), kGroupExperts);
  }
  // combine: partial sums reduced inside the expert group, copies sent back (all-to-all over W), weighted sum
  comm = convert(e, e2_out, Lay::kSt, e.g_etp, tok_group * h * e.ab, "etp");
  comm += coll(e, CollKind::kAllToAll, e.g_w, T * k * h * e.ab, "mlp");
  comp = stream_time(e, (T / w) * (k + 1.0) * h * e.ab);
  flush("combine", -1, kGroupExperts);
}

}  // namespace shardwise::detail
