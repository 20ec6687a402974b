#include "exec/tiny.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "core/rng.hpp"

namespace shardwise::exec {
namespace {

std::int64_t round_up(std::int64_t x, std::int64_t q) { return (x + q - 1) / q * q; }

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  return h;
}

Error scale_error(const std::string& field, const std::string& expected, const std::string& found) {
  return Error{"the plan scaled for execution", field, expected, found};
}

}  // namespace

std::string lname(std::int64_t layer, const char* tensor) { return fmt::format("L{}.{}", layer, tensor); }

ClusterSpec exec_cluster(std::int64_t ranks) {
  auto c = cluster_from_preset(fmt::format("gb200x{}", ranks));
  SW_CHECK(c.ok(), "gb200x<N> is a preset for every N");
  return c.value();
}

Workload exec_workload(const Case& c, Mode mode) {
  Workload w;
  w.name = "exec";
  w.mode = mode;
  w.isl = c.isl;
  w.osl = c.decode_steps;
  w.context = c.isl;
  w.batch = c.plan.batch;
  return w;
}

LayerFacts layer_facts(const ModelSpec& m, std::int64_t layer) {
  LayerFacts f;
  const auto i = static_cast<std::size_t>(layer);
  f.moe = m.layer_is_moe[i];
  f.window = m.layer_window[i];
  f.mlp = f.moe ? m.moe.num_shared * m.moe.shared_ffn : m.ffn;
  return f;
}

Expected<Case> scale_case(const ModelSpec& o, const Plan& plan, std::uint64_t seed, std::int32_t decode_steps) {
  const Degrees& d = plan.deg;
  if (d.tp < 1 || d.pp < 1 || d.ep < 1 || d.attn_dp < 1) return scale_error("degrees", "every degree at least 1", "");
  const std::int64_t tp = d.tp, a = d.attn_dp, pp = d.pp, ep = d.ep;
  const std::int64_t w = tp * a, n = w * pp;
  if (n > kMaxRanks) {
    return scale_error("instance", fmt::format("at most {} ranks (tp x attn_dp x pp)", kMaxRanks),
                       fmt::format("{} = {} x {} x {}", n, tp, a, pp));
  }
  if (decode_steps < 0 || decode_steps > 16) return scale_error("decode steps", "0 to 16", std::to_string(decode_steps));
  if (o.is_moe() && w % ep != 0) return scale_error("ep", fmt::format("a divisor of tp x attn_dp = {}", w), std::to_string(ep));
  if (!o.is_moe() && ep != 1) return scale_error("ep", "1 on a dense model", std::to_string(ep));
  const std::int64_t etp = w / ep;
  // the plan must be legal on the model it was made for (the scaling below would make any divisibility hold)
  {
    Plan probe = plan;
    probe.deg.replicas = 1;
    probe.batch = std::max<std::int64_t>({plan.batch, a, plan.micro_batches});
    if (auto why = validate_plan(probe, o, exec_cluster(n))) {
      return scale_error("plan", fmt::format("a plan valid on {}", o.name), *why);
    }
  }

  Case c;
  c.seed = seed;
  c.decode_steps = decode_steps;
  ModelSpec& m = c.model;
  m.name = o.name + "-tiny";
  m.architecture = o.architecture;
  m.source = "scaled from " + (o.source.empty() ? o.name : o.source);
  m.attention = o.attention;
  m.mlp_gated = o.mlp_gated;
  m.tied_embeddings = o.tied_embeddings;
  m.norm = NormKind::kRms;
  m.hidden = round_up(32, std::lcm<std::int64_t>(w, 8));
  m.vocab = round_up(64, tp);
  const std::int64_t heads_min = round_up(2, tp);
  if (o.attention == AttentionKind::kMla) {
    m.num_heads = heads_min;
    m.num_kv_heads = m.num_heads;
    m.mla.q_lora_rank = o.mla.q_lora_rank > 0 ? 16 : 0;
    m.mla.kv_lora_rank = 16;
    m.mla.qk_nope_head_dim = 8;
    m.mla.qk_rope_head_dim = 4;
    m.mla.v_head_dim = 8;
    m.head_dim = 12;
  } else {
    const std::int64_t nkv_o = std::max<std::int64_t>(o.num_kv_heads, 1);
    const std::int64_t ratio = std::clamp<std::int64_t>(o.num_heads / nkv_o, 1, 2);
    std::int64_t nkv = tp;
    if (nkv_o == o.num_heads) {
      nkv = heads_min;  // MHA stays MHA
    } else if (tp % nkv_o == 0 && nkv_o < tp) {
      nkv = nkv_o;  // kv heads replicated over tp / nkv ranks, as in the original
    }
    m.num_kv_heads = nkv;
    m.num_heads = nkv_o == o.num_heads ? nkv : std::lcm(std::max(tp, nkv * ratio), nkv);
    m.head_dim = nkv < tp ? std::lcm<std::int64_t>(8, tp / nkv) : 8;  // each rank's share of a kv head is whole features
  }
  m.ffn = round_up(32, w);
  if (o.is_moe()) {
    m.moe.top_k = std::clamp<std::int64_t>(o.moe.top_k, 1, 2);
    m.moe.num_experts = round_up(std::max<std::int64_t>(4, m.moe.top_k), ep);
    m.moe.expert_ffn = round_up(16, etp);
    m.moe.num_shared = o.moe.num_shared > 0 ? 1 : 0;
    m.moe.shared_ffn = o.moe.num_shared > 0 ? round_up(32, w) : 0;
  }
  // layers: one per class of the original, in order of first appearance, padded with
  // the last class (see below for how many); windows keep their order but shrink below the prompt
  std::vector<std::pair<bool, std::int64_t>> classes;
  for (std::size_t i = 0; i < o.layer_is_moe.size(); ++i) {
    const std::pair<bool, std::int64_t> k{o.layer_is_moe[i], o.layer_window[i]};
    if (std::find(classes.begin(), classes.end(), k) == classes.end()) classes.push_back(k);
  }
  std::vector<std::int64_t> windows;
  for (const auto& k : classes) {
    if (k.second > 0) windows.push_back(k.second);
  }
  std::sort(windows.begin(), windows.end());
  windows.erase(std::unique(windows.begin(), windows.end()), windows.end());
  if (windows.size() > 4) return scale_error("sliding windows", "at most 4 distinct lengths", std::to_string(windows.size()));
  c.isl = 8;
  // at least one layer per class and per stage, and the original's remainder modulo pp, so
  // that an uneven split of the original (61 layers on pp 4) is uneven alike here
  std::int64_t layers = std::max(static_cast<std::int64_t>(classes.size()), pp);
  while (layers % pp != o.num_layers % pp) ++layers;
  if (layers > 16) {
    return scale_error("layers", "at most 16 after scaling (one per layer class and stage, the original's remainder modulo pp)",
                       std::to_string(layers));
  }
  for (std::int64_t i = 0; i < layers; ++i) {
    const auto& k = classes[static_cast<std::size_t>(std::min<std::int64_t>(i, static_cast<std::int64_t>(classes.size()) - 1))];
    std::int64_t win = 0;
    if (k.second > 0) win = 3 + (std::find(windows.begin(), windows.end(), k.second) - windows.begin());  // 3..6 < isl
    m.layer_is_moe.push_back(k.first);
    m.layer_window.push_back(win);
  }
  m.num_layers = layers;
  m.max_context = 1024;

  // batch: s sequences per attention group and micro-batch, a multiple of tp so that
  // tokens split evenly over tp and over W; for MoE, n = s / tp tokens per rank with
  // n k a multiple of lcm(E, W) so that balanced routing sends equal copies everywhere
  std::int64_t per_rank = 1;
  if (o.is_moe()) {
    const std::int64_t l = std::lcm(m.moe.num_experts, w);
    per_rank = l / std::gcd(m.moe.top_k, l);
  }
  const std::int64_t s = tp * per_rank;
  c.m = plan.micro_batches > 0 ? plan.micro_batches : static_cast<std::int32_t>(pp);
  const std::int64_t bg = c.m * s;
  c.plan = plan;
  c.plan.deg.replicas = 1;
  c.plan.batch = a * bg;
  if (c.plan.batch > 4096) return scale_error("batch", "at most 4096 sequences after scaling", std::to_string(c.plan.batch));
  if (auto why = validate_plan(c.plan, m, exec_cluster(n))) return scale_error("plan", "a plan valid on the scaled model", *why);
  return c;
}

std::string describe_case(const Case& c) {
  const ModelSpec& m = c.model;
  std::string attn = m.attention == AttentionKind::kMla
                         ? fmt::format("MLA {} heads (q_lora {}, kv_lora {}, nope {}, rope {}, v {})", m.num_heads, m.mla.q_lora_rank,
                                       m.mla.kv_lora_rank, m.mla.qk_nope_head_dim, m.mla.qk_rope_head_dim, m.mla.v_head_dim)
                         : fmt::format("{} heads, {} kv heads of {}", m.num_heads, m.num_kv_heads, m.head_dim);
  std::string moe = m.is_moe() ? fmt::format(", {} experts top-{} of {} ({} shared of {})", m.moe.num_experts, m.moe.top_k, m.moe.expert_ffn,
                                             m.moe.num_shared, m.moe.shared_ffn)
                               : "";
  return fmt::format("hidden {}, {} layers, vocab {}, {}, MLP {}{}{}; batch {} in {} micro-batch{}, prompt {}, {} decode steps", m.hidden,
                     m.num_layers, m.vocab, attn, m.ffn, m.mlp_gated ? " gated" : "", moe, c.plan.batch, c.m, c.m == 1 ? "" : "es", c.isl,
                     c.decode_steps);
}

// --- weights ------------------------------------------------------------------
const Mat& Weights::m(const std::string& name) const {
  auto it = mats.find(name);
  SW_CHECK(it != mats.end(), "every weight the executor reads is made by make_weights");
  return it->second;
}
const Vec& Weights::v(const std::string& name) const {
  auto it = vecs.find(name);
  SW_CHECK(it != vecs.end(), "every weight the executor reads is made by make_weights");
  return it->second;
}

Weights make_weights(const Case& c) {
  const ModelSpec& m = c.model;
  Weights w;
  const auto mat = [&](const std::string& name, std::int64_t in, std::int64_t out) {
    Rng rng(c.seed * 0x9E3779B97F4A7C15ULL ^ fnv1a(name));
    Mat x(in, out);
    const double scale = std::sqrt(3.0 / static_cast<double>(in));
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = (2.0 * rng.uniform() - 1.0) * scale;
    w.mats[name] = std::move(x);
  };
  const auto gain = [&](const std::string& name, std::int64_t n) {
    Rng rng(c.seed * 0x9E3779B97F4A7C15ULL ^ fnv1a(name));
    Vec g(n);
    for (Eigen::Index i = 0; i < n; ++i) g[i] = 1.0 + 0.2 * (rng.uniform() - 0.5);
    w.vecs[name] = std::move(g);
  };
  const std::int64_t h = m.hidden, up = m.mlp_gated ? 2 : 1;
  // the embedding is a lookup: scale its rows like activations (fan-in 3 gives entries in [-1, 1])
  {
    Rng rng(c.seed * 0x9E3779B97F4A7C15ULL ^ fnv1a("embed"));
    Mat e(m.vocab, h);
    for (Eigen::Index i = 0; i < e.size(); ++i) e.data()[i] = 2.0 * rng.uniform() - 1.0;
    w.mats["embed"] = std::move(e);
  }
  gain("final_norm", h);
  if (m.tied_embeddings) {
    w.mats["lm_head"] = w.mats["embed"].transpose();  // the same matrix, read as [hidden, vocab]
  } else {
    mat("lm_head", h, m.vocab);
  }
  for (std::int64_t l = 0; l < m.num_layers; ++l) {
    const LayerFacts f = layer_facts(m, l);
    gain(lname(l, "attn_norm"), h);
    gain(lname(l, "ffn_norm"), h);
    if (m.attention == AttentionKind::kMla) {
      const auto& a = m.mla;
      const std::int64_t dqk = a.qk_nope_head_dim + a.qk_rope_head_dim;
      if (a.q_lora_rank > 0) {
        mat(lname(l, "wq_a"), h, a.q_lora_rank);
        gain(lname(l, "q_norm"), a.q_lora_rank);
        mat(lname(l, "wq_b"), a.q_lora_rank, m.num_heads * dqk);
      } else {
        mat(lname(l, "wq"), h, m.num_heads * dqk);
      }
      mat(lname(l, "wkv_a"), h, a.kv_lora_rank + a.qk_rope_head_dim);
      gain(lname(l, "kv_norm"), a.kv_lora_rank);
      mat(lname(l, "wkv_b"), a.kv_lora_rank, m.num_heads * (a.qk_nope_head_dim + a.v_head_dim));
      mat(lname(l, "wo"), m.num_heads * a.v_head_dim, h);
    } else {
      mat(lname(l, "wq"), h, m.num_heads * m.head_dim);
      mat(lname(l, "wk"), h, m.num_kv_heads * m.head_dim);
      mat(lname(l, "wv"), h, m.num_kv_heads * m.head_dim);
      mat(lname(l, "wo"), m.num_heads * m.head_dim, h);
    }
    if (f.mlp > 0) {
      mat(lname(l, "w1"), h, up * f.mlp);
      mat(lname(l, "w2"), f.mlp, h);
    }
    if (f.moe) {
      mat(lname(l, "router"), h, m.moe.num_experts);
      for (std::int64_t e = 0; e < m.moe.num_experts; ++e) {
        mat(fmt::format("L{}.e{}.w1", l, e), h, up * m.moe.expert_ffn);
        mat(fmt::format("L{}.e{}.w2", l, e), m.moe.expert_ffn, h);
      }
    }
  }
  return w;
}

Weights held_weights(const Case& c, const Weights& full, std::int64_t rank, double* bytes) {
  const ModelSpec& m = c.model;
  const Degrees& d = c.plan.deg;
  const auto ch = [&](Slot s) { return static_cast<int>(c.plan.sharding[static_cast<std::size_t>(s)]); };
  const std::int64_t tp = d.tp, w = d.stage_width(), etp = d.expert_tp();
  const std::int64_t t = rank % tp, wr = rank % w, st = rank / w;
  const LayerRange stage_range = stage_layers(m.num_layers, d.pp, st);  // as the simulator splits them
  const std::int64_t eg = wr / etp, em = wr % etp;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Weights out;
  // keep [r0, r0 + nr) x [c0, c0 + nc) blocks of a matrix, NaN elsewhere
  struct Block {
    std::int64_t r0, nr, c0, nc;
  };
  const auto keep = [&](const std::string& name, std::vector<Block> blocks) {
    const Mat& src = full.m(name);
    Mat x = Mat::Constant(src.rows(), src.cols(), nan);
    for (const Block& b : blocks) x.block(b.r0, b.c0, b.nr, b.nc) = src.block(b.r0, b.c0, b.nr, b.nc);
    out.mats[name] = std::move(x);
  };
  const auto whole = [&](const std::string& name) { out.mats[name] = full.m(name); };
  const auto cols = [&](const std::string& name, std::int64_t c0, std::int64_t nc) { keep(name, {{0, full.m(name).rows(), c0, nc}}); };
  const auto rows = [&](const std::string& name, std::int64_t r0, std::int64_t nr) { keep(name, {{r0, nr, 0, full.m(name).cols()}}); };
  const std::int64_t h = m.hidden, up = m.mlp_gated ? 2 : 1;
  for (std::int64_t l = stage_range.first; l < stage_range.last; ++l) {
    const LayerFacts f = layer_facts(m, l);
    out.vecs[lname(l, "attn_norm")] = full.v(lname(l, "attn_norm"));
    out.vecs[lname(l, "ffn_norm")] = full.v(lname(l, "ffn_norm"));
    const int qc = ch(Slot::kQkv), oc = ch(Slot::kOProj);
    if (m.attention == AttentionKind::kMla) {
      const auto& a = m.mla;
      const std::int64_t dqk = a.qk_nope_head_dim + a.qk_rope_head_dim, kvp = a.qk_nope_head_dim + a.v_head_dim;
      const std::int64_t hb = m.num_heads / tp;
      const std::string q = a.q_lora_rank > 0 ? lname(l, "wq_b") : lname(l, "wq");
      if (a.q_lora_rank > 0) {
        whole(lname(l, "wq_a"));
        out.vecs[lname(l, "q_norm")] = full.v(lname(l, "q_norm"));
      }
      whole(lname(l, "wkv_a"));
      out.vecs[lname(l, "kv_norm")] = full.v(lname(l, "kv_norm"));
      // heads: q by heads; kv_b by heads only when attention is split by heads too (otherwise every
      // head reads the cached latent on every rank); none: everything (hidden is invalid for MLA)
      qc == 0 ? cols(q, t * hb * dqk, hb * dqk) : whole(q);
      qc == 0 && ch(Slot::kAttention) == 0 ? cols(lname(l, "wkv_b"), t * hb * kvp, hb * kvp) : whole(lname(l, "wkv_b"));
      const std::int64_t ob = hb * a.v_head_dim;
      oc == 0 ? rows(lname(l, "wo"), t * ob, ob) : oc == 1 ? cols(lname(l, "wo"), t * h / tp, h / tp) : whole(lname(l, "wo"));
    } else {
      const std::int64_t dh = m.head_dim, nkv = m.num_kv_heads;
      for (const char* name : {"wq", "wk", "wv"}) {
        const std::string n = lname(l, name);
        if (qc == 2) {
          whole(n);
        } else if (qc == 1) {
          rows(n, t * h / tp, h / tp);
        } else if (std::string(name) == "wq") {
          cols(n, t * m.num_heads / tp * dh, m.num_heads / tp * dh);
        } else if (nkv >= tp || ch(Slot::kAttention) != 0) {
          // k and v split like q.out's blocks: block t of the kv features (a slice of a kv head when tp > kv heads)
          const std::int64_t kb = nkv * dh / tp;
          cols(n, t * kb, kb);
        } else {
          cols(n, t / (tp / nkv) * dh, dh);  // head-split attention: the kv head this rank's q heads share, whole
        }
      }
      const std::int64_t ob = m.num_heads / tp * dh;
      oc == 0 ? rows(lname(l, "wo"), t * ob, ob) : oc == 1 ? cols(lname(l, "wo"), t * h / tp, h / tp) : whole(lname(l, "wo"));
    }
    if (f.mlp > 0) {
      const int c1 = ch(Slot::kFfn1), c2 = ch(Slot::kFfn2);
      const bool local = c1 == 2 && c2 == 2;
      const std::int64_t fb = f.mlp / w, hw = h / w;
      const std::string n1 = lname(l, "w1"), n2 = lname(l, "w2");
      if (local || c1 == 2) {
        whole(n1);
      } else if (c1 == 0) {
        std::vector<Block> b{{0, h, wr * fb, fb}};
        if (up == 2) b.push_back({0, h, f.mlp + wr * fb, fb});
        keep(n1, b);
      } else {
        rows(n1, wr * hw, hw);
      }
      if (local || c2 == 2) {
        whole(n2);
      } else if (c2 == 0) {
        rows(n2, wr * fb, fb);
      } else {
        cols(n2, wr * hw, hw);
      }
    }
    if (f.moe) {
      whole(lname(l, "router"));
      const std::int64_t per_group = m.moe.num_experts / d.ep, fe = m.moe.expert_ffn, fb = fe / etp;
      for (std::int64_t e = eg * per_group; e < (eg + 1) * per_group; ++e) {
        const std::string n1 = fmt::format("L{}.e{}.w1", l, e), n2 = fmt::format("L{}.e{}.w2", l, e);
        if (ch(Slot::kExpertFfn1) == 0) {
          std::vector<Block> b{{0, h, em * fb, fb}};
          if (up == 2) b.push_back({0, h, fe + em * fb, fb});
          keep(n1, b);
        } else {
          whole(n1);
        }
        ch(Slot::kExpertFfn2) == 0 ? rows(n2, em * fb, fb) : whole(n2);
      }
    }
  }
  const std::int64_t vb = m.vocab / tp;
  if (st == 0) ch(Slot::kEmbedding) == 0 ? rows("embed", t * vb, vb) : whole("embed");
  if (st == d.pp - 1) {
    ch(Slot::kLmHead) == 0 ? cols("lm_head", t * vb, vb) : whole("lm_head");
    out.vecs["final_norm"] = full.v("final_norm");
  }
  // a tied head on the embedding's stage is the embedding's matrix: the rank holds the union of
  // both needs once (the head reads it transposed)
  const bool shared = m.tied_embeddings && d.pp == 1;
  if (shared) {
    Mat& e = out.mats["embed"];
    const Mat& head = out.mats["lm_head"];
    for (Eigen::Index r = 0; r < e.rows(); ++r)
      for (Eigen::Index q = 0; q < e.cols(); ++q)
        if (std::isnan(e(r, q)) && !std::isnan(head(q, r))) e(r, q) = head(q, r);
    out.mats["lm_head"] = e.transpose();
  }
  double n = 0;
  for (const auto& [name, x] : out.mats) {
    if (shared && name == "lm_head") continue;  // counted as the embedding
    n += static_cast<double>(x.size() - x.array().isNaN().count());
  }
  for (const auto& [name, x] : out.vecs) n += static_cast<double>(x.size());
  *bytes = 2.0 * n;
  return out;
}

Inputs make_inputs(const Case& c) {
  Rng rng(c.seed ^ 0xA5A5A5A5ULL);
  Inputs in;
  const std::int64_t b = c.plan.batch, v = c.model.vocab;
  in.prompt.assign(static_cast<std::size_t>(b), std::vector<std::int64_t>(static_cast<std::size_t>(c.isl)));
  for (auto& s : in.prompt) {
    for (auto& t : s) t = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(v)));
  }
  in.decode.assign(static_cast<std::size_t>(c.decode_steps), std::vector<std::int64_t>(static_cast<std::size_t>(b)));
  for (auto& st : in.decode) {
    for (auto& t : st) t = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(v)));
  }
  return in;
}

std::int64_t stage_token_index(const Case& c, bool prefill, std::int64_t seq, std::int64_t pos) {
  const std::int64_t bg = c.seqs_per_group(), s = c.seqs_per_micro();
  const std::int64_t group = seq / bg, local = (seq % bg) % s;
  return prefill ? (group * s + local) * c.isl + pos : group * s + local;
}

// --- kernels --------------------------------------------------------------------
void rms_norm_rows(Mat& x, const Vec& gain) {
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const double ms = x.row(r).squaredNorm() / static_cast<double>(x.cols());
    const double inv = 1.0 / std::sqrt(ms + 1e-6);
    x.row(r) = (x.row(r) * inv).cwiseProduct(gain.transpose());
  }
}
double silu(double x) { return x / (1.0 + std::exp(-x)); }
double gelu(double x) { return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

Mat mlp_activate(const Mat& pre, bool gated, std::int64_t f) {
  Mat out(pre.rows(), f);
  for (Eigen::Index r = 0; r < pre.rows(); ++r) {
    for (Eigen::Index j = 0; j < f; ++j) out(r, j) = gated ? silu(pre(r, j)) * pre(r, f + j) : gelu(pre(r, j));
  }
  return out;
}

}  // namespace shardwise::exec
