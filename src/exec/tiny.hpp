// The executor's case: a model scaled down to a few thousand parameters that keeps
// the operator structure of the original (GQA/MLA, dense/MoE layers, shared
// experts, sliding windows, gated MLP) and every divisibility a plan needs, the
// plan on it, random weights seeded by tensor name, and the token ids of a run.
// MPI-free: the single-rank reference, the expected ledger and the CLI use it.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "core/error.hpp"
#include "hardware/cluster.hpp"
#include "model/model_spec.hpp"
#include "plan/plan.hpp"
#include "workload/workload.hpp"

namespace shardwise::exec {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vec = Eigen::VectorXd;

constexpr std::int64_t kMaxRanks = 16;

struct Case {
  ModelSpec model;            // the scaled model
  Plan plan;                  // on the scaled model: batch b, replicas 1
  std::int64_t isl = 0;       // prompt tokens per sequence
  std::int32_t decode_steps = 2;
  std::int32_t m = 1;         // micro-batches, resolved as the simulator resolves them
  std::uint64_t seed = 1;
  [[nodiscard]] std::int64_t ranks() const { return plan.deg.instance_gpus(); }
  [[nodiscard]] std::int64_t seqs_per_group() const { return plan.batch / plan.deg.attn_dp; }  // bg
  [[nodiscard]] std::int64_t seqs_per_micro() const { return seqs_per_group() / m; }          // per group and micro-batch
};

// Scales `original` down for `plan` (its degrees and sharding; batch and
// micro-batches are chosen here unless the plan fixes micro_batches). The error
// names the rule that cannot be kept. Rules are in docs/exec.md.
Expected<Case> scale_case(const ModelSpec& original, const Plan& plan, std::uint64_t seed, std::int32_t decode_steps = 2);

// The flat cluster the bytes are checked on: gb200 x ranks (one NVLink level).
ClusterSpec exec_cluster(std::int64_t ranks);
// The workload of a case (decode at context isl; bf16 weights, activations and KV).
Workload exec_workload(const Case& c, Mode mode);

// One-line description of the scaled shapes, for messages.
std::string describe_case(const Case& c);

// --- weights ------------------------------------------------------------------
// Every tensor is drawn whole from an Rng seeded by (seed, name), so a rank's
// slice does not depend on the layout. Matrices are [in, out] (y = x W).
struct Weights {
  std::map<std::string, Mat> mats;
  std::map<std::string, Vec> vecs;
  [[nodiscard]] const Mat& m(const std::string& name) const;
  [[nodiscard]] const Vec& v(const std::string& name) const;
};
Weights make_weights(const Case& c);

// The part of `full` that rank `rank` of the case's instance holds under its plan, NaN
// elsewhere (tensors of other stages' layers are left out), as the simulator counts weights
// (docs/exec.md); `bytes` receives what it holds at 2 bytes per element.
Weights held_weights(const Case& c, const Weights& full, std::int64_t rank, double* bytes);

// Names: "L<i>.<tensor>" per layer; "embed", "final_norm", "lm_head".
std::string lname(std::int64_t layer, const char* tensor);

// Per-layer facts of the scaled model.
struct LayerFacts {
  bool moe = false;
  std::int64_t window = 0;
  std::int64_t mlp = 0;  // dense MLP width (or the shared experts' total width on an MoE layer); 0 = none
};
LayerFacts layer_facts(const ModelSpec& m, std::int64_t layer);

// --- inputs -----------------------------------------------------------------
struct Inputs {
  std::vector<std::vector<std::int64_t>> prompt;  // [sequence][position]
  std::vector<std::vector<std::int64_t>> decode;  // [step][sequence]
};
Inputs make_inputs(const Case& c);

// Logits of the last prompt token (step 0) and of each decode step (1..), per sequence.
using Logits = std::map<std::pair<std::int64_t, std::int32_t>, std::vector<double>>;  // (sequence, step) -> [vocab]

// --- deterministic balanced routing ---------------------------------------------
// The index of a token in its micro-batch's stage tensor (attention groups first,
// then sequences, then positions): both the reference and the executor route
// copy j of token t to expert (t k + j) mod E. Gates: softmax of the router
// logits over the chosen experts.
std::int64_t stage_token_index(const Case& c, bool prefill, std::int64_t seq, std::int64_t pos);
inline std::int64_t routed_expert(std::int64_t t, std::int64_t j, std::int64_t k, std::int64_t experts) {
  return (t * k + j) % experts;
}

// --- shared kernels ------------------------------------------------------------
void rms_norm_rows(Mat& x, const Vec& gain);       // in place, per row
double silu(double x);
double gelu(double x);
// The MLP activation on [rows, up*f] pre-activations laid out (gate block, up block)
// of `f` columns each (gated) or [rows, f] (plain): returns [rows, f].
Mat mlp_activate(const Mat& pre, bool gated, std::int64_t f);

}  // namespace shardwise::exec
