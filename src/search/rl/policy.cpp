#include "search/rl/policy.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "plan/space.hpp"

namespace shardwise::rl {
namespace {
constexpr double kLnEps = 1e-5;

template <class Mat>
void xavier(Mat& m, int rows, int cols, Rng& rng, double gain = 1.0) {
  m.resize(rows, cols);
  const double a = gain * std::sqrt(6.0 / (rows + cols));
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<typename Mat::Scalar>((2.0 * rng.uniform() - 1.0) * a);
}

// Row-wise layer norm: Yhat = (X - mu) * inv, Y = Yhat * g + b.
template <class Mat, class RowVec>
void layer_norm(const Mat& X, const RowVec& g, const RowVec& b, Mat& Xhat, Mat& Y, RowVec& mu, RowVec& inv) {
  using S = typename Mat::Scalar;
  const Eigen::Index T = X.rows(), d = X.cols();
  mu.resize(T);
  inv.resize(T);
  Xhat.resize(T, d);
  for (Eigen::Index t = 0; t < T; ++t) {
    const S m = X.row(t).mean();
    const S var = (X.row(t).array() - m).square().mean();
    mu(t) = m;
    inv(t) = S(1) / std::sqrt(var + S(kLnEps));
    Xhat.row(t) = (X.row(t).array() - m) * inv(t);
  }
  Y = (Xhat.array().rowwise() * g.array()).rowwise() + b.array();
}

// dX from dY through the layer norm; accumulates the gain and bias gradients.
template <class Mat, class RowVec>
Mat layer_norm_back(const Mat& dY, const Mat& Xhat, const RowVec& inv, const RowVec& g, RowVec& dg, RowVec& db) {
  using S = typename Mat::Scalar;
  dg += (dY.array() * Xhat.array()).colwise().sum().matrix();
  db += dY.colwise().sum();
  const Mat dXhat = (dY.array().rowwise() * g.array()).matrix();
  Mat dX(dY.rows(), dY.cols());
  for (Eigen::Index t = 0; t < dY.rows(); ++t) {
    const S m1 = dXhat.row(t).mean();
    const S m2 = (dXhat.row(t).array() * Xhat.row(t).array()).mean();
    dX.row(t) = inv(t) * (dXhat.row(t).array() - m1 - Xhat.row(t).array() * m2).matrix();
  }
  return dX;
}

template <class Mat>
Mat relu(const Mat& x) { return x.cwiseMax(typename Mat::Scalar(0)); }
template <class Mat>
Mat relu_mask(const Mat& pre, const Mat& d) { return (pre.array() > typename Mat::Scalar(0)).select(d, typename Mat::Scalar(0)); }
}  // namespace

int PolicyDims::logits() const {
  int k = 0;
  for (int h : action_heads) k += h;
  return k;
}

// The number of parameters a network of these dimensions has (Params::each's tensors:
// We A x d, Wq Wk Wv Wo d x d, W1 d x f, W2 f x d, Wh d x hid, Wl hid x K, Wvalue hid x 1;
// eight biases and norms of d, b1 f, bh hid, bl K, and bvalue).
std::int64_t param_count(const PolicyDims& dims) {
  const std::int64_t A = dims.input, d = dims.model, f = dims.ffn, hid = dims.hidden;
  std::int64_t K = 0;
  for (int h : dims.action_heads) K += h;
  return A * d + 4 * d * d + 2 * d * f + d * hid + hid * K + hid + 10 * d + f + hid + K + 1;
}

template <class S>
PolicyT<S>::PolicyT(const PolicyDims& dims, Rng& rng) : dims_(dims) {
  const int A = dims.input, d = dims.model, f = dims.ffn, hid = dims.hidden, K = dims.logits();
  SW_CHECK(d % dims.heads == 0, "model width must split into heads");
  xavier(p_.We, A, d, rng);
  xavier(p_.Wq, d, d, rng);
  xavier(p_.Wk, d, d, rng);
  xavier(p_.Wv, d, d, rng);
  xavier(p_.Wo, d, d, rng);
  xavier(p_.W1, d, f, rng);
  xavier(p_.W2, f, d, rng);
  xavier(p_.Wh, d, hid, rng);
  xavier(p_.Wl, hid, K, rng, 0.01);  // near-uniform initial policy (Stable-Baselines3 uses gain 0.01 too)
  xavier(p_.Wvalue, hid, 1, rng);
  for (RowVec* v : {&p_.be, &p_.bq, &p_.bk, &p_.bv, &p_.bo, &p_.b2, &p_.beta1, &p_.beta2}) *v = RowVec::Zero(d);
  p_.b1 = RowVec::Zero(f);
  p_.bh = RowVec::Zero(hid);
  p_.bl = RowVec::Zero(K);
  p_.g1 = RowVec::Ones(d);
  p_.g2 = RowVec::Ones(d);
  p_.bvalue = S(0);
  int off = 0;
  for (int h : dims.action_heads) {
    offsets_.push_back(off);
    off += h;
  }
}

template <class S>
Params<S> PolicyT<S>::zeros_like() const {
  Params<S> z = p_;
  z.each([](S* x, Eigen::Index n) { std::fill(x, x + n, S(0)); });
  return z;
}

template <class S>
void PolicyT<S>::forward(const Mat& X, Cache<S>& c) const {
  const int d = dims_.model, nh = dims_.heads, dk = d / nh;
  const S scale = S(1) / std::sqrt(static_cast<S>(dk));
  c.X = X;
  c.E = (X * p_.We).rowwise() + p_.be;
  c.Q = (c.E * p_.Wq).rowwise() + p_.bq;
  c.K = (c.E * p_.Wk).rowwise() + p_.bk;
  c.V = (c.E * p_.Wv).rowwise() + p_.bv;
  const Eigen::Index T = X.rows();
  c.attn_cat.resize(T, d);
  c.P.resize(static_cast<std::size_t>(nh));
  for (int i = 0; i < nh; ++i) {
    Mat Sc = c.Q.middleCols(i * dk, dk) * c.K.middleCols(i * dk, dk).transpose() * scale;
    for (Eigen::Index t = 0; t < T; ++t) {
      const S mx = Sc.row(t).maxCoeff();
      Sc.row(t) = (Sc.row(t).array() - mx).exp();
      Sc.row(t) /= Sc.row(t).sum();
    }
    c.P[static_cast<std::size_t>(i)] = Sc;
    c.attn_cat.middleCols(i * dk, dk) = Sc * c.V.middleCols(i * dk, dk);
  }
  c.O = (c.attn_cat * p_.Wo).rowwise() + p_.bo;
  c.Y1 = c.E + c.O;
  layer_norm(c.Y1, p_.g1, p_.beta1, c.Yhat, c.Y, c.mu1, c.inv1);
  c.A1 = (c.Y * p_.W1).rowwise() + p_.b1;
  c.R1 = relu(c.A1);
  c.F = (c.R1 * p_.W2).rowwise() + p_.b2;
  c.Z1 = c.Y + c.F;
  layer_norm(c.Z1, p_.g2, p_.beta2, c.Zhat, c.Z, c.mu2, c.inv2);
  c.pooled = c.Z.colwise().mean();
  c.Hpre = c.pooled * p_.Wh + p_.bh;
  c.H = c.Hpre.cwiseMax(S(0));
  c.logits = c.H * p_.Wl + p_.bl;
  c.value = (c.H * p_.Wvalue)(0, 0) + p_.bvalue;
}

template <class S>
void PolicyT<S>::backward(const Cache<S>& c, const RowVec& dlogits, S dvalue, Params<S>& g) const {
  const int d = dims_.model, nh = dims_.heads, dk = d / nh;
  const S scale = S(1) / std::sqrt(static_cast<S>(dk));
  const Eigen::Index T = c.X.rows();
  // heads
  g.Wl += c.H.transpose() * dlogits;
  g.bl += dlogits;
  g.Wvalue += c.H.transpose() * dvalue;
  g.bvalue += dvalue;
  const RowVec dH = dlogits * p_.Wl.transpose() + dvalue * p_.Wvalue.transpose();
  const RowVec dHpre = (c.Hpre.array() > S(0)).select(dH, S(0));
  g.Wh += c.pooled.transpose() * dHpre;
  g.bh += dHpre;
  const RowVec dpooled = dHpre * p_.Wh.transpose();
  // mean pooling
  const Mat dZ = Mat::Ones(T, 1) * dpooled / static_cast<S>(T);
  // LN2 and the feed-forward residual
  const Mat dZ1 = layer_norm_back(dZ, c.Zhat, c.inv2, p_.g2, g.g2, g.beta2);
  Mat dY = dZ1;
  g.W2 += c.R1.transpose() * dZ1;
  g.b2 += dZ1.colwise().sum();
  const Mat dA1 = relu_mask<Mat>(c.A1, dZ1 * p_.W2.transpose());
  g.W1 += c.Y.transpose() * dA1;
  g.b1 += dA1.colwise().sum();
  dY += dA1 * p_.W1.transpose();
  // LN1 and the attention residual
  const Mat dY1 = layer_norm_back(dY, c.Yhat, c.inv1, p_.g1, g.g1, g.beta1);
  Mat dE = dY1;
  g.Wo += c.attn_cat.transpose() * dY1;
  g.bo += dY1.colwise().sum();
  const Mat dcat = dY1 * p_.Wo.transpose();
  Mat dQ(T, d), dK(T, d), dV(T, d);
  for (int i = 0; i < nh; ++i) {
    const Mat& P = c.P[static_cast<std::size_t>(i)];
    const Mat dOi = dcat.middleCols(i * dk, dk);
    const Mat dP = dOi * c.V.middleCols(i * dk, dk).transpose();
    dV.middleCols(i * dk, dk) = P.transpose() * dOi;
    // softmax: dS = P * (dP - rowsum(dP * P))
    const Vec rs = (dP.array() * P.array()).rowwise().sum();
    const Mat dS = (P.array() * (dP.colwise() - rs).array()).matrix() * scale;
    dQ.middleCols(i * dk, dk) = dS * c.K.middleCols(i * dk, dk);
    dK.middleCols(i * dk, dk) = dS.transpose() * c.Q.middleCols(i * dk, dk);
  }
  g.Wq += c.E.transpose() * dQ;
  g.bq += dQ.colwise().sum();
  g.Wk += c.E.transpose() * dK;
  g.bk += dK.colwise().sum();
  g.Wv += c.E.transpose() * dV;
  g.bv += dV.colwise().sum();
  dE += dQ * p_.Wq.transpose() + dK * p_.Wk.transpose() + dV * p_.Wv.transpose();
  g.We += c.X.transpose() * dE;
  g.be += dE.colwise().sum();
}

template <class S>
typename PolicyT<S>::Vec PolicyT<S>::head_probs(const RowVec& logits, int head) const {
  const int n = dims_.action_heads[static_cast<std::size_t>(head)];
  Vec z = logits.segment(offsets_[static_cast<std::size_t>(head)], n).transpose();
  z = (z.array() - z.maxCoeff()).exp();
  return z / z.sum();
}

template <class S>
std::string PolicyT<S>::save() const {
  std::ostringstream out;
  out.precision(17);
  out << "shardwise-policy/2\n" << dims_.input << ' ' << dims_.records << ' ' << dims_.model << ' ' << dims_.heads << ' ' << dims_.ffn
      << ' ' << dims_.hidden << ' ' << dims_.action_heads.size();
  for (int h : dims_.action_heads) out << ' ' << h;
  out << '\n' << (dims_.labels.empty() ? 0 : 1) << '\n';
  for (const auto& head : dims_.labels) {
    for (std::size_t i = 0; i < head.size(); ++i) out << head[i] << (i + 1 == head.size() ? '\n' : ' ');
  }
  Params<S> copy = p_;
  copy.each([&](S* x, Eigen::Index n) {
    for (Eigen::Index i = 0; i < n; ++i) out << x[i] << (i + 1 == n ? '\n' : ' ');
  });
  return out.str();
}

template <class S>
Expected<PolicyT<S>> PolicyT<S>::load(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::string magic;
  in >> magic;
  // version 1 had no labels; it still loads
  if (magic != "shardwise-policy/1" && magic != "shardwise-policy/2") {
    return Error{file, "", "a policy saved by shardwise (shardwise-policy/2)", "'" + magic.substr(0, 40) + "'"};
  }
  PolicyDims d;
  std::size_t nheads = 0;
  in >> d.input >> d.records >> d.model >> d.heads >> d.ffn >> d.hidden >> nheads;
  // bounded before anything is allocated by what a search space can need: a damaged
  // header must not ask for gigabytes. A space has kNumHeads action heads; a head holds
  // at most kMaxHeadValues values (the divisors of a count up to 2^20 GPUs are far fewer;
  // the batch ladder has 26); an elite record is the heads' one-hot values plus 2.
  constexpr int kMaxWidth = 1024, kMaxHeadValues = 1024, kMaxRecords = 64;
  constexpr int kMaxInput = kNumHeads * kMaxHeadValues + 2;
  if (!in || d.input < 1 || d.input > kMaxInput || d.records < 1 || d.records > kMaxRecords || d.model < 1 || d.model > kMaxWidth ||
      d.heads < 1 || d.model % d.heads != 0 || d.ffn < 1 || d.ffn > kMaxWidth || d.hidden < 1 || d.hidden > kMaxWidth || nheads < 1 ||
      nheads > static_cast<std::size_t>(kNumHeads)) {
    return Error{file, "dimensions",
                 fmt::format("input 1..{}, records 1..{}, widths 1..{} (the width a multiple of the attention heads), 1..{} action heads",
                             kMaxInput, kMaxRecords, kMaxWidth, kNumHeads),
                 "a damaged header"};
  }
  std::int64_t logits = 0;
  for (std::size_t i = 0; i < nheads; ++i) {
    int h = 0;
    in >> h;
    if (!in || h < 1 || h > kMaxHeadValues) {
      return Error{file, fmt::format("dimensions (action head {})", i), fmt::format("a size from 1 to {}", kMaxHeadValues), "a damaged header"};
    }
    d.action_heads.push_back(h);
    logits += h;
  }
  // every parameter is at least two characters of text ("0 "): a header that asks for more
  // numbers than the file can hold is refused before the network is allocated
  {
    const std::int64_t need = param_count(d);
    if (need > static_cast<std::int64_t>(text.size() / 2)) {
      return Error{file, "parameters", fmt::format("{} numbers, as the header says", need),
                   fmt::format("a file of {} bytes, too short to hold them", text.size())};
    }
  }
  if (magic == "shardwise-policy/2") {
    int has_labels = -1;
    in >> has_labels;
    if (!in || (has_labels != 0 && has_labels != 1)) return Error{file, "labels", "0 or 1 (whether value labels follow)", "a damaged header"};
    if (has_labels == 1) {
      std::string line;
      std::getline(in, line);  // the rest of the flag's line
      for (std::size_t h = 0; h < nheads; ++h) {
        std::getline(in, line);
        std::istringstream words(line);
        std::vector<std::string> head;
        for (std::string w; words >> w;) head.push_back(w);
        if (!in || head.size() != static_cast<std::size_t>(d.action_heads[h])) {
          return Error{file, fmt::format("labels of action head {}", h), fmt::format("{} value labels on one line", d.action_heads[h]),
                       fmt::format("{}", head.size())};
        }
        d.labels.push_back(std::move(head));
      }
    }
  }
  Rng rng(0);
  PolicyT p(d, rng);
  bool ok = true;
  std::int64_t read = 0;
  std::string why;
  p.p_.each([&](S* x, Eigen::Index n) {
    for (Eigen::Index i = 0; i < n && ok; ++i) {
      double v = 0;
      if (!(in >> v)) {
        ok = false;
        why = fmt::format("{} numbers, then {}", read, in.eof() ? "the end of the file" : "a non-number");
      } else if (!std::isfinite(v) || !std::isfinite(static_cast<S>(v))) {
        // finite in the network's own precision: 1e300 is a double but overflows a float
        ok = false;
        why = fmt::format("parameter #{} = {:g}, not finite in the network's precision", read + 1, v);
      }
      x[i] = static_cast<S>(v);
      ++read;
    }
  });
  if (!ok) return Error{file, "parameters", fmt::format("{} finite numbers", p.p_.count()), why};
  return p;
}

template <class S>
Expected<PolicyT<S>> PolicyT<S>::transfer(const PolicyDims& to, Rng& rng, int* matched) const {
  const PolicyDims& from = dims_;
  if (from.records != to.records || from.model != to.model || from.heads != to.heads || from.ffn != to.ffn || from.hidden != to.hidden) {
    return Error{"policy", "dimensions",
                 fmt::format("records {}, width {}, {} attention heads, ffn {}, hidden {}", to.records, to.model, to.heads, to.ffn, to.hidden),
                 fmt::format("records {}, width {}, {} attention heads, ffn {}, hidden {}", from.records, from.model, from.heads, from.ffn,
                             from.hidden)};
  }
  const auto labelled = [](const PolicyDims& d) {
    if (d.labels.size() != d.action_heads.size()) return false;
    for (std::size_t h = 0; h < d.labels.size(); ++h) {
      if (d.labels[h].size() != static_cast<std::size_t>(d.action_heads[h])) return false;
    }
    return true;
  };
  if (!labelled(from) || !labelled(to)) {
    return Error{"policy", "labels", "one value label per action value on every head (saved by shardwise-policy/2)", "none, or too few"};
  }
  if (from.action_heads.size() != to.action_heads.size()) {
    return Error{"policy", "action heads", fmt::format("{} heads", to.action_heads.size()), fmt::format("{}", from.action_heads.size())};
  }
  if (from.input != from.logits() + 2 || to.input != to.logits() + 2) {
    return Error{"policy", "input", "the agent's record layout (one-hot of every head, then value and presence)", "another width"};
  }
  PolicyT out(to, rng);
  Params<S>& q = out.p_;
  // the trunk: every parameter but the embedding rows and the output columns
  q.Wq = p_.Wq, q.Wk = p_.Wk, q.Wv = p_.Wv, q.Wo = p_.Wo, q.W1 = p_.W1, q.W2 = p_.W2, q.Wh = p_.Wh, q.Wvalue = p_.Wvalue;
  q.be = p_.be, q.bq = p_.bq, q.bk = p_.bk, q.bv = p_.bv, q.bo = p_.bo, q.b1 = p_.b1, q.b2 = p_.b2;
  q.g1 = p_.g1, q.beta1 = p_.beta1, q.g2 = p_.g2, q.beta2 = p_.beta2, q.bh = p_.bh, q.bvalue = p_.bvalue;
  int n = 0;
  for (std::size_t h = 0; h < to.labels.size(); ++h) {
    for (std::size_t v = 0; v < to.labels[h].size(); ++v) {
      const auto& old = from.labels[h];
      const auto it = std::find(old.begin(), old.end(), to.labels[h][v]);
      if (it == old.end()) continue;
      const auto src = offsets_[h] + static_cast<int>(it - old.begin());
      const auto dst = out.offsets_[h] + static_cast<int>(v);
      q.We.row(dst) = p_.We.row(src);
      q.Wl.col(dst) = p_.Wl.col(src);
      q.bl(dst) = p_.bl(src);
      ++n;
    }
  }
  // the two record features after the one-hots: value over the best, presence
  for (int k = 0; k < 2; ++k) q.We.row(to.input - 2 + k) = p_.We.row(from.input - 2 + k);
  if (matched) *matched = n;
  return out;
}

template <class S>
void PolicyT<S>::set_labels(std::vector<std::vector<std::string>> labels) {
  SW_CHECK(labels.size() == dims_.action_heads.size(), "one label list per action head");
  for (std::size_t h = 0; h < labels.size(); ++h) {
    SW_CHECK(labels[h].size() == static_cast<std::size_t>(dims_.action_heads[h]), "one label per action value");
  }
  dims_.labels = std::move(labels);
}

template <class S>
AdamT<S>::AdamT(Params<S>& like) : m_(like), v_(like) {
  m_.each([](S* x, Eigen::Index n) { std::fill(x, x + n, S(0)); });
  v_.each([](S* x, Eigen::Index n) { std::fill(x, x + n, S(0)); });
}

template <class S>
void AdamT<S>::step(Params<S>& p, Params<S>& g, double lr) {
  constexpr double b1 = 0.9, b2 = 0.999, eps = 1e-5;  // Stable-Baselines3's PPO uses eps 1e-5
  b1t_ *= b1;
  b2t_ *= b2;
  std::vector<S*> ps, gs, ms, vs;
  std::vector<Eigen::Index> ns;
  p.each([&](S* x, Eigen::Index n) {
    ps.push_back(x);
    ns.push_back(n);
  });
  g.each([&](S* x, Eigen::Index) { gs.push_back(x); });
  m_.each([&](S* x, Eigen::Index) { ms.push_back(x); });
  v_.each([&](S* x, Eigen::Index) { vs.push_back(x); });
  const S c1 = static_cast<S>(1.0 / (1 - b1t_)), c2 = static_cast<S>(1.0 / (1 - b2t_));
  const S sb1 = static_cast<S>(b1), sb2 = static_cast<S>(b2), slr = static_cast<S>(lr), seps = static_cast<S>(eps);
  using Arr = Eigen::Array<S, Eigen::Dynamic, 1>;
  for (std::size_t k = 0; k < ps.size(); ++k) {
    Eigen::Map<Arr> P(ps[k], ns[k]), G(gs[k], ns[k]), M(ms[k], ns[k]), V(vs[k], ns[k]);
    M = sb1 * M + (S(1) - sb1) * G;
    V = sb2 * V + (S(1) - sb2) * G.square();
    P -= slr * (M * c1) / ((V * c2).sqrt() + seps);
  }
}

template class PolicyT<float>;
template class PolicyT<double>;
template class AdamT<float>;
template class AdamT<double>;

}  // namespace shardwise::rl
