// What each serving engine can run (cost/engine_limits.hpp).
#include "cost/engine_limits.hpp"

#include <fmt/format.h>

namespace shardwise {

std::optional<ServeEngine> parse_serve_engine(const std::string& name) {
  if (name == "vllm") return ServeEngine::kVllm;
  if (name == "sglang") return ServeEngine::kSglang;
  if (name == "trtllm") return ServeEngine::kTrtllm;
  return std::nullopt;
}

const char* to_string(ServeEngine e) {
  switch (e) {
    case ServeEngine::kVllm: return "vllm";
    case ServeEngine::kSglang: return "sglang";
    case ServeEngine::kTrtllm: return "trtllm";
  }
  return "?";
}

namespace {
int slot_choice(Slot s, const char* name) { return find_choice(static_cast<int>(s), name); }

Sharding dense_dp(Sharding s) {
  s[static_cast<std::size_t>(Slot::kFfn1)] = static_cast<std::uint8_t>(slot_choice(Slot::kFfn1, "none"));
  s[static_cast<std::size_t>(Slot::kFfn2)] = static_cast<std::uint8_t>(slot_choice(Slot::kFfn2, "none"));
  return s;
}
}  // namespace

bool dense_mlp_data_parallel(const Plan& p) {
  return attention_dp(p.deg) && p.sharding[static_cast<std::size_t>(Slot::kFfn1)] == slot_choice(Slot::kFfn1, "none") &&
         p.sharding[static_cast<std::size_t>(Slot::kFfn2)] == slot_choice(Slot::kFfn2, "none");
}

std::vector<Sharding> engine_shardings(ServeEngine e, const SimContext& ctx, const Degrees& d) {
  if (!attention_dp(d)) return {megatron_sharding()};
  switch (e) {
    case ServeEngine::kVllm:
    case ServeEngine::kTrtllm: {
      // vLLM's DP ranks and TensorRT-LLM's attention-DP ranks hold every dense weight and
      // run the dense MLPs (and shared experts) on their own tokens; so do embedding and LM head
      Sharding s = dense_dp(megatron_sharding());
      s[static_cast<std::size_t>(Slot::kEmbedding)] = static_cast<std::uint8_t>(slot_choice(Slot::kEmbedding, "none"));
      s[static_cast<std::size_t>(Slot::kLmHead)] = static_cast<std::uint8_t>(slot_choice(Slot::kLmHead, "none"));
      return {s};
    }
    case ServeEngine::kSglang:
      // dense MLPs with TP over all ranks by default; fully data-parallel with --moe-dense-tp-size 1
      // (MoE models; with an attention TP of 1, where each rank holds its own tokens)
      if (ctx.model.is_moe() && d.tp == 1) return {megatron_sharding(), dense_dp(megatron_sharding())};
      return {megatron_sharding()};
  }
  return {megatron_sharding()};
}

std::vector<std::string> engine_limits(ServeEngine e, const SimContext& ctx, const Plan& p) {
  std::vector<std::string> why;
  const Degrees& d = p.deg;
  const std::int64_t w = d.stage_width();
  const bool moe = ctx.model.is_moe();
  switch (e) {
    case ServeEngine::kVllm:
      if (attention_dp(d) && !moe) {
        why.push_back(fmt::format("attention data parallelism (attn_dp {}) on a dense model: vLLM's data-parallel ranks of a dense "
                                  "model are independent replicas with no shared MLP",
                                  d.attn_dp));
      } else if (attention_dp(d) && d.tp > 1) {
        why.push_back(fmt::format("tp {} inside attn_dp {} groups: vLLM runs the dense layers inside each data-parallel rank's TP group, "
                                  "a layout shardwise does not model; it models vLLM's tp x 1 and 1 x dp",
                                  d.tp, d.attn_dp));
      }
      if (moe && d.ep != 1 && d.ep != w) {
        why.push_back(fmt::format("ep {} of {} ranks: vLLM's experts are either split over all tp x dp ranks "
                                  "(--enable-expert-parallel, ep {}) or tensor-parallel over them (ep 1)",
                                  d.ep, w, w));
      }
      break;
    case ServeEngine::kSglang:
      break;  // --tp-size W --dp-size attn_dp --enable-dp-attention --ep-size ep --pp-size pp express every degree
    case ServeEngine::kTrtllm:
      if (p.two_batch_overlap) {
        why.push_back("two-batch overlap: shardwise knows no TensorRT-LLM setting that runs each step as two micro-batches with "
                      "the all-to-all of one beside the other's compute (vLLM --enable-dbo, SGLang --enable-two-batch-overlap)");
      }
      if (attention_dp(d) && d.tp > 1) {
        why.push_back(fmt::format("tp {} x attn_dp {}: TensorRT-LLM's attention DP (enable_attention_dp) runs attention with TP 1 on "
                                  "each of the tp_size ranks; attention TP and attention DP do not combine",
                                  d.tp, d.attn_dp));
      }
      break;
  }
  return why;
}

}  // namespace shardwise
