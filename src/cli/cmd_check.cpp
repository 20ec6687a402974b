// shardwise check and calibrate: a plan's prediction against benchmark results, and the
// engine-level terms fitted on them (docs/check.md, docs/calibration.md).
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "check/calibrate.hpp"
#include "check/check.hpp"
#include "cli/common.hpp"
#include "core/files.hpp"
#include "plan/plan_json.hpp"

namespace shardwise::cli {
namespace {

struct CheckArgs {
  std::string plan_file, out;
  std::vector<std::string> measured;
  EngineArgs engine;
  CostArgs cost;
  double time_limit = 0;
  bool json = false;
};

// The deployment a plan file describes, on the engine it records (or the flags'), with the
// engine settings it was planned with (unless flags give them); errors name the plan file's fields.
// With `replay_cost` (check), the cost model the plan was made with unless cost flags are
// given; `used` receives the cost flags in effect.
Expected<PlanDeployment> load_deployment(const CheckArgs& a, bool replay_cost, CostArgs* used = nullptr) {
  auto f = load_plan_file(a.plan_file);
  if (!f) return f.error();
  if (f->model.empty() || f->cluster.empty() || f->workload.empty()) {
    return Error{a.plan_file, "model/cluster/workload", "the names the plan was made for (written by 'shardwise plan --out')", "none"};
  }
  InputSource src;
  src.plan_file = a.plan_file;
  src.model_from_plan = src.cluster_from_plan = src.workload_from_plan = true;
  src.plan_overrides = &f->overrides;
  auto in = load_inputs(f->model, f->cluster, f->workload, WorkloadOverrides{}, src);
  if (!in) return in.error();
  EngineArgs ea = a.engine;
  const bool from_plan = !ea.name && f->engine;
  if (from_plan) {
    ea.name = f->engine;
    if (!ea.version) ea.version = f->engine_version;
  } else if (!ea.name) {
    note(fmt::format("{} records no engine and --engine is not given: predicted with the generic engine (pass the engine that served the "
                     "benchmark)",
                     a.plan_file));
  }
  auto engine = engine_of(ea);
  if (!engine) {
    return from_plan ? blame(blame(engine.error(), "--engine", a.plan_file, "engine.name"), "--engine-version", a.plan_file, "engine.version")
                     : engine.error();
  }
  const CostArgs cost = replay_cost ? cost_for_plan(a.cost, *f) : a.cost;
  if (used) *used = cost;
  auto params = cost_params_of(cost, in->cluster.gpu.name);
  if (!params) {
    const bool cost_from_plan = !any_cost_flag(a.cost) && any_cost_flag(cost);
    return cost_from_plan ? blame(blame(params.error(), "--silicon", a.plan_file, "cost.silicon"), "--calibration", a.plan_file, "cost.calibration")
                     : params.error();
  }
  return plan_deployment(*f, a.plan_file, in->model, in->cluster, in->workload, *engine, *params,
                         a.engine.max_num_seqs.has_value(), a.engine.max_num_tokens.has_value());
}

std::vector<std::string> warnings_of(const CostArgs& a, const PlanDeployment& pd) {
  auto c = calibration_of(a);
  if (!c || !*c) return {};
  return calibration_warnings(**c, pd.ctx, pd.d.plan);
}

int run_check(const CheckArgs& a) {
  CostArgs cost;
  auto pd = load_deployment(a, true, &cost);
  if (!pd) return fail(pd.error());
  auto run = load_measured_run(a.measured.front());
  if (!run) return fail(run.error());
  Watch watch(stderr_control(a.time_limit));
  auto r = check_run(pd->ctx, pd->d, *run, &watch);
  if (watch.elapsed_s() >= 2.0) std::fputc('\n', stderr);
  if (!r) return fail(r.error());
  const auto warnings = warnings_of(cost, *pd);
  print(a.json ? check_json(pd->ctx, pd->d, *r, warnings) : check_text(pd->ctx, pd->d, *r, warnings));
  return 0;
}

int run_calibrate(const CheckArgs& a) {
  if (auto e = distinct_outputs({{"--out", a.out}})) return fail(*e);
  if (!writable_path(a.out)) return fail(Error{"--out", "", "a writable file path", "'" + a.out + "'"});
  for (const auto& m : a.measured) {
    if (m == a.out) return fail(Error{"--out", "", "a file other than the results it reads", "'" + a.out + "'"});
  }
  auto pd = load_deployment(a, false);  // the fit starts from the fitted model (or --calibration), not a recorded profile
  if (!pd) return fail(pd.error());
  std::vector<MeasuredRun> runs;
  for (const auto& m : a.measured) {
    auto run = load_measured_run(m);
    if (!run) return fail(run.error());
    runs.push_back(std::move(run).value());
  }
  Watch watch(stderr_control(a.time_limit));
  CalibrateOptions opt;
  opt.watch = &watch;
  auto r = calibrate(pd->ctx, pd->d, runs, opt);
  if (watch.elapsed_s() >= 2.0) std::fputc('\n', stderr);
  if (!r) return fail(r.error());
  if (auto e = write_file_whole(a.out, calibration_profile_yaml(r->profile), "--out")) return fail(*e);
  print(calibrate_text(*r) + fmt::format("wrote {}: use it with --calibration {}", a.out, a.out));
  return 0;
}

void add_common(CLI::App* cmd, CheckArgs& a) {
  cmd->add_option("--plan", a.plan_file, "The plan.json that was launched (shardwise plan --out)")->required();
  add_engine_flags(cmd, a.engine);
  add_cost_flags(cmd, a.cost);
  cmd->add_option("--time-limit", a.time_limit, "Stop after this many seconds (default: none)")->check(CLI::NonNegativeNumber);
}

}  // namespace

std::vector<Command> add_check(CLI::App& app) {
  auto ca = std::make_shared<CheckArgs>();
  auto* check = app.add_subcommand("check", "A plan's prediction beside a benchmark's result (vLLM, SGLang, aiperf; docs/check.md)");
  add_common(check, *ca);
  check->add_option("--measured", ca->measured,
                    "The benchmark's result file: vllm bench serve --save-result JSON, sglang.bench_serving --output-file JSONL "
                    "(its last run), aiperf's profile_export_aiperf.json or genai-perf's profile_export_genai_perf.json")
      ->required()
      ->expected(1);
  check->add_flag("--json", ca->json, "Print one JSON object instead of the table");
  auto cb = std::make_shared<CheckArgs>();
  auto* cal = app.add_subcommand("calibrate",
                                 "Fit the engine-level terms (step overhead, a scale per op kind) on benchmark results of a plan "
                                 "(docs/calibration.md)");
  add_common(cal, *cb);
  cal->add_option("--measured", cb->measured, "One or more result files of the plan's deployment (as check reads them)")->required();
  cal->add_option("--out", cb->out, "Write the calibration profile here (YAML; use it with --calibration)")->required();
  return {{check, [ca] { return run_check(*ca); }}, {cal, [cb] { return run_calibrate(*cb); }}};
}

}  // namespace shardwise::cli
