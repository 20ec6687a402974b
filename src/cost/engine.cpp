// Engine profiles from data/engines/*.yaml (embedded), resolved at a version.
#include "cost/engine.hpp"

#include "core/names.hpp"

#include <algorithm>
#include <charconv>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/embedded_data.hpp"
#include "core/fields.hpp"

namespace shardwise {
namespace {

constexpr std::int64_t kMaxBudget = std::int64_t{1} << 24;
constexpr std::int64_t kMaxDecodeSteps = 1024;  // decode iterations per scheduling decision

// "0.10.2rc1" -> {0, 10, 2}; nullopt unless it starts with a number.
std::optional<std::vector<int>> version_numbers(std::string_view v) {
  std::vector<int> out;
  std::size_t i = 0;
  while (i < v.size()) {
    int n = 0;
    const auto [p, ec] = std::from_chars(v.data() + i, v.data() + v.size(), n);
    if (ec != std::errc()) break;
    out.push_back(n);
    i = static_cast<std::size_t>(p - v.data());
    if (i < v.size() && v[i] == '.') {
      ++i;
    } else {
      break;
    }
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace

std::optional<int> compare_versions(std::string_view a, std::string_view b) {
  const auto x = version_numbers(a), y = version_numbers(b);
  if (!x || !y) return std::nullopt;
  for (std::size_t i = 0; i < std::max(x->size(), y->size()); ++i) {
    const int p = i < x->size() ? (*x)[i] : 0, q = i < y->size() ? (*y)[i] : 0;
    if (p != q) return p < q ? -1 : 1;
  }
  return 0;
}

Expected<EngineTraits> parse_engine_profile(std::string_view yaml, const std::string& file, const std::string& version) {
  auto doc = parse_yaml_text(yaml, file);
  if (!doc) return doc.error();
  ErrorSink sink;
  const FieldReader r = root_reader(*doc, file, sink);
  r.reject_unknown({"name", "label", "default_version", "vendors", "max_num_tokens", "moe_kernel", "moe_module_floor_us", "moe_expert_stream", "moe_all_to_all",
                    "custom_all_reduce_max_bytes", "small_kernels", "scheduler", "versions"});
  EngineTraits e;
  e.name = r.string("name");
  const std::string def = r.string("default_version");
  e.max_num_tokens = r.integer("max_num_tokens", 1, kMaxBudget);
  if (const nlohmann::json* v = r.get("vendors")) {
    const bool ok = v->is_array() && !v->empty() && std::all_of(v->begin(), v->end(), [](const nlohmann::json& x) {
      return x.is_string() && (x.get<std::string>() == "nvidia" || x.get<std::string>() == "amd");
    });
    if (!ok) r.fail_value("vendors", "a list of GPU vendors (nvidia, amd)");
    if (ok) {
      for (const auto& x : *v) e.vendors.push_back(x.get<std::string>());
    }
  }
  if (r.has("moe_kernel")) {
    const std::string k = r.string("moe_kernel");
    if (!sink.failed() && k != "triton-fused-moe" && k != "other") r.fail_value("moe_kernel", "triton-fused-moe or other");
    e.moe_kernel = k == "triton-fused-moe" ? EngineTraits::MoeKernel::kTritonFusedMoe : EngineTraits::MoeKernel::kOther;
  }
  if (r.has("moe_module_floor_us")) e.moe_module_floor_us = r.number("moe_module_floor_us", 0.0, 1e4);
  if (r.has("moe_expert_stream")) {
    e.moe_expert_stream = r.number("moe_expert_stream", 0.0, 1.0);
    // 0 is none; a share below the fit's own floor (CostParams: 0.01) is no measurement
    if (!sink.failed() && e.moe_expert_stream > 0 && e.moe_expert_stream < 0.01) r.fail_value("moe_expert_stream", "0 (none) or a share of HBM from 0.01 to 1");
  }
  if (r.has("moe_all_to_all")) {
    const std::string k = r.string("moe_all_to_all");
    if (!sink.failed() && k != "nvlink-one-sided" && k != "deepep-low-latency" && k != "model") {
      r.fail_value("moe_all_to_all", "nvlink-one-sided, deepep-low-latency or model");
    }
    e.moe_all_to_all = k == "nvlink-one-sided" ? MoeAllToAll::kNvlinkOneSided : k == "deepep-low-latency" ? MoeAllToAll::kDeepEpLowLatency : MoeAllToAll::kModel;
  }
  if (r.has("small_kernels")) {
    const std::string k = r.string("small_kernels");
    if (!sink.failed() && k != "separate" && k != "fused") r.fail_value("small_kernels", "separate or fused");
    e.small_kernels_separate = k == "separate";
  }
  if (r.has("custom_all_reduce_max_bytes")) e.custom_all_reduce_max_bytes = r.integer("custom_all_reduce_max_bytes", 0, std::int64_t{1} << 40);
  if (auto sc = r.object("scheduler", true)) {
    sc->reject_unknown({"order", "kv_admission", "max_num_seqs", "kv_block_tokens", "decode_steps", "pipeline_limits"});
    const std::string order = sc->string("order");
    if (!sink.failed() && order != "decode-first" && order != "prefill-first") sc->fail_value("order", "decode-first or prefill-first");
    e.prefill_first = order == "prefill-first";
    const std::string adm = sc->string("kv_admission");
    if (!sink.failed() && adm != "on-demand" && adm != "reserve-full") sc->fail_value("kv_admission", "on-demand or reserve-full");
    e.reserve_full_kv = adm == "reserve-full";
    e.max_num_seqs = sc->integer("max_num_seqs", 1, kMaxBudget);
    e.kv_block_tokens = sc->integer("kv_block_tokens", 1, 4096);
    if (sc->has("decode_steps")) e.decode_steps = sc->integer("decode_steps", 1, kMaxDecodeSteps);
    if (sc->has("pipeline_limits")) {
      const std::string pl = sc->string("pipeline_limits");
      if (!sink.failed() && pl != "per-micro-batch" && pl != "shared") sc->fail_value("pipeline_limits", "per-micro-batch or shared");
      e.limits_per_micro_batch = pl == "per-micro-batch";
    }
  }
  if (sink.failed()) return *sink.first;
  e.version = version.empty() ? def : version;
  if (!is_version_text(e.version) || !compare_versions(e.version, "0")) {
    return Error{"--engine-version", "", "a version such as 0.11, 1.0 or 0.10.2rc1 (dotted numbers, an optional rc/post/dev suffix)",
                 "'" + e.version + "'"};
  }
  const nlohmann::json* vs = r.get("versions");
  if (!vs || !vs->is_array() || vs->empty()) return Error{file, "versions", "a list of {since, traits} entries", "none"};
  bool matched = false;
  for (std::size_t i = 0; i < vs->size(); ++i) {
    const FieldReader v((*vs)[i], file, sink, fmt::format("versions[{}].", i));
    v.reject_unknown({"since", "gqa_grouped_kv_reads", "cuda_graphs"});
    const std::string since = v.string("since");
    const bool grouped = v.boolean_or("gqa_grouped_kv_reads", true);
    const std::string graphs = v.has("cuda_graphs") ? v.string("cuda_graphs") : "none";
    if (!sink.failed() && graphs != "none" && graphs != "vllm") v.fail_value("cuda_graphs", "none or vllm");
    if (sink.failed()) return *sink.first;
    const auto cmp = compare_versions(since, e.version);
    if (!cmp) return Error{file, fmt::format("versions[{}].since", i), "a version (dotted numbers)", "'" + since + "'"};
    if (*cmp <= 0) {  // entries are oldest first: the last at or below the version wins
      e.gqa_grouped_kv_reads = grouped;
      e.graph_defaults = graphs == "vllm" ? EngineTraits::GraphDefaults::kVllm : EngineTraits::GraphDefaults::kNone;
      matched = true;
    }
  }
  if (!matched) return Error{"--engine-version", "", fmt::format("a version the {} profile covers", e.name), "'" + e.version + "'"};
  return e;
}

std::string engine_profile_names() { return preset_names(embedded_engines()); }

bool is_version_text(std::string_view v) {
  std::size_t i = 0;
  int parts = 0;
  while (true) {
    const std::size_t start = i;
    while (i < v.size() && i - start < 6 && v[i] >= '0' && v[i] <= '9') ++i;
    if (i == start) return false;
    ++parts;
    if (i < v.size() && v[i] == '.' && i + 1 < v.size() && v[i + 1] >= '0' && v[i + 1] <= '9' && parts < 4) {
      ++i;
      continue;
    }
    break;
  }
  if (i == v.size()) return true;
  std::string_view rest = v.substr(i);
  if (rest.front() == '.' || rest.front() == '-') rest.remove_prefix(1);
  for (std::string_view tag : {"rc", "post", "dev", "a", "b"}) {
    if (rest.substr(0, tag.size()) == tag) {
      rest.remove_prefix(tag.size());
      return rest.size() <= 6 && std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; });
    }
  }
  return false;
}

std::string engine_gpu_mismatch(const EngineTraits& e, const GpuSpec& gpu) {
  const auto runs = [&](const std::vector<std::string>& v) { return v.empty() || std::find(v.begin(), v.end(), gpu.vendor) != v.end(); };
  if (runs(e.vendors)) return "";
  const auto label = [](const std::string& v) { return std::string(v == "amd" ? "AMD" : "NVIDIA"); };
  std::string built, others;
  for (const auto& v : e.vendors) built += (built.empty() ? "" : " and ") + label(v);
  for (const auto& n : {"vllm", "sglang", "trtllm"}) {  // the engines built for the GPU's vendor
    auto t = load_engine_profile(n);
    if (t && runs(t->vendors)) others += (others.empty() ? "" : ", ") + std::string(n);
  }
  return fmt::format("{} is built for {} GPUs only (for {} GPUs: {})", e.name, built, label(gpu.vendor), others.empty() ? "none" : others);
}

std::optional<Error> engine_gpu_error(const EngineTraits& e, const GpuSpec& gpu, const std::string& flag) {
  const std::string why = engine_gpu_mismatch(e, gpu);
  if (why.empty()) return std::nullopt;
  return Error{flag, "", fmt::format("an engine built for the GPU ({})", gpu.name), fmt::format("'{}': {}", e.name, why)};
}

Expected<EngineTraits> with_decode_steps(EngineTraits e, std::int64_t steps) {
  if (steps < 1 || steps > kMaxDecodeSteps) {
    return Error{"--decode-steps", "", fmt::format("decode iterations per scheduling decision from 1 to {}", kMaxDecodeSteps), std::to_string(steps)};
  }
  if (steps > 1 && (e.name == "vllm" || e.name == "trtllm")) {
    return Error{"--decode-steps", "",
                 e.name == "vllm" ? "1 with vllm (vLLM 0.11 schedules every iteration: --num-scheduler-steps went with its V0 engine; "
                                    "SGLang has --num-continuous-decode-steps)"
                                  : "1 with trtllm (TensorRT-LLM schedules every iteration; SGLang has --num-continuous-decode-steps)",
                 std::to_string(steps)};
  }
  e.decode_steps = steps;
  return e;
}

Expected<EngineTraits> with_adp_balance(EngineTraits e, std::int64_t wait_iters, std::int64_t timeout_iters) {
  if (e.name != "trtllm") {
    return Error{"--adp-balance", "", "--engine trtllm beside it (TensorRT-LLM's attention_dp_config; vLLM and SGLang hold no prompts back)",
                 e.name == "generic" ? std::string("no --engine") : "--engine " + e.name};
  }
  if (wait_iters < 0 || wait_iters > 1000) {
    return Error{"--adp-balance", "batching_wait_iters", "0 to 1000 iterations", std::to_string(wait_iters)};
  }
  if (timeout_iters < 1 || timeout_iters > 10000) {
    return Error{"--adp-balance", "timeout_iters", "1 to 10000 iterations", std::to_string(timeout_iters)};
  }
  e.adp_wait_iters = wait_iters;
  e.adp_timeout_iters = timeout_iters;
  return e;
}

Expected<std::pair<std::int64_t, std::int64_t>> parse_adp_balance(const std::string& text) {
  const auto comma = text.find(',');
  const auto whole = [](const std::string& t, std::int64_t& out) {
    if (t.empty() || t.size() > 9 || !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
    out = std::stoll(t);
    return true;
  };
  std::int64_t w = 0, t = 0;
  if (comma == std::string::npos || !whole(text.substr(0, comma), w) || !whole(text.substr(comma + 1), t)) {
    return Error{"--adp-balance", "", "WAIT,TIMEOUT: two whole numbers of iterations (batching_wait_iters, timeout_iters), e.g. 3,9",
                 "'" + text + "'"};
  }
  return std::pair{w, t};
}

Expected<EngineTraits> with_cuda_graph_batch_sizes(EngineTraits e, std::vector<std::int64_t> sizes) {
  const std::string expected = fmt::format("1 to {} batch sizes from 1 to {}", kMaxCudaGraphSizes, kMaxCudaGraphBatch);
  if (sizes.empty() || sizes.size() > kMaxCudaGraphSizes) {
    return Error{"--cuda-graph-batch-sizes", "", expected, sizes.empty() ? std::string("none") : fmt::format("{} sizes", sizes.size())};
  }
  for (const std::int64_t b : sizes) {
    if (b < 1 || b > kMaxCudaGraphBatch) return Error{"--cuda-graph-batch-sizes", "", expected, std::to_string(b)};
  }
  e.cuda_graph_batch_sizes = normalized_graph_sizes(std::move(sizes));
  return e;
}

Expected<std::vector<std::int64_t>> parse_cuda_graph_batch_sizes(const std::string& text) {
  std::vector<std::int64_t> out;
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = text.find(',', at);
    const std::string t = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (t.empty() || t.size() > 9 || !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return Error{"--cuda-graph-batch-sizes", "", "a comma-separated list of whole batch sizes, e.g. 128,256,384,512", "'" + text + "'"};
    }
    out.push_back(std::stoll(t));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

std::string cuda_graph_batch_sizes_text(const std::vector<std::int64_t>& sizes) { return fmt::format("{}", fmt::join(sizes, ",")); }

Expected<EngineTraits> engine_traits_of(const std::optional<std::string>& name, const std::optional<std::string>& version,
                                        std::optional<std::int64_t> max_num_tokens, std::optional<std::int64_t> max_num_seqs,
                                        std::string* note) {
  EngineTraits out;
  if (name && name->empty()) return Error{"--engine", "", "one of " + engine_profile_names(), "'' (an empty name)"};
  if (version && version->empty()) return Error{"--engine-version", "", "a version such as 0.11 or 1.0", "'' (an empty version)"};
  if (!name) {
    if (version) return Error{"--engine-version", "", "--engine beside it (" + engine_profile_names() + ")", "no --engine"};
    if (max_num_tokens) {
      if (*max_num_tokens < 1 || *max_num_tokens > kMaxBudget) {
        return Error{"--max-num-tokens", "", fmt::format("a token budget from 1 to {}", kMaxBudget), std::to_string(*max_num_tokens)};
      }
      out.max_num_tokens = *max_num_tokens;
    }
  } else {
    auto e = load_engine_profile(*name, version.value_or(""), max_num_tokens);
    if (!e) return e;
    out = *e;
    if (version && note) {
      // newer than the profile's own version by major or minor: its newest traits, said so
      auto def = load_engine_profile(*name, "", std::nullopt);
      if (def) {
        const auto major_minor = [](const std::string& v) {
          const auto dot = v.find('.');
          const auto dot2 = dot == std::string::npos ? std::string::npos : v.find_first_not_of("0123456789", dot + 1);
          return v.substr(0, dot2);
        };
        if (compare_versions(major_minor(*version), major_minor(def->version)).value_or(0) > 0) {
          *note = fmt::format("{} {} is newer than the {} profile describes ({}): its newest traits are used (data/engines/{}.yaml)", *name,
                              *version, *name, def->version, *name);
        }
      }
    }
  }
  if (max_num_seqs) {
    if (*max_num_seqs < 1 || *max_num_seqs > kMaxBudget) {
      return Error{"--max-num-seqs", "", fmt::format("a number of running sequences from 1 to {}", kMaxBudget), std::to_string(*max_num_seqs)};
    }
    out.max_num_seqs = *max_num_seqs;
  }
  return out;
}

Expected<EngineTraits> load_engine_profile(const std::string& name, const std::string& version,
                                           std::optional<std::int64_t> max_num_tokens) {
  for (const auto& f : embedded_engines()) {
    if (name != f.name) continue;
    auto e = parse_engine_profile(f.text, f.path, version);
    if (!e) return e;
    if (max_num_tokens) {
      if (*max_num_tokens < 1 || *max_num_tokens > kMaxBudget) {
        return Error{"--max-num-tokens", "", fmt::format("a token budget from 1 to {}", kMaxBudget), std::to_string(*max_num_tokens)};
      }
      e->max_num_tokens = *max_num_tokens;
    }
    return e;
  }
  std::vector<std::string> known;
  for (const auto& e : embedded_engines()) known.emplace_back(e.name);
  return Error{"--engine", "", "one of " + engine_profile_names(), "'" + name + "'" + did_you_mean(name, known)};
}

}  // namespace shardwise
