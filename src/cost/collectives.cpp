// Collectives and layout conversions (docs/cost-model.md, "Layouts and collectives").
#include <cmath>

#include "cost/env.hpp"

namespace shardwise::detail {

// --- collectives -----------------------------------------------------------
namespace {
// The breakdown's record of one collective (a conversion made of two reports the larger
// kind; times and bytes add).
void record(Env& e, CollKind k, const char* gname, std::int64_t size, double full, const CollCost& c, Basis basis, const std::string& table) {
  if (e.pend_kind == CollKind::kNone || c.time.value() > e.pend_s) {
    e.pend_kind = k;
    e.pend_group = gname;
  }
  e.pend_s += c.time.value();
  e.pend_bytes += c.bytes.value();
  e.pend_colls.push_back({k, gname, size, full, c.bytes.value(), c.time.value(), basis, table});
}
}  // namespace

double coll_priced(Env& e, CollKind k, const Group& g, double full, const char* gname, double slowest) {
  // alpha-beta over the levels at comm_efficiency of the link bandwidth, plus a fixed cost per call;
  // `slowest` scales the time, not the bytes: the busiest receiver of an uneven all-to-all
  const auto same = [&](const Group& h) { return g.size == h.size && g.stride == h.stride && g.offset == h.offset; };
  const ClusterSpec& cl = e.ctx->cluster;
  const double eff = e.p->comm_efficiency;
  // the span of an evaluation's own groups is known (Env::s_tp, s_w, s_etp): by address where
  // the caller passed the Env's own, else by value
  const GroupSpan* known = &g == &e.g_tp ? &e.s_tp : &g == &e.g_w ? &e.s_w : &g == &e.g_etp ? &e.s_etp : nullptr;
  if (!known) known = same(e.g_tp) ? &e.s_tp : same(e.g_w) ? &e.s_w : same(e.g_etp) ? &e.s_etp : nullptr;
  CollCost c = k != CollKind::kSendRecv && known ? collective_cost(cl, k, g, *known, Bytes(full), eff) : collective_cost(cl, k, g, Bytes(full), eff);
  c.time = (c.time * slowest + Seconds(e.p->comm_overhead_us * 1e-6)) * e.p->scales.comm;  // scales: a calibration profile's
  // All-reduce inside one NVLink domain, as measured: the engine's custom kernel up to its
  // limit, where faster (with the kernel tables), NCCL's call above it (on every path); the
  // engines dispatch by size (docs/cost-model.md, "Layouts and collectives")
  Basis basis = Basis::kModel;
  const AllReduceCurve* table = nullptr;
  if (k == CollKind::kAllReduce) {
    const auto one_domain_on = [&](const AllReduceCurve& cv) {
      const GroupSpan sp_own = known ? GroupSpan{} : span_of(cl, g);
      const GroupSpan& sp = known ? *known : sp_own;
      return sp.levels == 1 && sp.level_index[0] == 0 && cl.levels.front().bandwidth.value() >= cv.link_bw * 0.999;
    };
    const double custom_max = static_cast<double>(e.ctx->engine.custom_all_reduce_max_bytes);
    const AllReduceProfile& car = e.ctx->custom_ar;
    const AllReduceProfile& nccl = e.ctx->nccl_ar;
    if (car.present && full <= custom_max) {
      if (const AllReduceCurve* cv = car.of(g.size); cv && one_domain_on(*cv)) {
        const double t = cv->seconds_at(full) * e.p->scales.comm;
        if (t < c.time.value()) {
          c.time = Seconds(t);
          table = cv;
        }
      }
    } else if (nccl.present && full > (custom_max > 0 ? custom_max : kNcclAllReduceFromBytes)) {
      if (const AllReduceCurve* cv = nccl.of(g.size); cv && one_domain_on(*cv)) {
        c.time = Seconds(cv->seconds_at(full) * e.p->scales.comm);
        table = cv;
      }
    }
    if (table) basis = table->in_range(full) ? table->basis : Basis::kExtrapolated;
  }
  if (e.bd) record(e, k, gname, g.size, full, c, basis, table ? table->source : std::string());
  return c.time.value();
}

namespace {
// Whether the kernel table describes this evaluation's all-to-all (moe_all_to_all's rule)
bool a2a_as_measured(const Env& e, const MoeCommProfile& mc) {
  if (!mc.present || e.etp > 1 || e.g_w.size <= 1) return false;  // expert TP: the engines gather and reduce-scatter instead
  if (mc.decode_only && e.phase != Phase::kDecode) return false;
  // SGLang and vLLM run DeepEP only when told (--moe-a2a-backend deepep, VLLM_ALL2ALL_BACKEND),
  // which launch sets with two-batch overlap: without it the launched engine runs its default
  // backend, which the model prices
  if (mc.family == MoeAllToAll::kDeepEpLowLatency && !e.plan->two_batch_overlap) return false;
  const ClusterSpec& cl = e.ctx->cluster;
  const GroupSpan& s = e.s_w;
  const bool inside = s.levels == 1 && s.level_index[0] == 0;  // one NVLink (xGMI) domain
  if (mc.one_domain) return inside;
  if (cl.levels.front().size != mc.node) return false;
  if (e.g_w.size <= mc.node) return inside;
  if (s.levels != 2 || s.level_index[0] != 0 || s.fanout[0] != mc.node) return false;
  const double bw = cl.levels[static_cast<std::size_t>(s.level_index[1])].bandwidth.value();
  return std::fabs(bw / mc.network_bw - 1.0) <= 0.1;
}
}  // namespace

double moe_all_to_all(Env& e, bool combine, double full, double imbalance) {
  const MoeCommProfile& mc = e.ctx->moe_comm;
  if (full <= 0 || !a2a_as_measured(e, mc)) return coll(e, CollKind::kAllToAll, e.g_w, full, "mlp", imbalance);
  // the engine's kernel as measured: the busiest rank's payload (imbalance x the mean's) on
  // the curve of this EP size; the bytes each GPU sends stay the model's (the executor's check)
  const double w = static_cast<double>(e.g_w.size);
  Basis basis = Basis::kModel;
  const double t = mc.seconds(combine, w, full / w * imbalance, &basis) * e.p->scales.comm;
  if (e.bd) {
    CollCost c = collective_cost(e.ctx->cluster, CollKind::kAllToAll, e.g_w, e.s_w, Bytes(full), e.p->comm_efficiency);
    c.time = Seconds(t);
    record(e, CollKind::kAllToAll, "mlp", e.g_w.size, full, c, basis, mc.source);
  }
  return t;
}

// Attention scope (tp group, tokens split over attn_dp groups) -> MLP scope (all
// W ranks). `full` is the bytes of the whole stage's tensor [T, features].
double to_mlp(Env& e, Lay from, Lay need, double full) {
  if (e.a == 1) return convert(e, from, need, e.g_tp, full, "tp");
  if (from == Lay::kR) {  // each group holds its own tokens, replicated in the group
    // attention-DP gather: each rank keeps its 1/tp slice of its group's tokens (free),
    // then all W ranks gather, hierarchically (network first, NVLink last)
    if (need == Lay::kR) return coll(e, CollKind::kAllGather, e.g_w, full, "attn_dp");
    if (need == Lay::kSt) return 0.0;
    return coll(e, CollKind::kAllToAll, e.g_w, full, "mlp");
  }
  // from St: tokens split over all W ranks (= St over the MLP group)
  return convert(e, Lay::kSt, need, e.g_w, full, "mlp");
}

// MLP scope -> attention scope: bring the stage tensor back to "each group its
// own tokens" (split over W), then gather within the tp group if R is needed.
double to_attn(Env& e, Lay from, Lay need, double full) {
  if (e.a == 1) return convert(e, from, need, e.g_tp, full, "tp");
  double t = convert(e, from, Lay::kSt, e.g_w, full, "mlp");
  if (need == Lay::kR) t += coll(e, CollKind::kAllGather, e.g_tp, full / static_cast<double>(e.a), "tp");
  return t;
}

}  // namespace shardwise::detail
