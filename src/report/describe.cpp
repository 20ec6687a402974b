#include "report/describe.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "graph/graph.hpp"
#include "model/derived.hpp"
#include "report/format.hpp"

namespace shardwise {
namespace {
// The weights in the formats the model is planned in: component by component when the
// options carry them (a checkpoint's mixed formats), else all in the one weights dtype.
Bytes described_weight_bytes(const ModelSpec& m, const DescribeOptions& o) {
  if (!o.formats) return weight_bytes(m, o.weights_dtype);
  const ParamBreakdown& t = count_params(m).total;
  const Formats& f = *o.formats;
  const auto b = [&](DType d) { return weight_bytes(d, f); };  // block scales counted
  return Bytes(static_cast<double>(t.attention) * b(f.attention) + static_cast<double>(t.dense_mlp + t.shared_experts) * b(f.dense) +
               static_cast<double>(t.routed_experts) * b(f.experts) +
               static_cast<double>(t.embedding + t.router + t.norms + t.lm_head) * b(f.other));
}

using nlohmann::json;

json breakdown_json(const ParamBreakdown& b) {
  return json{{"embedding", b.embedding},         {"attention", b.attention}, {"dense_mlp", b.dense_mlp},
              {"routed_experts", b.routed_experts}, {"shared_experts", b.shared_experts}, {"router", b.router},
              {"norms", b.norms},                 {"lm_head", b.lm_head},     {"total", b.total()}};
}

json model_json(const ModelSpec& m, const DescribeOptions& o) {
  const ParamCounts p = count_params(m);
  const KvCacheBytes kv = kv_cache_bytes(m, o.kv_dtype);
  json j;
  j["name"] = m.name;
  j["architecture"] = m.architecture;
  j["source"] = m.source;
  j["hidden_size"] = m.hidden;
  j["num_layers"] = m.num_layers;
  j["num_dense_layers"] = m.num_dense_layers();
  j["num_moe_layers"] = m.num_moe_layers();
  j["vocab_size"] = m.vocab;
  j["attention"] = {{"kind", to_string(m.attention)}, {"num_heads", m.num_heads}, {"num_kv_heads", m.num_kv_heads},
                    {"head_dim", m.head_dim}};
  if (m.attention == AttentionKind::kMla) {
    j["attention"]["q_lora_rank"] = m.mla.q_lora_rank;
    j["attention"]["kv_lora_rank"] = m.mla.kv_lora_rank;
    j["attention"]["qk_nope_head_dim"] = m.mla.qk_nope_head_dim;
    j["attention"]["qk_rope_head_dim"] = m.mla.qk_rope_head_dim;
    j["attention"]["v_head_dim"] = m.mla.v_head_dim;
  }
  if (m.is_moe()) {
    j["moe"] = {{"num_experts", m.moe.num_experts}, {"top_k", m.moe.top_k}, {"expert_ffn", m.moe.expert_ffn},
                {"num_shared_experts", m.moe.num_shared}, {"shared_ffn", m.moe.shared_ffn}};
  }
  j["ffn"] = m.ffn;
  j["num_mtp_layers_excluded"] = m.num_mtp_layers;
  json classes = json::array();
  for (const auto& c : m.layer_classes()) {
    classes.push_back({{"kind", c.moe ? "moe" : "dense"}, {"sliding_window", c.window}, {"count", c.count}});
  }
  j["layer_classes"] = classes;
  j["params_total"] = p.total.total();
  j["params_vision"] = m.vision_params;
  j["params_active"] = p.active.total();
  // the count most MoE vendors publish (DeepSeek, Moonshot, OpenAI): the input embedding is a
  // lookup, so it is left out of "active"; an embedding tied to the head stays (the head reads it)
  j["params_active_without_input_embedding"] = p.active.total() - (p.active.lm_head > 0 ? p.active.embedding : 0);
  j["params_breakdown"] = {{"total", breakdown_json(p.total)}, {"active", breakdown_json(p.active)}};
  j["kv_dtype"] = to_string(o.kv_dtype);
  j["kv_bytes_per_token"] = kv.per_token_all_layers().value();
  j["kv_bytes_per_token_by_dtype"] = {{"bf16", kv_cache_bytes(m, DType::kBf16).per_token_all_layers().value()},
                                      {"fp8", kv_cache_bytes(m, DType::kFp8).per_token_all_layers().value()}};
  j["weights_dtype"] = to_string(o.weights_dtype);
  j["weight_bytes"] = described_weight_bytes(m, o).value();
  if (!m.quant.method.empty()) j["checkpoint_quantization"] = m.quant.method;
  j["weight_bytes_by_dtype"] = {{"bf16", weight_bytes(m, DType::kBf16).value()}, {"fp8", weight_bytes(m, DType::kFp8).value()}};
  json per_ctx = json::array();
  for (std::int64_t c : o.contexts) {
    const FlopsPerToken f = flops_per_token(m, c);
    per_ctx.push_back({{"context", c}, {"flops_per_token", f.total().value()}, {"matmul_flops", f.matmul.value()},
                       {"attention_flops", f.attention.value()}, {"kv_bytes_per_sequence", kv.for_context(c).value()}});
  }
  j["per_context"] = per_ctx;
  return j;
}

json cluster_json(const ClusterSpec& c) {
  json levels = json::array();
  for (const auto& l : c.levels) {
    levels.push_back({{"name", l.name}, {"size", l.size}, {"bandwidth_bytes_per_s", l.bandwidth.value()},
                      {"latency_s", l.latency.value()}});
  }
  const GpuSpec& g = c.gpu;
  return json{{"name", c.name},
              {"num_gpus", c.num_gpus},
              {"gpus_per_node", c.gpus_per_node},
              {"num_nodes", c.num_nodes()},
              {"gpu",
               {{"name", g.name},
                {"bf16_flops", g.bf16.value()},
                {"fp8_flops", g.fp8.value()},
                {"fp4_flops", g.fp4.value()},
                {"hbm_bytes", g.hbm_capacity.value()},
                {"hbm_bandwidth_bytes_per_s", g.hbm_bandwidth.value()}}},
              {"levels", levels}};
}

json workload_json(const Workload& w) {
  json j{{"name", w.name},
         {"mode", to_string(w.mode)},
         {"isl", w.isl},
         {"osl", w.osl},
         {"context", w.context},
         {"weights_dtype", w.weights_dtype ? to_string(*w.weights_dtype) : "auto"},
         {"kv_dtype", w.kv_dtype ? to_string(*w.kv_dtype) : "auto"}};
  j["batch"] = w.batch ? json(*w.batch) : json("max");
  j["ttft_ms"] = w.ttft_ms ? json(*w.ttft_ms) : json(nullptr);
  j["tpot_ms"] = w.tpot_ms ? json(*w.tpot_ms) : json(nullptr);
  return j;
}
}  // namespace

std::string describe_model_json(const ModelSpec& m, const DescribeOptions& o) { return model_json(m, o).dump(2); }
std::string describe_cluster_json(const ClusterSpec& c) { return cluster_json(c).dump(2); }
std::string describe_workload_json(const Workload& w) { return workload_json(w).dump(2); }

std::string describe_json(const ModelSpec* m, const ClusterSpec* c, const Workload* w, const DescribeOptions& o) {
  json j = json::object();
  if (m) j["model"] = model_json(*m, o);
  if (c) j["cluster"] = cluster_json(*c);
  if (w) j["workload"] = workload_json(*w);
  // A lone model keeps the flat keys scripts expect (params_total, ...).
  if (m && !c && !w) return j["model"].dump(2);
  return j.dump(2);
}

std::string describe_model_text(const ModelSpec& m, const DescribeOptions& o) {
  const ParamCounts p = count_params(m);
  const KvCacheBytes kv = kv_cache_bytes(m, o.kv_dtype);
  std::string s;
  s += fmt::format("model        {} ({}; {})\n", m.name, m.architecture, m.source);
  s += fmt::format("shape        hidden {}, vocab {}, {} layers", m.hidden, grouped(m.vocab), m.num_layers);
  if (m.num_mtp_layers > 0) s += fmt::format(" (+{} next-token-prediction module excluded)", m.num_mtp_layers);
  s += "\n";
  std::string layers;
  for (const auto& c : m.layer_classes()) {
    if (!layers.empty()) layers += ", ";
    layers += fmt::format("{} {}", c.count, c.moe ? "MoE" : "dense");
    if (c.window > 0) layers += fmt::format(" (sliding window {})", c.window);
  }
  s += fmt::format("layers       {}\n", layers);
  if (m.attention == AttentionKind::kMla) {
    s += fmt::format("attention    MLA, {} heads; q_lora {}, kv_lora {}, qk nope {} + rope {}, v {}\n", m.num_heads,
                     m.mla.q_lora_rank, m.mla.kv_lora_rank, m.mla.qk_nope_head_dim, m.mla.qk_rope_head_dim, m.mla.v_head_dim);
  } else {
    s += fmt::format("attention    {} heads x {}, {} kv heads{}{}{}\n", m.num_heads, m.head_dim, m.num_kv_heads,
                     m.qk_norm ? ", q/k norm" : "", m.attention_sinks ? ", sinks" : "", m.qkv_bias ? ", qkv bias" : "");
  }
  if (m.num_dense_layers() > 0) s += fmt::format("dense mlp    intermediate {}{}\n", m.ffn, m.mlp_gated ? " (gated)" : "");
  if (m.is_moe()) {
    s += fmt::format("moe          {} experts, top-{}, expert intermediate {}", m.moe.num_experts, m.moe.top_k, m.moe.expert_ffn);
    if (m.moe.num_shared > 0) s += fmt::format(", {} shared of {}", m.moe.num_shared, m.moe.shared_ffn);
    s += "\n";
  }
  s += fmt::format("parameters   total {} ({}), active per token {} ({})\n", si_count(static_cast<double>(p.total.total())),
                   grouped(p.total.total()), si_count(static_cast<double>(p.active.total())), grouped(p.active.total()));
  if (m.is_moe() && p.active.lm_head > 0) {
    // vendors differ: DeepSeek, Moonshot and OpenAI publish the active count without the input
    // embedding (a lookup), Meta's Llama-4 "17B" includes it
    const std::int64_t without = p.active.total() - p.active.embedding;
    s += fmt::format("             active without the input embedding {} ({}): the convention DeepSeek's, Moonshot's and OpenAI's published counts match\n",
                     si_count(static_cast<double>(without)), grouped(without));
  }
  if (m.vision_params > 0) {
    s += fmt::format("vision       encoder and projector about {} more (loaded by the engines; not in text serving's cost)\n",
                     si_count(static_cast<double>(m.vision_params)));
  }
  const auto row = [&](const char* name, std::int64_t t, std::int64_t a) {
    if (t > 0) s += fmt::format("  {:<16}{:>14} {:>14}\n", name, si_count(static_cast<double>(t)), si_count(static_cast<double>(a)));
  };
  s += fmt::format("  {:<16}{:>14} {:>14}\n", "component", "total", "active");
  row("embedding", p.total.embedding, p.active.embedding);
  row("attention", p.total.attention, p.active.attention);
  row("dense mlp", p.total.dense_mlp, p.active.dense_mlp);
  row("routed experts", p.total.routed_experts, p.active.routed_experts);
  row("shared experts", p.total.shared_experts, p.active.shared_experts);
  row("router", p.total.router, p.active.router);
  row("norms", p.total.norms, p.active.norms);
  row("lm head", p.total.lm_head, p.active.lm_head);
  const bool mixed = o.formats && formats_label(*o.formats, m.is_moe()).find(',') != std::string::npos;
  s += fmt::format("weights      {} in {}{} ({} in bf16, {} in fp8)\n", si_bytes(described_weight_bytes(m, o)),
                   mixed ? formats_label(*o.formats, m.is_moe()) : to_string(o.weights_dtype),
                   m.quant.method.empty() || !o.formats_from_checkpoint ? "" : fmt::format(" (the checkpoint's {})", m.quant.method),
                   si_bytes(weight_bytes(m, DType::kBf16)), si_bytes(weight_bytes(m, DType::kFp8)));
  s += fmt::format("kv cache     {} bytes/token in {} ({} per layer{})\n",
                   grouped(static_cast<std::int64_t>(kv.per_token_all_layers().value())), to_string(o.kv_dtype),
                   grouped(static_cast<std::int64_t>(kv.per_layer_token.value())),
                   m.attention == AttentionKind::kMla ? ", compressed latent + rope key" : "");
  s += fmt::format("  {:>9} {:>16} {:>16} {:>18}\n", "context", "FLOPs/token", "attention part", "KV per sequence");
  for (std::int64_t c : o.contexts) {
    const FlopsPerToken f = flops_per_token(m, c);
    s += fmt::format("  {:>9} {:>16} {:>16} {:>18}\n", grouped(c), si_flops(f.total()), si_flops(f.attention),
                     si_bytes(kv.for_context(c)));
  }
  return s;
}

std::string describe_ops_text(const ModelSpec& m, const DescribeOptions& o, std::int64_t context) {
  const ModelGraph g = build_graph(m);
  std::string s = fmt::format("\nfused ops per layer, one decode token at context {} (unsharded; weights {}, activations bf16)\n",
                              grouped(context), to_string(o.weights_dtype));
  for (std::size_t c = 0; c < g.classes.size(); ++c) {
    const LayerShape& cls = g.classes[c];
    s += fmt::format("\n{} layers x {}{}\n", cls.moe ? "MoE" : "dense", cls.count,
                     cls.window > 0 ? fmt::format(" (sliding window {})", cls.window) : "");
    s += fmt::format("  {:<12} {:<12} {:<44} {:<26} {:>11} {:>12} {:>12}\n", "op", "slot", "weight", "output", "params",
                     "FLOPs", "bytes");
    for (const OpInfo& op : describe_chain(g, static_cast<int>(c), Phase::kDecode, 1, context, o.weights_dtype, DType::kBf16)) {
      s += fmt::format("  {:<12} {:<12} {:<44} {:<26} {:>11} {:>12} {:>12}\n", op.name,
                       op.slot >= 0 ? slot_info(op.slot).name : "(fixed)", op.weight_dims, op.output_dims,
                       op.weight_params > 0 ? si_count(op.weight_params) : "-", si_flops(Flops(op.flops)),
                       si_bytes(Bytes(op.weight_bytes + op.activation_bytes)));
    }
  }
  return s;
}

std::string describe_cluster_text(const ClusterSpec& c) {
  const GpuSpec& g = c.gpu;
  std::string s;
  s += fmt::format("cluster      {}: {} x {} in {} nodes of {}\n", c.name, c.num_gpus, g.name, c.num_nodes(), c.gpus_per_node);
  s += fmt::format("gpu          bf16 {}, fp8 {}, HBM {} at {}\n", si_flop_rate(g.bf16),
                   g.fp8.value() > 0 ? si_flop_rate(g.fp8) : std::string("none"), si_bytes(g.hbm_capacity), si_rate(g.hbm_bandwidth));
  s += fmt::format("  {:<10} {:>8} {:>16} {:>10}\n", "level", "GPUs", "bandwidth/GPU", "latency");
  for (const auto& l : c.levels) {
    s += fmt::format("  {:<10} {:>8} {:>16} {:>10}\n", l.name, l.size, si_rate(l.bandwidth), si_time(l.latency));
  }
  s += "  (bandwidth per GPU and direction; a group uses the innermost level that holds all its ranks)\n";
  return s;
}

std::string describe_workload_text(const Workload& w) {
  std::string s = fmt::format("workload     {}: {}", w.name, to_string(w.mode));
  if (w.mode == Mode::kDecode) s += fmt::format(" at context {}", grouped(w.context));
  if (w.isl > 0 && w.mode != Mode::kDecode) s += fmt::format(", isl {}", grouped(w.isl));
  if (w.osl > 0 && is_stream(w.mode)) s += fmt::format(", osl {}", grouped(w.osl));
  s += fmt::format(", batch {}", w.batch ? std::to_string(*w.batch) : std::string("max (the largest that fits memory and the SLOs)"));
  s += fmt::format(", weights {}, kv cache {}\n", w.weights_dtype ? to_string(*w.weights_dtype) : "auto (the checkpoint's)",
                   w.kv_dtype ? to_string(*w.kv_dtype) : "auto (the checkpoint's)");
  s += "slo          ";
  if (!w.ttft_ms && !w.tpot_ms) s += "none";
  if (w.ttft_ms) s += fmt::format("ttft <= {} ms ", *w.ttft_ms);
  if (w.tpot_ms) s += fmt::format("tpot <= {} ms", *w.tpot_ms);
  s += "\n";
  return s;
}

}  // namespace shardwise
