// The policy network of "Learning to Shard", on Eigen with hand-written
// reverse-mode gradients (no autograd, no libtorch):
//   X (T x A elite records) -> linear embedding A -> d
//   -> one Transformer encoder block, post-norm as PyTorch's default:
//        Y = LN1(E + MHA(E)),  Z = LN2(Y + W2 relu(W1 Y))
//   -> mean over the T records -> h = relu(Wh pooled) -> logits of every head, value.
// Every layer's backward is checked against finite differences in the tests.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace shardwise::rl {

// The network is templated on its scalar: float in the search (speed), double in
// the gradient checks (precision).
template <class S>
struct Types {
  using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
  using Vec = Eigen::Matrix<S, Eigen::Dynamic, 1>;
  using RowVec = Eigen::Matrix<S, 1, Eigen::Dynamic>;
};

struct PolicyDims {
  int input = 0;      // A: features of one elite record
  int records = 3;    // T
  int model = 256;    // d
  int heads = 4;      // attention heads (d / heads per head)
  int ffn = 256;      // encoder feed-forward width
  int hidden = 256;   // MLP width before the heads
  std::vector<int> action_heads;  // categories of each sub-action head
  // Optional: what each head's values mean ("4" for a degree, "heads" for a slot), one
  // list per head. With them a policy can be carried to a space whose heads hold other
  // values (PolicyT::transfer); without them (empty) only to the same dimensions.
  std::vector<std::vector<std::string>> labels;
  [[nodiscard]] int logits() const;
};

// The number of parameters of a network of these dimensions (checked against Params::count).
std::int64_t param_count(const PolicyDims& dims);

// All parameters; `each` visits them in a fixed order (Adam, save/load, gradient checks).
template <class S>
struct Params {
  using Mat = typename Types<S>::Mat;
  using RowVec = typename Types<S>::RowVec;
  Mat We, Wq, Wk, Wv, Wo, W1, W2, Wh, Wl, Wvalue;
  RowVec be, bq, bk, bv, bo, b1, b2, g1, beta1, g2, beta2, bh, bl;
  S bvalue = 0;
  template <class F>
  void each(F&& f) {
    for (Mat* m : {&We, &Wq, &Wk, &Wv, &Wo, &W1, &W2, &Wh, &Wl, &Wvalue}) f(m->data(), m->size());
    for (RowVec* v : {&be, &bq, &bk, &bv, &bo, &b1, &b2, &g1, &beta1, &g2, &beta2, &bh, &bl}) f(v->data(), v->size());
    f(&bvalue, 1);
  }
  [[nodiscard]] std::size_t count() {
    std::size_t n = 0;
    each([&](S*, Eigen::Index s) { n += static_cast<std::size_t>(s); });
    return n;
  }
};

// Everything the backward pass needs from one forward pass.
template <class S>
struct Cache {
  using Mat = typename Types<S>::Mat;
  using RowVec = typename Types<S>::RowVec;
  Mat X, E, Q, K, V, attn_cat, O, Y1, Yhat, Y, A1, R1, F, Z1, Zhat, Z;
  std::vector<Mat> P;  // attention probabilities per head (T x T)
  RowVec mu1, inv1, mu2, inv2;  // layer-norm statistics per record (as rows)
  RowVec pooled, Hpre, H, logits;
  S value = 0;
};

template <class S>
class PolicyT {
 public:
  using Mat = typename Types<S>::Mat;
  using Vec = typename Types<S>::Vec;
  using RowVec = typename Types<S>::RowVec;
  PolicyT(const PolicyDims& dims, Rng& rng);  // Xavier-uniform weights, zero biases, unit gains
  [[nodiscard]] const PolicyDims& dims() const { return dims_; }
  Params<S>& params() { return p_; }
  const Params<S>& params() const { return p_; }
  // Forward pass for one observation (T x A); fills the cache.
  void forward(const Mat& X, Cache<S>& c) const;
  // Backward pass: gradients of a loss with respect to the logits and the value,
  // accumulated into `grad` (same shapes as the parameters).
  void backward(const Cache<S>& c, const RowVec& dlogits, S dvalue, Params<S>& grad) const;
  [[nodiscard]] Params<S> zeros_like() const;
  // Softmax probabilities of head h from a logits row.
  [[nodiscard]] Vec head_probs(const RowVec& logits, int head) const;
  [[nodiscard]] int head_offset(int head) const { return offsets_[static_cast<std::size_t>(head)]; }
  std::string save() const;                                   // text: dims, labels, then every parameter
  static Expected<PolicyT> load(const std::string& text, const std::string& file);
  // This network carried to a space with other action values, matched by label: the
  // trunk (encoder, MLP, value head) is copied; each value of `to` whose (head, label)
  // this network knows gets its embedding row and its output column; values it does not
  // know keep a fresh initialisation from `rng`. Requires the agent's record layout
  // (input = one-hot of every head + 2) and labels on both sides, and the same widths.
  // `matched` (optional) receives how many of `to`'s values were carried over.
  [[nodiscard]] Expected<PolicyT> transfer(const PolicyDims& to, Rng& rng, int* matched = nullptr) const;
  // Names the values of an unlabelled network (a shardwise-policy/1 file used on a space
  // of the same sizes), so that saving it again writes them. One label per value.
  void set_labels(std::vector<std::vector<std::string>> labels);

 private:
  PolicyDims dims_;
  Params<S> p_;
  std::vector<int> offsets_;
};

// Adam with bias correction (lr set per step by the caller).
template <class S>
class AdamT {
 public:
  explicit AdamT(Params<S>& like);
  void step(Params<S>& p, Params<S>& g, double lr);

 private:
  Params<S> m_, v_;
  double b1t_ = 1, b2t_ = 1;
};

using Policy = PolicyT<float>;  // what the search uses
using Adam = AdamT<float>;
using Mat = Types<float>::Mat;
using RowVec = Types<float>::RowVec;
using Vec = Types<float>::Vec;

}  // namespace shardwise::rl
