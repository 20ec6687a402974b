#include "plan/plan.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/fields.hpp"
#include "core/int_math.hpp"

namespace shardwise {

Sharding paper_allgather_sharding() {
  Sharding s = megatron_sharding();
  s[static_cast<std::size_t>(Slot::kFfn2)] = 1;  // ffn2 on hidden
  return s;
}

namespace {
// the plan's choice in a slot is the named one (resolved at compile time: no string compares
// in the search's hot path)
bool is(const Plan& p, SlotChoice c) { return p.sharding[static_cast<std::size_t>(c.slot)] == c.index; }
}  // namespace

std::optional<std::string> validate_plan(const Plan& p, const ModelSpec& m, const ClusterSpec& c) {
  const Degrees& d = p.deg;
  if (d.tp < 1 || d.pp < 1 || d.ep < 1 || d.attn_dp < 1 || d.replicas < 1) return "every degree must be at least 1";
  for (int i = 0; i < kNumSlots; ++i) {
    if (p.sharding[static_cast<std::size_t>(i)] >= slot_info(i).num_choices) {
      return fmt::format("slot {} has no choice #{}", slot_info(i).name, p.sharding[static_cast<std::size_t>(i)]);
    }
  }
  if (d.pp > m.num_layers) return fmt::format("pp {} exceeds the {} layers (every stage needs one)", d.pp, m.num_layers);
  if (d.total_gpus() > c.num_gpus) {
    return fmt::format("the plan needs {} GPUs (tp {} x attn_dp {} x pp {} x replicas {}) but the cluster has {}", d.total_gpus(),
                       d.tp, d.attn_dp, d.pp, d.replicas, c.num_gpus);
  }
  const std::int64_t w = d.stage_width();
  if (!m.is_moe() && d.ep != 1) return fmt::format("ep {} on a dense model (it has no experts)", d.ep);
  if (p.redundant_experts < 0) return fmt::format("redundant_experts {} is negative", p.redundant_experts);
  if (!m.is_moe() && p.redundant_experts != 0) return fmt::format("redundant_experts {} on a dense model (it has no experts)", p.redundant_experts);
  if (p.redundant_experts > m.moe.num_experts) {
    return fmt::format("redundant_experts {} exceeds the {} routed experts (at most one copy each)", p.redundant_experts, m.moe.num_experts);
  }
  if (p.two_batch_overlap) {
    // the engines overlap the MoE all-to-all of data-parallel attention ranks (vLLM: DP + EP
    // with DeepEP; SGLang: DP attention with the DeepEP backend), one pipeline stage
    if (!m.is_moe()) return "two_batch_overlap on a dense model (it overlaps the MoE all-to-all; there is none)";
    if (d.attn_dp < 2 || d.ep < 2) {
      return fmt::format("two_batch_overlap needs attention data parallel and expert parallel (attn_dp {}, ep {}: "
                         "the engines overlap the all-to-all between them)",
                         d.attn_dp, d.ep);
    }
    if (d.pp > 1) return fmt::format("two_batch_overlap with pp {}: no engine combines it with pipeline stages", d.pp);
  }
  if (m.is_moe()) {
    if (!divides(d.ep, w)) return fmt::format("ep {} does not divide the stage width tp x attn_dp = {}", d.ep, w);
    const std::int64_t slots = m.moe.num_experts + p.redundant_experts;
    if (!divides(d.ep, slots)) {
      if (p.redundant_experts == 0) {
        return fmt::format("ep {} does not divide the {} experts (redundant experts can make up the difference: --redundant-experts {})",
                           d.ep, m.moe.num_experts, (d.ep - m.moe.num_experts % d.ep) % d.ep);
      }
      return fmt::format("ep {} does not divide the {} experts + {} redundant = {} slots", d.ep, m.moe.num_experts, p.redundant_experts, slots);
    }
    if (is(p, {Slot::kExpertFfn1, "ffn"}) || is(p, {Slot::kExpertFfn2, "ffn"})) {
      if (!divides(d.expert_tp(), m.moe.expert_ffn)) {
        return fmt::format("expert TP {} (= {} / ep {}) does not divide the expert intermediate size {}", d.expert_tp(), w, d.ep,
                           m.moe.expert_ffn);
      }
    }
  }
  const std::int64_t tp = d.tp;
  const bool mla = m.attention == AttentionKind::kMla;
  if (is(p, {Slot::kQkv, "heads"}) || is(p, {Slot::kAttention, "heads"}) || is(p, {Slot::kOProj, "heads"})) {
    if (!divides(tp, m.num_heads)) return fmt::format("tp {} does not divide the {} attention heads", tp, m.num_heads);
    if (!mla && !divides(tp, m.num_kv_heads) && !divides(m.num_kv_heads, tp)) {
      return fmt::format("tp {} neither divides nor is a multiple of the {} kv heads", tp, m.num_kv_heads);
    }
  }
  if (mla && is(p, {Slot::kQkv, "hidden"})) return "qkv_proj=hidden is not available for MLA attention (use heads or none)";
  if (!mla && is(p, {Slot::kQkv, "hidden"}) && is(p, {Slot::kAttention, "heads"}) && tp > m.num_kv_heads) {
    return fmt::format(
        "qkv_proj=hidden with attention=heads needs tp {} <= the {} kv heads (a reduce-scatter of partial sums cannot give "
        "several ranks the same replicated kv head; use qkv_proj=heads or none)",
        tp, m.num_kv_heads);
  }
  if ((is(p, {Slot::kQkv, "hidden"}) || is(p, {Slot::kOProj, "hidden"})) && !divides(tp, m.hidden)) {
    return fmt::format("tp {} does not divide the hidden size {}", tp, m.hidden);
  }
  // the MLP rules only concern plans that split an MLP (counting dense layers walks them all)
  const bool mlp_split = !is(p, {Slot::kFfn1, "none"}) || !is(p, {Slot::kFfn2, "none"});
  const bool any_dense = mlp_split && std::find(m.layer_is_moe.begin(), m.layer_is_moe.end(), false) != m.layer_is_moe.end();
  const std::int64_t dense_ffn = any_dense ? m.ffn : 0;
  const std::int64_t shared_ffn = m.moe.num_shared * m.moe.shared_ffn;
  for (std::int64_t f : {dense_ffn, shared_ffn}) {
    if (f == 0) continue;
    if ((is(p, {Slot::kFfn1, "ffn"}) || is(p, {Slot::kFfn2, "ffn"})) && !divides(w, f)) {
      return fmt::format("the MLP width {} (tp x attn_dp) does not divide the intermediate size {}", w, f);
    }
    if ((is(p, {Slot::kFfn1, "hidden"}) || is(p, {Slot::kFfn2, "hidden"})) && !divides(w, m.hidden)) {
      return fmt::format("the MLP width {} (tp x attn_dp) does not divide the hidden size {}", w, m.hidden);
    }
  }
  if (p.batch < 1) return "batch must be at least 1";
  if (p.batch < d.attn_dp) return fmt::format("batch {} leaves some of the {} attention-DP groups without a sequence", p.batch, d.attn_dp);
  if (p.micro_batches < 0 || p.micro_batches > p.batch) {
    return fmt::format("micro_batches {} must lie between 0 (automatic) and the batch {}", p.micro_batches, p.batch);
  }
  return std::nullopt;
}

std::string sharding_to_string(const Sharding& s) {
  std::string out;
  for (int i = 0; i < kNumSlots; ++i) {
    const auto c = s[static_cast<std::size_t>(i)];
    if (c == 0) continue;
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", slot_info(i).name, slot_info(i).choices[c]);
  }
  return out.empty() ? "megatron" : out;
}

Expected<Sharding> parse_sharding(std::string_view text, const std::string& file) {
  auto doc = parse_yaml_text(text, file);  // JSON is valid YAML
  if (!doc) return doc.error();
  ErrorSink sink;
  const FieldReader r = root_reader(*doc, file, sink);
  if (sink.failed()) return *sink.first;
  Sharding s = megatron_sharding();
  for (const auto& [key, value] : doc->items()) {
    int slot = -1;
    std::string slots;
    for (int i = 0; i < kNumSlots; ++i) {
      if (key == slot_info(i).name) slot = i;
      slots += (i ? ", " : "") + std::string(slot_info(i).name);
    }
    if (slot < 0) return Error{file, key, "a fused-op slot (" + slots + ")", "an unknown slot"};
    std::string choices;
    for (int k = 0; k < slot_info(slot).num_choices; ++k) choices += (k ? ", " : "") + std::string(slot_info(slot).choices[static_cast<std::size_t>(k)]);
    const int c = value.is_string() ? find_choice(slot, value.get<std::string>()) : -1;
    if (c < 0) return Error{file, key, "one of " + choices, describe_value(value)};
    s[static_cast<std::size_t>(slot)] = static_cast<std::uint8_t>(c);
  }
  return s;
}

Sharding dp_mlp_sharding() {
  Sharding s = megatron_sharding();
  s[static_cast<std::size_t>(Slot::kFfn1)] = static_cast<std::uint8_t>(find_choice(static_cast<int>(Slot::kFfn1), "none"));
  s[static_cast<std::size_t>(Slot::kFfn2)] = static_cast<std::uint8_t>(find_choice(static_cast<int>(Slot::kFfn2), "none"));
  return s;
}

Expected<Sharding> load_sharding(const std::string& name_or_path) {
  if (name_or_path == "megatron") return megatron_sharding();
  if (name_or_path == "allgather") return paper_allgather_sharding();
  if (name_or_path == "dp-mlp") return dp_mlp_sharding();
  std::error_code ec;
  if (!std::filesystem::exists(name_or_path, ec) || std::filesystem::is_directory(name_or_path, ec)) {
    return Error{"--sharding", "", "megatron, allgather, dp-mlp, or the path of a sharding YAML/JSON file", "'" + name_or_path + "'"};
  }
  auto text = read_text_file(name_or_path);
  if (!text) return text.error();
  return parse_sharding(*text, name_or_path);
}

Sharding canonical_sharding(const Sharding& s, const ModelGraph& g) {
  Sharding out = s;
  const auto used = slots_used(g);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!used[i]) out[i] = 0;
  }
  return out;
}

}  // namespace shardwise
