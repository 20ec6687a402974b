#include "check/result.hpp"

#include <cctype>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/fields.hpp"

namespace shardwise {
namespace {

using nlohmann::json;

// Python's json.dumps writes float('inf') and nan as bare Infinity / -Infinity / NaN (SGLang's
// request_rate at an infinite rate): outside strings they become the strings "inf", "-inf",
// "nan", which the readers below treat as the tools mean them.
std::string python_json_to_json(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    const auto word = [&](std::string_view w) { return text.substr(i, w.size()) == w; };
    if (word("-Infinity")) {
      out += "\"-inf\"";
      i += 8;
    } else if (word("Infinity")) {
      out += "\"inf\"";
      i += 7;
    } else if (word("NaN")) {
      out += "\"nan\"";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

// The last non-empty line of a JSONL file (SGLang appends one object per run).
std::string_view last_line(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  const auto nl = text.rfind('\n');
  return nl == std::string_view::npos ? text : text.substr(nl + 1);
}

// JSONL (SGLang appends one object per run, one per line): the last run; else the whole text
// (vLLM's one-line JSON, aiperf's indented one).
std::string_view body_of(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  const auto nl = text.find('\n');
  if (nl == std::string_view::npos) return text;
  std::string_view first = text.substr(0, nl);
  while (!first.empty() && std::isspace(static_cast<unsigned char>(first.back()))) first.remove_suffix(1);
  return !first.empty() && first.front() == '{' && first.back() == '}' ? last_line(text) : text;
}

class Reader {
 public:
  Reader(const json& obj, std::string file, std::string prefix = "") : obj_(obj), file_(std::move(file)), prefix_(std::move(prefix)) {}
  std::optional<Error> error;

  // A non-negative finite number, or nullopt when absent or null; "inf" is +infinity where allowed.
  std::optional<double> number(const char* key, bool inf_ok = false) {
    const auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return std::nullopt;
    if (it->is_string() && inf_ok && (*it == "inf" || *it == "Infinity")) return INFINITY;
    if (!it->is_number()) return fail(key, "a number", describe_value(*it));
    const double v = it->get<double>();
    if (!std::isfinite(v) || v < 0) return fail(key, "a finite number of at least 0", describe_value(*it));
    return v;
  }
  std::optional<std::int64_t> count(const char* key) {
    const auto v = number(key);
    if (!v) return std::nullopt;
    if (*v != std::floor(*v) || *v > 1e15) return fail_i(key, "a whole number", fmt::format("{}", *v));
    return static_cast<std::int64_t>(*v);
  }
  std::vector<std::int64_t> lengths(const char* key) {
    std::vector<std::int64_t> out;
    const auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return out;
    if (!it->is_array()) {
      fail(key, "a list of token counts", describe_value(*it));
      return {};
    }
    out.reserve(it->size());
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& v = (*it)[i];
      if (!v.is_number() || v.get<double>() < 0 || v.get<double>() != std::floor(v.get<double>()) || v.get<double>() > 1e9) {
        fail(fmt::format("{}[{}]", key, i).c_str(), "a whole number of tokens", describe_value(v));
        return {};
      }
      out.push_back(v.get<std::int64_t>());
    }
    return out;
  }
  [[nodiscard]] bool has(const char* key) const { return obj_.contains(key); }
  [[nodiscard]] const json& raw() const { return obj_; }
  [[nodiscard]] std::string path(std::string_view key) const { return prefix_ + std::string(key); }
  std::optional<double> fail(std::string_view key, std::string expected, std::string found) {
    if (!error) error = Error{file_, path(key), std::move(expected), std::move(found)};
    return std::nullopt;
  }
  std::optional<std::int64_t> fail_i(std::string_view key, std::string expected, std::string found) {
    fail(key, std::move(expected), std::move(found));
    return std::nullopt;
  }

 private:
  const json& obj_;
  std::string file_, prefix_;
};

// vLLM (`vllm bench serve --save-result`: vllm/benchmarks/serve.py) and SGLang
// (`sglang.bench_serving --output-file`: python/sglang/benchmark/serving.py) write flat keys:
// mean_<m>_ms, median_<m>_ms, p<P>_<m>_ms; vLLM's E2E is "e2el", SGLang's "e2e_latency".
void read_flat_latency(Reader& r, const char* m, MeasuredLatency& out) {
  const auto key = [&](const char* stat) { return fmt::format("{}_{}_ms", stat, m); };
  out.mean = r.number(key("mean").c_str());
  out.p50 = r.number(key("median").c_str());
  if (!out.p50) out.p50 = r.number(key("p50").c_str());
  out.p90 = r.number(key("p90").c_str());
  out.p95 = r.number(key("p95").c_str());
  out.p99 = r.number(key("p99").c_str());
}

Expected<MeasuredRun> read_flat(const json& doc, const std::string& file, const char* tool) {
  MeasuredRun run;
  run.file = file;
  run.tool = tool;
  Reader r(doc, file);
  const bool sglang = std::string_view(tool) == "sglang";
  if (const auto rate = r.number("request_rate", true); rate && std::isfinite(*rate)) {
    if (*rate <= 0) return Error{file, "request_rate", "a positive rate or inf", "0"};
    run.request_rate = rate;
  }
  run.max_concurrency = r.count("max_concurrency");
  const auto completed = r.count("completed");
  run.duration_s = r.number("duration");
  const auto in_tok = sglang && !r.has("total_input_tokens") ? r.number("total_input") : r.number("total_input_tokens");
  const auto out_tok = sglang && !r.has("total_output_tokens") ? r.number("total_output") : r.number("total_output_tokens");
  run.request_throughput = r.number("request_throughput");
  run.output_throughput = r.number("output_throughput");
  run.input_lens = r.lengths("input_lens");
  run.output_lens = r.lengths("output_lens");
  read_flat_latency(r, "ttft", run.ttft);
  read_flat_latency(r, "tpot", run.tpot);
  read_flat_latency(r, "itl", run.itl);
  read_flat_latency(r, sglang ? "e2e_latency" : "e2el", run.e2e);
  if (r.error) return *r.error;
  if (!completed) return Error{file, "completed", "the number of completed requests", "none"};
  if (*completed < 1) return Error{file, "completed", "at least one completed request to compare with", std::to_string(*completed)};
  run.completed = *completed;
  {
    if (in_tok) run.mean_input = *in_tok / static_cast<double>(run.completed);
    if (out_tok) run.mean_output = *out_tok / static_cast<double>(run.completed);
  }
  return run;
}

// aiperf (profile_export_aiperf.json: aiperf/exporters/json_exporter.py) and genai-perf
// (profile_export_genai_perf.json): one object per metric with "unit" and avg/p50/p90/p95/p99.
// Their "inter_token_latency" is per request (latency - TTFT) / (OSL - 1): vLLM's TPOT.
std::optional<double> time_scale_to_ms(const std::string& unit) {
  if (unit == "ms") return 1.0;
  if (unit == "us") return 1e-3;
  if (unit == "ns") return 1e-6;
  if (unit == "s" || unit == "sec") return 1e3;
  return std::nullopt;
}

Expected<MeasuredRun> read_nested(const json& doc, const std::string& file, const char* tool) {
  MeasuredRun run;
  run.file = file;
  run.tool = tool;
  std::optional<Error> err;
  // a metric's stat, in the metric's unit times `scale`
  const auto metric = [&](const char* name, const char* stat, bool time) -> std::optional<double> {
    const auto it = doc.find(name);
    if (it == doc.end() || err) return std::nullopt;
    if (!it->is_object()) {
      err = Error{file, name, "an object with unit and avg (p50, p90, p99, ...)", describe_value(*it)};
      return std::nullopt;
    }
    double scale = 1.0;
    if (time) {
      const auto u = it->find("unit");
      const std::string unit = u != it->end() && u->is_string() ? u->get<std::string>() : "ms";
      const auto s = time_scale_to_ms(unit);
      if (!s) {
        err = Error{file, fmt::format("{}.unit", name), "a time unit (ms, us, ns, sec)", fmt::format("'{}'", unit)};
        return std::nullopt;
      }
      scale = *s;
    }
    Reader r(*it, file, std::string(name) + ".");
    const auto v = r.number(stat);
    if (r.error) err = r.error;
    return v ? std::optional<double>(*v * scale) : std::nullopt;
  };
  const auto latency = [&](const char* name, MeasuredLatency& out) {
    out.mean = metric(name, "avg", true);
    out.p50 = metric(name, "p50", true);
    out.p90 = metric(name, "p90", true);
    out.p95 = metric(name, "p95", true);
    out.p99 = metric(name, "p99", true);
  };
  latency("time_to_first_token", run.ttft);
  latency("inter_token_latency", run.tpot);
  latency("request_latency", run.e2e);
  run.request_throughput = metric("request_throughput", "avg", false);
  run.output_throughput = metric("output_token_throughput", "avg", false);
  const auto count = metric("request_count", "avg", false);
  run.duration_s = metric("benchmark_duration", "avg", false);
  run.mean_input = metric("input_sequence_length", "avg", false);
  run.mean_output = metric("output_sequence_length", "avg", false);
  if (err) return *err;
  // what was offered: aiperf's input_config.loadgen, genai-perf's flat input_config
  if (const auto ic = doc.find("input_config"); ic != doc.end() && ic->is_object()) {
    const auto lg = ic->find("loadgen");
    const bool aiperf = lg != ic->end() && lg->is_object();
    const json& cfg = aiperf ? *lg : *ic;
    Reader r(cfg, file, aiperf ? "input_config.loadgen." : "input_config.");
    run.request_rate = r.number("request_rate");
    run.max_concurrency = r.count("concurrency");
    if (!count) {
      if (const auto n = r.count("request_count")) run.completed = *n;
    }
    if (aiperf) {
      const auto mode = cfg.find("request_rate_mode");
      if (mode != cfg.end() && mode->is_string() && *mode != "poisson" && run.request_rate) {
        return Error{file, "input_config.loadgen.request_rate_mode", "poisson (the arrivals shardwise simulates)", describe_value(*mode)};
      }
    }
    if (r.error) return *r.error;
  }
  if (count) run.completed = static_cast<std::int64_t>(std::llround(*count));
  if (run.completed <= 0) return Error{file, "request_count", "the number of completed requests", "none"};
  if (run.request_rate && *run.request_rate <= 0) run.request_rate.reset();
  return run;
}

}  // namespace

Expected<MeasuredRun> parse_measured_run(std::string_view text, const std::string& file) {
  const std::string body = python_json_to_json(body_of(text));
  if (!json_nesting_within_limit(body)) return Error{file, "", "JSON nested at most 64 deep", "deeper"};
  auto doc = parse_json_text(body, file);
  if (!doc) return doc.error();
  if (!doc->is_object()) return Error{file, "", "a JSON object (a benchmark result)", describe_value(*doc)};
  const json& d = *doc;
  const auto nested = [&](const char* k) { return d.contains(k) && d[k].is_object(); };
  if (nested("time_to_first_token") || nested("request_throughput") || nested("request_latency")) {
    const bool aiperf = d.contains("input_config") && d["input_config"].is_object() && d["input_config"].contains("loadgen");
    return read_nested(d, file, aiperf || !d.contains("input_config") ? "aiperf" : "genai-perf");
  }
  if (d.contains("mean_e2e_latency_ms") || d.contains("dataset_name") || d.contains("random_input_len")) return read_flat(d, file, "sglang");
  if (d.contains("mean_ttft_ms") || d.contains("num_prompts") || d.contains("endpoint_type") || d.contains("mean_e2el_ms")) {
    return read_flat(d, file, "vllm");
  }
  return Error{file, "",
               "a benchmark result: vllm bench serve --save-result JSON, sglang.bench_serving --output-file JSONL, or aiperf's "
               "profile_export_aiperf.json",
               "an object with none of their keys (mean_ttft_ms, mean_e2e_latency_ms, time_to_first_token)"};
}

Expected<MeasuredRun> load_measured_run(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  return parse_measured_run(*text, path);
}

}  // namespace shardwise
