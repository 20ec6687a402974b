#include "exec/reference.hpp"

#include <cmath>
#include <limits>

namespace shardwise::exec {
namespace {

struct SeqCache {
  // per layer, per position: GQA [K (nkv d) | V (nkv d)]; MLA [latent | k_rope]
  std::vector<std::vector<Vec>> kv;
};

class Reference {
 public:
  Reference(const Case& c, const Weights& w) : c_(c), m_(c.model), w_(w) {}

  // Runs tokens `ids` at positions start.. of sequence `seq`; returns the last row's logits.
  std::vector<double> run(SeqCache& cache, std::int64_t seq, const std::vector<std::int64_t>& ids, std::int64_t start, bool prefill) {
    const std::int64_t n = static_cast<std::int64_t>(ids.size()), h = m_.hidden;
    Mat x(n, h);
    for (std::int64_t i = 0; i < n; ++i) x.row(i) = w_.m("embed").row(ids[static_cast<std::size_t>(i)]);
    if (cache.kv.empty()) cache.kv.resize(static_cast<std::size_t>(m_.num_layers));
    for (std::int64_t l = 0; l < m_.num_layers; ++l) {
      const LayerFacts f = layer_facts(m_, l);
      Mat xn = x;
      rms_norm_rows(xn, w_.v(lname(l, "attn_norm")));
      x += attention(cache.kv[static_cast<std::size_t>(l)], l, f.window, xn, start) * w_.m(lname(l, "wo"));
      Mat hn = x;
      rms_norm_rows(hn, w_.v(lname(l, "ffn_norm")));
      Mat y = Mat::Zero(n, h);
      if (f.mlp > 0) y += mlp(hn, w_.m(lname(l, "w1")), w_.m(lname(l, "w2")), f.mlp);
      if (f.moe) y += moe(l, hn, seq, start, prefill);
      x += y;
    }
    Mat last = x.row(n - 1);
    rms_norm_rows(last, w_.v("final_norm"));
    const Mat logits = last * w_.m("lm_head");
    return {logits.data(), logits.data() + logits.size()};
  }

 private:
  Mat mlp(const Mat& x, const Mat& w1, const Mat& w2, std::int64_t f) const {
    return mlp_activate(x * w1, m_.mlp_gated, f) * w2;
  }

  Mat moe(std::int64_t l, const Mat& x, std::int64_t seq, std::int64_t start, bool prefill) const {
    const std::int64_t k = m_.moe.top_k, e_n = m_.moe.num_experts;
    const Mat logits = x * w_.m(lname(l, "router"));
    Mat y = Mat::Zero(x.rows(), x.cols());
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      const std::int64_t t = stage_token_index(c_, prefill, seq, start + i);
      std::vector<std::int64_t> ex(static_cast<std::size_t>(k));
      std::vector<double> g(static_cast<std::size_t>(k));
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (std::int64_t j = 0; j < k; ++j) {
        ex[static_cast<std::size_t>(j)] = routed_expert(t, j, k, e_n);
        mx = std::max(mx, logits(i, ex[static_cast<std::size_t>(j)]));
      }
      for (std::int64_t j = 0; j < k; ++j) sum += g[static_cast<std::size_t>(j)] = std::exp(logits(i, ex[static_cast<std::size_t>(j)]) - mx);
      for (std::int64_t j = 0; j < k; ++j) {
        const std::int64_t e = ex[static_cast<std::size_t>(j)];
        const Mat row = x.row(i);
        y.row(i) += g[static_cast<std::size_t>(j)] / sum *
                    mlp(row, w_.m(lname(l, "") + "e" + std::to_string(e) + ".w1"), w_.m(lname(l, "") + "e" + std::to_string(e) + ".w2"),
                        m_.moe.expert_ffn);
      }
    }
    return y;
  }

  // Appends the new tokens' keys and values to the cache, then attends causally (within the window).
  Mat attention(std::vector<Vec>& cache, std::int64_t l, std::int64_t window, const Mat& x, std::int64_t start) const {
    const std::int64_t n = x.rows(), nh = m_.num_heads;
    const bool mla = m_.attention == AttentionKind::kMla;
    Mat q;
    std::int64_t dqk = 0, dv = 0;
    if (mla) {
      const auto& a = m_.mla;
      dqk = a.qk_nope_head_dim + a.qk_rope_head_dim;
      dv = a.v_head_dim;
      if (a.q_lora_rank > 0) {
        Mat qa = x * w_.m(lname(l, "wq_a"));
        rms_norm_rows(qa, w_.v(lname(l, "q_norm")));
        q = qa * w_.m(lname(l, "wq_b"));
      } else {
        q = x * w_.m(lname(l, "wq"));
      }
      Mat kva = x * w_.m(lname(l, "wkv_a"));
      Mat lat = kva.leftCols(a.kv_lora_rank);
      rms_norm_rows(lat, w_.v(lname(l, "kv_norm")));
      for (std::int64_t i = 0; i < n; ++i) {
        Vec e(a.kv_lora_rank + a.qk_rope_head_dim);
        e << lat.row(i).transpose(), kva.row(i).tail(a.qk_rope_head_dim).transpose();
        cache.push_back(e);
      }
    } else {
      dqk = dv = m_.head_dim;
      q = x * w_.m(lname(l, "wq"));
      const Mat k = x * w_.m(lname(l, "wk")), v = x * w_.m(lname(l, "wv"));
      for (std::int64_t i = 0; i < n; ++i) {
        Vec e(k.cols() + v.cols());
        e << k.row(i).transpose(), v.row(i).transpose();
        cache.push_back(e);
      }
    }
    Mat out = Mat::Zero(n, nh * dv);
    const double scale = 1.0 / std::sqrt(static_cast<double>(dqk));
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t p = start + i;
      const std::int64_t lo = window > 0 ? std::max<std::int64_t>(0, p - window + 1) : 0;
      for (std::int64_t hd = 0; hd < nh; ++hd) {
        std::vector<double> s;
        Mat vals(p - lo + 1, dv);
        for (std::int64_t j = lo; j <= p; ++j) {
          const Vec& e = cache[static_cast<std::size_t>(j)];
          Vec kk(dqk), vv(dv);
          if (mla) {
            const auto& a = m_.mla;
            const std::int64_t per = a.qk_nope_head_dim + a.v_head_dim;
            const Vec kvb = (e.head(a.kv_lora_rank).transpose() * w_.m(lname(l, "wkv_b")).middleCols(hd * per, per)).transpose();
            kk << kvb.head(a.qk_nope_head_dim), e.tail(a.qk_rope_head_dim);
            vv = kvb.tail(a.v_head_dim);
          } else {
            const std::int64_t g = hd / (nh / m_.num_kv_heads), d = m_.head_dim, kvw = m_.num_kv_heads * d;
            kk = e.segment(g * d, d);
            vv = e.segment(kvw + g * d, d);
          }
          s.push_back(q.row(i).segment(hd * dqk, dqk).dot(kk) * scale);
          vals.row(j - lo) = vv.transpose();
        }
        const double mx = *std::max_element(s.begin(), s.end());
        double sum = 0;
        for (double& v : s) sum += v = std::exp(v - mx);
        for (std::size_t j = 0; j < s.size(); ++j) out.row(i).segment(hd * dv, dv) += s[j] / sum * vals.row(static_cast<Eigen::Index>(j));
      }
    }
    return out;
  }

  const Case& c_;
  const ModelSpec& m_;
  const Weights& w_;
};

}  // namespace

Logits reference_run(const Case& c, const Weights& w, const Inputs& in) {
  Reference ref(c, w);
  Logits out;
  for (std::int64_t s = 0; s < c.plan.batch; ++s) {
    SeqCache cache;
    out[{s, 0}] = ref.run(cache, s, in.prompt[static_cast<std::size_t>(s)], 0, true);
    for (std::int32_t step = 0; step < c.decode_steps; ++step) {
      out[{s, step + 1}] = ref.run(cache, s, {in.decode[static_cast<std::size_t>(step)][static_cast<std::size_t>(s)]}, c.isl + step, false);
    }
  }
  return out;
}

double max_relative_error(const Logits& got, const Logits& want) {
  double num = 0, den = 0;
  for (const auto& [key, y] : want) {
    auto it = got.find(key);
    if (it == got.end() || it->second.size() != y.size()) return std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < y.size(); ++i) {
      const double d = std::abs(it->second[i] - y[i]);
      if (!std::isfinite(it->second[i]) || !std::isfinite(y[i])) return std::numeric_limits<double>::infinity();
      num = std::max(num, d);
      den = std::max(den, std::abs(y[i]));
    }
  }
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  return den > 0 ? num / den : num;
}

}  // namespace shardwise::exec
