// Hand-written gradients of the policy network against central finite
// differences in double precision: every parameter of every layer, for a linear
// loss and for a PPO-like loss through the softmax heads and the value.
#include "search/rl/policy.hpp"

#include <cmath>

#include <gtest/gtest.h>

namespace shardwise::rl {
namespace {
// the checks run in double precision; the search itself uses the float instantiation
using PolicyD = PolicyT<double>;
using MatD = Types<double>::Mat;
using VecD = Types<double>::Vec;
using RowVecD = Types<double>::RowVec;

PolicyDims small_dims() {
  PolicyDims d;
  d.input = 7;
  d.records = 3;
  d.model = 8;
  d.heads = 2;
  d.ffn = 6;
  d.hidden = 5;
  d.action_heads = {3, 4, 2};
  return d;
}

// Loss: sum_k w_k logits_k + wv value  (linear)  or
//       -sum_h log softmax_h(logits)[a_h] * adv + 0.5 (value - ret)^2  (PPO-like)
struct Loss {
  bool ppo = false;
  RowVecD w;
  double wv = 0.7;
  std::vector<int> actions{2, 1, 0};
  double adv = 1.3, ret = 0.4;
  double operator()(const PolicyD& p, const Cache<double>& c) const {
    if (!ppo) return (c.logits.array() * w.array()).sum() + wv * c.value;
    double l = 0.5 * (c.value - ret) * (c.value - ret);
    for (int h = 0; h < 3; ++h) l -= adv * std::log(p.head_probs(c.logits, h)(actions[static_cast<std::size_t>(h)]));
    return l;
  }
  void grads(const PolicyD& p, const Cache<double>& c, RowVecD& dl, double& dv) const {
    if (!ppo) {
      dl = w;
      dv = wv;
      return;
    }
    dl = RowVecD::Zero(c.logits.size());
    for (int h = 0; h < 3; ++h) {
      const VecD pr = p.head_probs(c.logits, h);
      for (Eigen::Index k = 0; k < pr.size(); ++k) {
        dl(p.head_offset(h) + k) = -adv * ((k == actions[static_cast<std::size_t>(h)] ? 1.0 : 0.0) - pr(k));
      }
    }
    dv = c.value - ret;
  }
};

void check_gradients(bool ppo) {
  Rng rng(ppo ? 2 : 1);
  PolicyD pol(small_dims(), rng);
  // non-trivial gains, biases and logits so that every path carries gradient
  pol.params().each([&](double* x, Eigen::Index n) {
    for (Eigen::Index i = 0; i < n; ++i) x[i] += 0.3 * (2 * rng.uniform() - 1);
  });
  MatD X(3, 7);
  for (Eigen::Index i = 0; i < X.size(); ++i) X.data()[i] = 2 * rng.uniform() - 1;
  Loss loss;
  loss.ppo = ppo;
  loss.w = RowVecD(pol.dims().logits());
  for (Eigen::Index i = 0; i < loss.w.size(); ++i) loss.w(i) = 2 * rng.uniform() - 1;
  Cache<double> c;
  pol.forward(X, c);
  RowVecD dl;
  double dv = 0;
  loss.grads(pol, c, dl, dv);
  Params<double> g = pol.zeros_like();
  pol.backward(c, dl, dv, g);
  std::vector<double*> gp;
  g.each([&](double* x, Eigen::Index) { gp.push_back(x); });
  const char* names[] = {"We", "Wq", "Wk", "Wv", "Wo", "W1", "W2", "Wh", "Wl", "Wvalue", "be", "bq", "bk", "bv", "bo", "b1",
                         "b2", "ln1.gain", "ln1.bias", "ln2.gain", "ln2.bias", "bh", "bl", "bvalue"};
  std::size_t block = 0;
  double worst_all = 0;
  pol.params().each([&](double* x, Eigen::Index n) {
    double worst = 0;
    for (Eigen::Index i = 0; i < n; ++i) {
      const double keep = x[i];
      const double h = 1e-5;
      Cache<double> cp, cm;
      x[i] = keep + h;
      pol.forward(X, cp);
      const double lp = loss(pol, cp);
      x[i] = keep - h;
      pol.forward(X, cm);
      const double lm = loss(pol, cm);
      x[i] = keep;
      const double numeric = (lp - lm) / (2 * h);
      const double analytic = gp[block][i];
      // Central differences with h = 1e-5 carry about 1e-11 of rounding noise, so entries whose
      // gradient is below 1e-6 (bk's is exactly 0: softmax ignores a shift shared by a row of
      // scores) are judged against that floor rather than against their own tiny size.
      const double rel = std::fabs(numeric - analytic) / std::max(1e-6, std::fabs(numeric) + std::fabs(analytic));
      worst = std::max(worst, rel);
    }
    EXPECT_LT(worst, 1e-4) << (ppo ? "ppo loss, " : "linear loss, ") << names[block];
    worst_all = std::max(worst_all, worst);
    ++block;
  });
  EXPECT_EQ(block, 24u);
  EXPECT_LT(worst_all, 1e-4);
}

TEST(PolicyGradients, EveryLayerMatchesFiniteDifferencesLinearLoss) { check_gradients(false); }
TEST(PolicyGradients, EveryLayerMatchesFiniteDifferencesPpoLoss) { check_gradients(true); }

TEST(Policy, FullSizeShapesAndUniformStart) {
  PolicyDims d = small_dims();
  d.input = 90;
  d.model = 256;
  d.heads = 4;
  d.ffn = 256;
  d.hidden = 256;
  Rng rng(3);
  PolicyD p(d, rng);
  Cache<double> c;
  p.forward(MatD::Zero(3, 90), c);
  EXPECT_EQ(c.logits.size(), 9);
  // the output layer starts small: every head close to uniform
  for (int h = 0; h < 3; ++h) {
    const VecD pr = p.head_probs(c.logits, h);
    EXPECT_NEAR(pr.maxCoeff(), 1.0 / static_cast<double>(pr.size()), 0.05);
  }
}

TEST(Policy, SaveLoadRoundTrip) {
  Rng rng(4);
  PolicyD p(small_dims(), rng);
  auto q = PolicyD::load(p.save(), "p.txt");
  ASSERT_TRUE(q.ok()) << q.error().message();
  MatD X = MatD::Constant(3, 7, 0.25);
  Cache<double> a, b;
  p.forward(X, a);
  q->forward(X, b);
  EXPECT_EQ(a.logits, b.logits);
  EXPECT_EQ(a.value, b.value);
  auto bad = PolicyD::load("something else", "p.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("expected a policy saved by shardwise"), std::string::npos);
  std::string cut = p.save();
  cut.resize(cut.size() / 2);
  EXPECT_FALSE(PolicyD::load(cut, "p.txt").ok());
}

TEST(Policy, SaveLoadKeepsLabelsAndReadsVersionOne) {
  PolicyDims d = small_dims();
  d.labels = {{"1", "2", "4"}, {"a", "b", "c", "d"}, {"x", "y"}};
  Rng rng(6);
  PolicyD p(d, rng);
  auto q = PolicyD::load(p.save(), "p.txt");
  ASSERT_TRUE(q.ok()) << q.error().message();
  EXPECT_EQ(q->dims().labels, d.labels);
  // a version-1 file (no labels line) still loads, without labels
  std::string v1 = PolicyD(small_dims(), rng).save();
  v1.replace(0, v1.find('\n'), "shardwise-policy/1");
  const auto header_end = v1.find('\n', v1.find('\n') + 1);
  v1.erase(header_end + 1, 2);  // the "0\n" labels flag
  auto old = PolicyD::load(v1, "old.txt");
  ASSERT_TRUE(old.ok()) << old.error().message();
  EXPECT_TRUE(old->dims().labels.empty());
  // a missing label is caught, and named
  std::string cut = p.save();
  cut.replace(cut.find("a b c d"), 7, "a b c");
  auto short_line = PolicyD::load(cut, "p.txt");
  ASSERT_FALSE(short_line.ok());
  EXPECT_NE(short_line.error().message().find("labels of action head 1"), std::string::npos) << short_line.error().message();
  // a damaged header asking for a huge network is refused before anything is allocated
  std::string huge = p.save();
  const auto line2 = huge.find('\n') + 1;
  huge.replace(line2, huge.find('\n', line2) - line2, "7 3 1000000000 2 6 5 3 3 4 2");
  auto refused = PolicyD::load(huge, "p.txt");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("dimensions"), std::string::npos) << refused.error().message();
}

// The agent's layout: one-hot per head, then value and presence (input = sum of heads + 2).
PolicyDims agent_dims(std::vector<std::vector<std::string>> labels) {
  PolicyDims d = small_dims();
  d.labels = std::move(labels);
  d.action_heads.clear();
  int a = 0;
  for (const auto& h : d.labels) {
    d.action_heads.push_back(static_cast<int>(h.size()));
    a += static_cast<int>(h.size());
  }
  d.input = a + 2;
  return d;
}

TEST(Policy, TransferCarriesKnownValuesByLabel) {
  // source space: tp {1,2,4}, a slot {a,b}; target: tp {1,4,8} (2 dropped, 8 new, 4 moved), slot {b,a} (reordered)
  const PolicyDims from = agent_dims({{"1", "2", "4"}, {"a", "b"}});
  const PolicyDims to = agent_dims({{"1", "4", "8"}, {"b", "a"}});
  Rng rng(7);
  PolicyD p(from, rng);
  // give the output layer some shape so that a wrong column would show
  for (Eigen::Index i = 0; i < p.params().Wl.size(); ++i) p.params().Wl.data()[i] = 0.1 * static_cast<double>(i % 7) - 0.3;
  for (Eigen::Index i = 0; i < p.params().bl.size(); ++i) p.params().bl(i) = 0.05 * static_cast<double>(i);
  Rng init(8);
  int matched = -1;
  auto q = p.transfer(to, init, &matched);
  ASSERT_TRUE(q.ok()) << q.error().message();
  EXPECT_EQ(matched, 4);  // tp 1, tp 4, slot a, slot b
  // the same records in both encodings: (tp 4, slot a, value .8, present), (tp 1, slot b, value 1, present)
  MatD X1 = MatD::Zero(3, from.input), X2 = MatD::Zero(3, to.input);
  X1(0, 2) = 1, X1(0, 3) = 1, X1(0, 5) = 0.8, X1(0, 6) = 1;  // from: tp at 0..2, slot at 3..4, then value, presence
  X2(0, 1) = 1, X2(0, 4) = 1, X2(0, 5) = 0.8, X2(0, 6) = 1;  // to: tp 4 is value 1, slot a is value 1 of the slot head
  X1(1, 0) = 1, X1(1, 4) = 1, X1(1, 5) = 1.0, X1(1, 6) = 1;
  X2(1, 0) = 1, X2(1, 3) = 1, X2(1, 5) = 1.0, X2(1, 6) = 1;
  Cache<double> a, b;
  p.forward(X1, a);
  q->forward(X2, b);
  EXPECT_NEAR(a.value, b.value, 1e-12);
  // logits: from (tp1 tp2 tp4 | a b) -> to (tp1 tp4 [tp8 new] | b a)
  EXPECT_NEAR(a.logits(0), b.logits(0), 1e-12);
  EXPECT_NEAR(a.logits(2), b.logits(1), 1e-12);
  EXPECT_NEAR(a.logits(4), b.logits(3), 1e-12);
  EXPECT_NEAR(a.logits(3), b.logits(4), 1e-12);
  // the new value keeps a fresh, small column: not a copy of any old one
  for (int k = 0; k < 3; ++k) EXPECT_GT(std::abs(b.logits(2) - a.logits(k)), 1e-6);
  // refused: no labels, other widths
  PolicyDims unlabeled = to;
  unlabeled.labels.clear();
  EXPECT_FALSE(p.transfer(unlabeled, init).ok());
  PolicyDims wider = to;
  wider.hidden = 7;
  auto refused = p.transfer(wider, init);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("hidden"), std::string::npos);
}

TEST(Adam, MinimisesAQuadratic) {
  Rng rng(5);
  PolicyD p(small_dims(), rng);
  AdamT<double> opt(p.params());
  // minimise 0.5 * value^2 on a fixed input: value must shrink towards 0
  MatD X = MatD::Constant(3, 7, 0.5);
  Cache<double> c;
  p.forward(X, c);
  const double start = std::fabs(c.value) + 1.0;
  p.params().bvalue += start;
  for (int i = 0; i < 300; ++i) {
    p.forward(X, c);
    Params<double> g = p.zeros_like();
    p.backward(c, RowVecD::Zero(p.dims().logits()), c.value, g);
    opt.step(p.params(), g, 1e-2);
  }
  p.forward(X, c);
  EXPECT_LT(std::fabs(c.value), 0.05);
}

TEST(Policy, ParamCountMatchesTheNetworkAndBoundsTheLoader) {
  // issue 16, defect 5: a damaged header made the loader allocate 3.6 GB before refusing.
  // param_count (what the header asks for) is checked against the file's size first.
  PolicyDims d;
  d.input = 7;
  d.model = 8;
  d.heads = 2;
  d.ffn = 6;
  d.hidden = 5;
  d.action_heads = {3, 4};
  Rng rng(1);
  Policy p(d, rng);
  Policy q = p;
  // 7x8 + 4x64 + 2x8x6 + 8x5 + 5x7 + 5 + 10x8 + 6 + 5 + 7 + 1 = 56+256+96+40+35+5+80+6+5+7+1 = 587
  EXPECT_EQ(param_count(d), 587);
  auto loaded = Policy::load(p.save(), "p.txt");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  // the same header over a file too short to hold its numbers: refused before allocating
  std::string text = p.save();
  text = text.substr(0, text.find('\n', text.find('\n', text.find('\n') + 1) + 1) + 1);  // header lines only
  auto shortfile = Policy::load(text + "1 2 3\n", "p.txt");
  ASSERT_FALSE(shortfile.ok());
  EXPECT_NE(shortfile.error().message().find("too short to hold them"), std::string::npos) << shortfile.error().message();
  (void)q;
}

TEST(Policy, AWeightThatOverflowsFloatIsRefused) {
  // issue 16, defect 8: 1e300 is a finite double but an infinite float
  PolicyDims d;
  d.input = 3;
  d.model = 2;
  d.heads = 1;
  d.ffn = 1;
  d.hidden = 1;
  d.records = 1;
  d.action_heads = {2};
  Rng rng(1);
  const Policy p(d, rng);
  std::string text = p.save();
  // replace the first parameter (the line after the header's three lines) with 1e300
  std::size_t at = 0;
  for (int i = 0; i < 3; ++i) at = text.find('\n', at) + 1;
  const std::size_t end = text.find(' ', at);
  text = text.substr(0, at) + "1e300" + text.substr(end);
  auto r = Policy::load(text, "p.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("parameter #1 = 1e+300, not finite"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace shardwise::rl
