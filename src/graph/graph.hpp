// The fused-operator graph of one transformer layer, per layer class: named
// tensor dims, weights, FLOPs and bytes. It plays the role of the paper's 12
// fused ops: every op belongs to one sharding *slot*, and a plan chooses one
// named dimension per slot (the same choice in every layer, as in the paper).
// docs/cost-model.md lists the chain and the meaning of every choice.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/dtype.hpp"
#include "model/model_spec.hpp"

namespace shardwise {

enum class Slot : std::uint8_t {
  kEmbedding,   // vocab | none
  kAttnNorm,    // none | tokens   (tokens = sequence parallelism)
  kQkv,         // heads | hidden | none   (weight [hidden, (nh + 2 nkv) d]; MLA: its projections)
  kAttention,   // heads | context | none  (context: KV cache split along the sequence)
  kOProj,       // heads | hidden | none   (weight [nh d, hidden]; heads = row-parallel)
  kFfnNorm,     // none | tokens
  kFfn1,        // ffn | hidden | none     (dense MLP and shared experts: weight [hidden, ffn])
  kFfn2,        // ffn | hidden | none     (weight [ffn, hidden]; ffn = row-parallel)
  kRouter,      // none | tokens
  kExpertFfn1,  // ffn | tokens            (inside an expert-parallel group: split each expert, or split tokens)
  kExpertFfn2,  // ffn | tokens
  kLmHead,      // vocab | none
};
constexpr int kNumSlots = 12;
constexpr int kMaxChoices = 3;

struct SlotInfo {
  const char* name;
  int num_choices;
  std::array<const char*, kMaxChoices> choices;  // choice 0 is Megatron's
};
// The slots, their choices in order (the tables slot_info reads).
inline constexpr std::array<SlotInfo, kNumSlots> kSlotTable{{
    {"embedding", 2, {"vocab", "none", nullptr}},
    {"attn_norm", 2, {"none", "tokens", nullptr}},
    {"qkv_proj", 3, {"heads", "hidden", "none"}},
    {"attention", 3, {"heads", "context", "none"}},
    {"o_proj", 3, {"heads", "hidden", "none"}},
    {"ffn_norm", 2, {"none", "tokens", nullptr}},
    {"ffn1", 3, {"ffn", "hidden", "none"}},
    {"ffn2", 3, {"ffn", "hidden", "none"}},
    {"router", 2, {"none", "tokens", nullptr}},
    {"expert_ffn1", 2, {"ffn", "tokens", nullptr}},
    {"expert_ffn2", 2, {"ffn", "tokens", nullptr}},
    {"lm_head", 2, {"vocab", "none", nullptr}},
}};
inline const SlotInfo& slot_info(int slot) { return kSlotTable[static_cast<std::size_t>(slot)]; }
inline const SlotInfo& slot_info(Slot s) { return kSlotTable[static_cast<std::size_t>(s)]; }
// The index of a named choice in a slot, or -1.
int find_choice(int slot, const std::string& name);
// A slot's named choice resolved at compile time (an unknown name does not compile): the
// plan checks compare a choice by its index, not its name.
struct SlotChoice {
  Slot slot;
  int index;
  consteval SlotChoice(Slot s, std::string_view name) : slot(s), index(-1) {
    const SlotInfo& si = kSlotTable[static_cast<std::size_t>(s)];
    for (int i = 0; i < si.num_choices; ++i) {
      if (std::string_view(si.choices[static_cast<std::size_t>(i)]) == name) index = i;
    }
    if (index < 0) throw "no such choice in this slot";  // a compile error in a consteval call
  }
};

enum class Phase : std::uint8_t { kPrefill, kDecode };
const char* to_string(Phase p);

// The shapes of one layer class, phase-independent (the cost layer applies the phase).
struct LayerShape {
  bool moe = false;
  bool mla = false;
  bool rope = true;          // rotary embeddings on q and k (ModelSpec::rotary)
  std::int64_t window = 0;   // sliding window, 0 = full
  std::int64_t count = 0;    // layers of this class
  std::int64_t hidden = 0;
  // attention
  std::int64_t heads = 0, kv_heads = 0, d_qk = 0, d_v = 0;
  std::int64_t qkv_out = 0;          // output features of the q/k/v projection op
  double qkv_params = 0;             // head-split part of the projection weights
  double qkv_kv_params = 0;          // of which k and v (GQA) or the kv up-projection kv_b (MLA)
  double qkv_replicated_params = 0;  // MLA down-projections: not split by heads
  std::int64_t kv_elems_per_token = 0;  // KV cache elements per token (MLA: latent + rope key, shared by heads)
  std::int64_t mla_latent = 0, mla_rope = 0;
  double o_params = 0;
  // dense MLP (or shared experts on an MoE layer)
  std::int64_t ffn = 0;        // intermediate size (shared: num_shared x shared_ffn)
  int mlp_mats = 3;            // 3 gated, 2 plain
  double ffn1_params = 0, ffn2_params = 0;
  // MoE
  std::int64_t experts = 0, top_k = 0, expert_ffn = 0;
  double expert_ffn1_params = 0, expert_ffn2_params = 0;  // one expert
  double router_params = 0;
  double norm_params = 0;  // both norms of the layer
};

struct ModelGraph {
  std::vector<LayerShape> classes;      // one per LayerClass of the model
  std::vector<std::uint8_t> layer_class;  // per layer: index into classes
  // per class: the first class whose attention half (attn_norm .. ffn_norm) has the same
  // shape (same_attention), itself where none before it has: an evaluation costs a shared
  // attention once (DeepSeek-V3's dense and MoE layers). Empty: every class its own.
  std::vector<std::uint8_t> attention_twin;
  std::int64_t vocab = 0, hidden = 0;
  double embedding_params = 0, lm_head_params = 0;  // lm_head_params = 0 when tied (weights shared)
  double final_norm_params = 0;                      // on the last stage, beside the LM head
};
ModelGraph build_graph(const ModelSpec& m);
// Whether two layer classes have the same attention half: every field layer_time reads
// from attn_norm to ffn_norm (and layer_kv_bytes_per_seq), the MLP and MoE fields aside.
bool same_attention(const LayerShape& a, const LayerShape& b);
// Whether each slot has an op in this model: a dense model has no router or experts, an
// all-MoE model without shared experts no dense MLP. Unused slots change nothing.
std::array<bool, kNumSlots> slots_used(const ModelGraph& g);

// One fused op of the documented chain, unsharded, for a micro-batch of
// `tokens` new tokens each attending to `context` tokens.
struct OpInfo {
  std::string name;   // "qkv_proj", "shared_ffn1", "dispatch", ...
  int slot = -1;      // sharding slot, -1 for fixed ops (dispatch, combine)
  std::string weight_dims;  // "[hidden=4096, ffn=2x14336]"
  std::string output_dims;  // "[tokens, ffn]"
  double weight_params = 0;
  double flops = 0;
  double weight_bytes = 0, activation_bytes = 0;  // in + out activations; attention: + KV read
};
std::vector<OpInfo> describe_chain(const ModelGraph& g, int cls, Phase phase, std::int64_t tokens, std::int64_t context,
                                   DType weights, DType act);

}  // namespace shardwise
