#include "public_rows.hpp"

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/fields.hpp"
#include "hardware/cluster.hpp"
#include "model/loader.hpp"

namespace shardwise::bench {
namespace {
std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}
bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
}  // namespace

std::string default_csv_path() { return std::string(SHARDWISE_SHARED_DIR) + "/calibration/public-measurements.csv"; }

Expected<std::vector<PublicRow>> load_public_rows(const std::string& path, std::vector<std::string>* skipped) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text->size()) {
    const auto nl = text->find('\n', start);
    lines.push_back(text->substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  if (lines.empty()) return Error{path, "", "a header line", "an empty file"};
  const auto header = split_csv_line(lines[0]);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* need : {"row_id", "model", "weight_precision", "kv_cache_precision", "gpu", "num_gpus", "tp", "pp", "scenario",
                           "batch_or_concurrency", "isl", "osl", "output_tok_s_per_gpu", "ttft_ms", "engine", "engine_version"}) {
    if (!col.count(need)) return Error{path, need, "a column of that name", "none"};
  }
  std::vector<PublicRow> rows;
  for (std::size_t li = 1; li < lines.size(); ++li) {
    if (lines[li].empty()) continue;
    const auto f = split_csv_line(lines[li]);
    if (f.size() < header.size()) return Error{path, fmt::format("line {}", li + 1), fmt::format("{} columns", header.size()), fmt::format("{}", f.size())};
    const auto get = [&](const char* k) { return f[col[k]]; };
    // a row this benchmark cannot map is listed with the reason, never fatal
    const auto skip = [&](const std::string& why) {
      if (skipped) skipped->push_back(fmt::format("row {}: {}", get("row_id"), why));
    };
    try {
    PublicRow r;
    r.id = std::stoi(get("row_id"));
    const std::string model = get("model");
    const std::string name = model == "Llama-3.1-70B" ? "llama-3.1-70b" : model == "Llama-2-70B" ? "llama-2-70b" : "";
    if (name.empty()) {
      skip(fmt::format("model {} has no preset mapping here", model));
      continue;
    }
    auto m = load_model(name);
    if (!m) return m.error();
    r.model = *m;
    const std::string gpu_col = get("gpu");
    r.gpu = starts_with(gpu_col, "H100") ? "h100" : starts_with(gpu_col, "A100") ? "a100" : "";
    if (r.gpu.empty()) {
      skip(fmt::format("GPU {} is not mapped (H100 or A100)", gpu_col));
      continue;
    }
    const int gpus = std::stoi(get("num_gpus"));
    auto c = cluster_from_preset(fmt::format("{}x{}", r.gpu, gpus));
    if (!c) return c.error();
    r.cluster = *c;
    r.plan.deg.tp = std::stoi(get("tp"));
    r.plan.deg.pp = get("pp").empty() ? 1 : std::stoi(get("pp"));
    const bool fp8 = starts_with(get("weight_precision"), "FP8");
    r.workload.weights_dtype = fp8 ? DType::kFp8 : DType::kFp16;
    // rows 1-13 leave the KV precision unstated ("likely FP8" from the ModelOpt checkpoint): taken as fp8
    const std::string kv = get("kv_cache_precision");
    r.workload.kv_dtype = (starts_with(kv, "FP16") || (!fp8 && !starts_with(kv, "FP8"))) ? DType::kFp16 : DType::kFp8;
    r.workload.isl = std::stoll(get("isl"));
    r.workload.osl = std::stoll(get("osl"));
    const std::string scenario = get("scenario");
    if (!get("ttft_ms").empty() && get("output_tok_s_per_gpu").empty()) {
      r.metric = RowMetric::kTtft;
      r.measured = std::stod(get("ttft_ms"));
      r.workload.mode = Mode::kPrefill;
      r.workload.osl = 0;
      r.plan.batch = 1;
    } else if (starts_with(scenario, "static")) {
      r.metric = RowMetric::kStaticBatchThroughput;
      r.measured = std::stod(get("output_tok_s_per_gpu"));
      r.workload.mode = Mode::kOffline;
      r.plan.batch = std::stoll(get("batch_or_concurrency").substr(get("batch_or_concurrency").rfind(' ') + 1));
    } else {
      r.metric = RowMetric::kOfflineMaxThroughput;
      r.measured = std::stod(get("output_tok_s_per_gpu"));
      r.workload.mode = Mode::kOffline;
      r.plan.batch = 0;  // the engine picks: the largest concurrency that fits
    }
    // TensorRT-LLM got grouped-KV (XQA) decode kernels for Hopper in 0.10; earlier versions read KV per query head.
    const std::string engine = get("engine"), version = get("engine_version");
    if (engine.find("TensorRT-LLM") != std::string::npos) {
      const auto dot = version.find('.');
      const int major = std::stoi(version.substr(0, dot));
      const int minor = dot == std::string::npos ? 0 : std::stoi(version.substr(dot + 1));
      r.engine.gqa_grouped_kv_reads = major > 0 || minor >= 10;
    }
    r.workload.name = fmt::format("row{}", r.id);
    const char* kind = r.metric == RowMetric::kTtft ? "ttft" : r.metric == RowMetric::kStaticBatchThroughput ? "static" : "offline";
    r.label = fmt::format("{} {} TP{} {}/{} {}{}", model, r.gpu, r.plan.deg.tp, r.workload.isl, r.workload.osl, kind,
                          r.plan.batch > 0 ? fmt::format(" b{}", r.plan.batch) : "");
    rows.push_back(std::move(r));
    } catch (const std::exception& e) {  // a number column this benchmark cannot read
      skip(fmt::format("a column it cannot read ({})", e.what()));
    }
  }
  return rows;
}

double predict(const PublicRow& r, const CostParams& p) {
  const SimContext ctx = make_context(r.model, r.cluster, r.workload, p, r.engine);
  if (r.metric == RowMetric::kStaticBatchThroughput) return evaluate_static_batch(ctx, r.plan).output_tok_s_per_gpu;
  const Metrics m = evaluate(ctx, r.plan);
  if (r.metric == RowMetric::kTtft) return m.ttft_s * 1e3;
  return m.feasible() ? m.output_tok_s_per_gpu : 0.0;
}

double abs_pct_error(double predicted, double measured) { return std::fabs(predicted - measured) / measured * 100.0; }

}  // namespace shardwise::bench
