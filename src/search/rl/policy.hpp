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

using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;
using RowVec = Eigen::RowVectorXd;

struct PolicyDims {
  int input = 0;      // A: features of one elite record
  int records = 3;    // T
  int model = 256;    // d
  int heads = 4;      // attention heads (d / heads per head)
  int ffn = 256;      // encoder feed-forward width
  int hidden = 256;   // MLP width before the heads
  std::vector<int> action_heads;  // categories of each sub-action head
  [[nodiscard]] int logits() const;
};

// All parameters; `each` visits them in a fixed order (Adam, save/load, gradient checks).
struct Params {
  Mat We, Wq, Wk, Wv, Wo, W1, W2, Wh, Wl, Wvalue;
  RowVec be, bq, bk, bv, bo, b1, b2, g1, beta1, g2, beta2, bh, bl;
  double bvalue = 0;
  template <class F>
  void each(F&& f) {
    for (Mat* m : {&We, &Wq, &Wk, &Wv, &Wo, &W1, &W2, &Wh, &Wl, &Wvalue}) f(m->data(), m->size());
    for (RowVec* v : {&be, &bq, &bk, &bv, &bo, &b1, &b2, &g1, &beta1, &g2, &beta2, &bh, &bl}) f(v->data(), v->size());
    f(&bvalue, 1);
  }
  [[nodiscard]] std::size_t count();
};

// Everything the backward pass needs from one forward pass.
struct Cache {
  Mat X, E, Q, K, V, attn_cat, O, Y1, Yhat, Y, A1, R1, F, Z1, Zhat, Z;
  std::vector<Mat> P;  // attention probabilities per head (T x T)
  RowVec mu1, inv1, mu2, inv2;  // layer-norm statistics per record (as rows)
  RowVec pooled, Hpre, H, logits;
  double value = 0;
};

class Policy {
 public:
  Policy(const PolicyDims& dims, Rng& rng);  // Xavier-uniform weights, zero biases, unit gains
  [[nodiscard]] const PolicyDims& dims() const { return dims_; }
  Params& params() { return p_; }
  const Params& params() const { return p_; }
  // Forward pass for one observation (T x A); fills the cache.
  void forward(const Mat& X, Cache& c) const;
  // Backward pass: gradients of a loss with respect to the logits and the value,
  // accumulated into `grad` (same shapes as the parameters).
  void backward(const Cache& c, const RowVec& dlogits, double dvalue, Params& grad) const;
  [[nodiscard]] Params zeros_like() const;
  // Softmax probabilities of head h from a logits row.
  [[nodiscard]] Vec head_probs(const RowVec& logits, int head) const;
  [[nodiscard]] int head_offset(int head) const { return offsets_[static_cast<std::size_t>(head)]; }
  std::string save() const;                                   // text: dims then every parameter
  static Expected<Policy> load(const std::string& text, const std::string& file);

 private:
  PolicyDims dims_;
  Params p_;
  std::vector<int> offsets_;
};

// Adam with bias correction (lr set per step by the caller).
class Adam {
 public:
  explicit Adam(Params& like);
  void step(Params& p, Params& g, double lr);

 private:
  Params m_, v_;
  double b1t_ = 1, b2t_ = 1;
};

}  // namespace shardwise::rl
