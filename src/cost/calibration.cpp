#include "cost/calibration.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/fields.hpp"
#include "cost/simulator.hpp"

namespace shardwise {
namespace {

// A string as a YAML double-quoted scalar: JSON's escapes are YAML's too.
std::string quoted(const std::string& s) { return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

constexpr double kMaxScale = 100.0;  // a scale beyond 1/100..100 is a broken fit or a typo

}  // namespace

Expected<CalibrationProfile> parse_calibration_profile(std::string_view text, const std::string& file) {
  auto doc = parse_yaml_text(text, file);
  if (!doc) return doc.error();
  ErrorSink sink;
  const FieldReader r = root_reader(*doc, file, sink);
  r.reject_unknown({"schema", "gpu", "engine", "engine_version", "model", "instance", "step_overhead_us", "scales", "fit", "results"});
  CalibrationProfile c;
  if (!sink.failed()) {
    const std::string schema = r.string("schema");
    if (!sink.failed() && schema != kCalibrationSchema) r.fail_value("schema", fmt::format("'{}'", kCalibrationSchema));
  }
  c.gpu = r.string("gpu");
  c.engine = r.string_or("engine", "");
  c.engine_version = r.string_or("engine_version", "");
  c.model = r.string_or("model", "");
  if (auto inst = r.object("instance", false)) {
    inst->reject_unknown({"tp", "pp", "ep", "attn_dp"});
    c.tp = static_cast<std::int32_t>(inst->integer_or("tp", 1, 1, 1 << 20));
    c.pp = static_cast<std::int32_t>(inst->integer_or("pp", 1, 1, 1 << 20));
    c.ep = static_cast<std::int32_t>(inst->integer_or("ep", 1, 1, 1 << 20));
    c.attn_dp = static_cast<std::int32_t>(inst->integer_or("attn_dp", 1, 1, 1 << 20));
  }
  c.step_overhead_us = r.number("step_overhead_us", 0.0, 1e6);
  if (auto s = r.object("scales", false)) {
    s->reject_unknown({"gemm", "experts", "attention", "comm"});
    c.scales.gemm = s->number_or("gemm", 1.0, 1.0 / kMaxScale, kMaxScale);
    c.scales.experts = s->number_or("experts", 1.0, 1.0 / kMaxScale, kMaxScale);
    c.scales.attention = s->number_or("attention", 1.0, 1.0 / kMaxScale, kMaxScale);
    c.scales.comm = s->number_or("comm", 1.0, 1.0 / kMaxScale, kMaxScale);
  }
  if (auto f = r.object("fit", false)) {
    f->reject_unknown({"base_step_overhead_us", "rms_log_error_before", "rms_log_error_after"});
    c.base_step_overhead_us = f->number_or("base_step_overhead_us", c.step_overhead_us, 0.0, 1e6);
    c.rms_log_error_before = f->number_or("rms_log_error_before", 0.0, 0.0, 1e3);
    c.rms_log_error_after = f->number_or("rms_log_error_after", 0.0, 0.0, 1e3);
  }
  if (const auto* results = r.get("results"); results != nullptr && !sink.failed()) {
    if (!results->is_array()) {
      r.fail_value("results", "a list of the results the profile was fitted on");
    } else {
      for (std::size_t i = 0; i < results->size() && !sink.failed(); ++i) {
        const FieldReader p((*results)[i], file, sink, fmt::format("results[{}].", i));
        if (!(*results)[i].is_object()) {
          r.fail(fmt::format("results[{}]", i), "an object (file, rate, users, requests, mean_input, mean_output)",
                 describe_value((*results)[i]));
          break;
        }
        p.reject_unknown({"file", "rate", "users", "requests", "mean_input", "mean_output"});
        CalibrationPoint pt;
        pt.file = p.string_or("file", "");
        pt.rate = p.number_or("rate", 0.0, 0.0, 1e9);
        pt.users = p.integer_or("users", 0, 0, 1LL << 40);
        pt.requests = p.integer_or("requests", 0, 0, 1LL << 40);
        pt.mean_input = p.number_or("mean_input", 0.0, 0.0, 1e9);
        pt.mean_output = p.number_or("mean_output", 0.0, 0.0, 1e9);
        c.points.push_back(pt);
      }
    }
  }
  if (sink.failed()) return *sink.first;
  return c;
}

Expected<CalibrationProfile> load_calibration_profile(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  return parse_calibration_profile(*text, path);
}

std::string calibration_profile_yaml(const CalibrationProfile& c) {
  std::string s = fmt::format(
      "# A shardwise calibration profile (shardwise calibrate; docs/calibration.md): the engine-level\n"
      "# terms fitted on benchmark results of one deployment. Use it with --calibration FILE.\n"
      "schema: {}\ngpu: {}\n",
      quoted(kCalibrationSchema), quoted(c.gpu));
  // the optional names only when set (an empty string is not a name: the reader refuses one)
  if (!c.engine.empty()) s += fmt::format("engine: {}\n", quoted(c.engine));
  if (!c.engine_version.empty()) s += fmt::format("engine_version: {}\n", quoted(c.engine_version));
  if (!c.model.empty()) s += fmt::format("model: {}\n", quoted(c.model));
  s += fmt::format("instance: {{tp: {}, pp: {}, ep: {}, attn_dp: {}}}\n", c.tp, c.pp, c.ep, c.attn_dp);
  s += fmt::format("step_overhead_us: {:.3f}\n", c.step_overhead_us);
  s += "# multipliers on each op kind's predicted time (1: as the cost model prices it)\n";
  s += fmt::format("scales: {{gemm: {:.5f}, experts: {:.5f}, attention: {:.5f}, comm: {:.5f}}}\n", c.scales.gemm, c.scales.experts,
                   c.scales.attention, c.scales.comm);
  s += fmt::format("fit: {{base_step_overhead_us: {:.3f}, rms_log_error_before: {:.5f}, rms_log_error_after: {:.5f}}}\n",
                   c.base_step_overhead_us, c.rms_log_error_before, c.rms_log_error_after);
  s += "results:\n";
  if (c.points.empty()) s += "  []\n";
  for (const auto& p : c.points) {
    s += fmt::format("  - {{{}rate: {}, users: {}, requests: {}, mean_input: {:.2f}, mean_output: {:.2f}}}\n",
                     p.file.empty() ? "" : "file: " + quoted(p.file) + ", ", p.rate, p.users, p.requests, p.mean_input, p.mean_output);
  }
  return s;
}

Expected<CostParams> apply_calibration(CostParams p, const CalibrationProfile& c, const std::string& gpu, const std::string& origin) {
  if (c.gpu != gpu) {
    return Error{origin, "gpu", fmt::format("a profile measured on the cluster's GPU, {}", gpu), fmt::format("'{}'", c.gpu)};
  }
  p.step_overhead_us = c.step_overhead_us;
  p.scales = c.scales;
  return p;
}

std::vector<std::string> calibration_warnings(const CalibrationProfile& c, const SimContext& ctx, const Plan& plan) {
  std::vector<std::string> out;
  if (!c.model.empty() && c.model != ctx.model.name) {
    out.push_back(fmt::format("the calibration profile was measured on {}, not {}", c.model, ctx.model.name));
  }
  const std::string engine = ctx.engine.name == "generic" ? "" : ctx.engine.name;
  if (c.engine != engine) {
    out.push_back(fmt::format("the calibration profile was measured on {}, the prediction is for {}", c.engine.empty() ? "the generic engine" : c.engine,
                              engine.empty() ? "the generic engine" : engine));
  }
  const Degrees& d = plan.deg;
  if (d.tp != c.tp || d.pp != c.pp || d.ep != c.ep || d.attn_dp != c.attn_dp) {
    out.push_back(fmt::format("the calibration profile measured an instance of tp {} pp {} ep {} attn_dp {}; this plan's is tp {} pp {} ep {} attn_dp {}",
                              c.tp, c.pp, c.ep, c.attn_dp, d.tp, d.pp, d.ep, d.attn_dp));
  }
  if (c.points.empty()) return out;
  // lengths and load: outside the results' range by more than a quarter
  const auto range_of = [&](auto get) {
    double lo = 1e300, hi = 0;
    for (const auto& p : c.points) {
      lo = std::min(lo, get(p));
      hi = std::max(hi, get(p));
    }
    return std::pair{lo, hi};
  };
  const auto outside = [](double v, std::pair<double, double> r) { return v > 0 && r.second > 0 && (v < r.first / 1.25 || v > r.second * 1.25); };
  const Workload& w = ctx.workload;
  const double in = w.serve.input ? mean_of(*w.serve.input) : static_cast<double>(w.isl);
  const double outl = w.serve.output ? mean_of(*w.serve.output) : static_cast<double>(w.osl);
  const auto ri = range_of([](const CalibrationPoint& p) { return p.mean_input; });
  const auto ro = range_of([](const CalibrationPoint& p) { return p.mean_output; });
  if (outside(in, ri)) out.push_back(fmt::format("a mean input of {:.0f} tokens lies outside the calibration's {:.0f}..{:.0f}", in, ri.first, ri.second));
  if (outside(outl, ro)) {
    out.push_back(fmt::format("a mean output of {:.0f} tokens lies outside the calibration's {:.0f}..{:.0f}", outl, ro.first, ro.second));
  }
  if (w.mode == Mode::kServe && w.serve.arrivals.kind == Arrivals::Kind::kPoisson) {
    const auto rr = range_of([](const CalibrationPoint& p) { return p.rate; });
    if (outside(w.serve.arrivals.rate, rr)) {
      out.push_back(fmt::format("an offered {:.3g} req/s lies outside the calibration's {:.3g}..{:.3g} req/s", w.serve.arrivals.rate, rr.first, rr.second));
    }
  }
  return out;
}

}  // namespace shardwise
