// shardwise sweep: the best plan at every point of GPU types x counts, priced (docs/sweep.md).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/common.hpp"
#include "cli/dist.hpp"
#include "core/files.hpp"
#include "model/loader.hpp"
#include "report/sweep_report.hpp"
#include "search/sweep.hpp"

namespace shardwise::cli {
namespace {

struct SweepArgs {
  std::string model, workload = "chat-1k-1k", search = "exact", prices, csv, svg;
  std::vector<std::string> gpus, dtypes, engines;
  std::vector<std::int64_t> counts;
  WorkloadOverrides overrides;
  std::int64_t budget = 4000;
  std::string seed = "1";
  int threads = 0;
  double time_limit = 0;
  double target_rate = 0;  // a serving sweep: the fewest GPUs of each point serving this many requests/s
  int top_k = 24;
  bool no_disagg = false;
  bool json = false;
  CostArgs cost;  // --kernel-tables, --silicon
};

int run_sweep_cmd(const SweepArgs& a, const CliOptions& cli) {
  if (a.model.empty()) return fail(Error{"sweep", "", "--model", "none"});
  if (a.budget < 1) return fail(Error{"--budget", "", "a positive number of evaluations", std::to_string(a.budget)});
  if (auto e = check_threads(a.threads)) return fail(*e);
  if (auto e = check_time_limit(a.time_limit)) return fail(*e);
  const auto seed = parse_seed(a.seed);
  if (!seed) return fail(Error{"--seed", "", "an integer from 0 to 18446744073709551615", "'" + a.seed + "'"});
  if (!cli.allow_writes && (!a.csv.empty() || !a.svg.empty())) return fail(Error{"--csv/--svg", "", "no file written (this caller forbids writes)", "a path"});
  if (auto e = distinct_outputs({{"--csv", a.csv}, {"--svg", a.svg}, {"--prices", a.prices}})) return fail(*e);
  if (!a.csv.empty() && !writable_path(a.csv)) return fail(Error{"--csv", "", "a writable file path", "'" + a.csv + "'"});
  if (!a.svg.empty() && !writable_path(a.svg)) return fail(Error{"--svg", "", "a writable file path", "'" + a.svg + "'"});
  auto model = load_model_noted(a.model);
  if (!model) return fail(model.error());
  auto w = load_workload(a.workload);
  if (!w) return fail(w.error());
  auto wo0 = apply_overrides(*w, a.overrides);
  if (!wo0) return fail(wo0.error());
  std::string spec_note;
  auto wo = resolve_speculation(*model, std::move(wo0).value(), &spec_note);
  if (!wo) return fail(wo.error());
  if (!spec_note.empty()) note(spec_note);
  if (auto e = sweep_input_error(*wo, a.overrides, a.workload, a.target_rate, a.top_k)) return fail(*e);
  if (wo->mode == Mode::kServe && has_arrivals(*wo)) {
    note(fmt::format("a serving sweep searches each point's rate: the arrivals of workload {} ({}) are not used", a.workload,
                     to_string(wo->serve.arrivals.kind)));
  }
  auto prices = load_prices(a.prices);
  if (!prices) return fail(prices.error());
  auto silicon = silicon_of(a.cost);
  if (!silicon) return fail(silicon.error());
  SweepOptions o;
  o.silicon = std::move(silicon).value();
  o.kernel_tables = a.cost.kernel_tables || o.silicon != nullptr;
  auto calibration = calibration_of(a.cost);
  if (!calibration) return fail(calibration.error());
  o.calibration = std::move(calibration).value();
  if (o.calibration) {
    if (std::find(a.gpus.begin(), a.gpus.end(), o.calibration->gpu) == a.gpus.end()) {
      return fail(Error{a.cost.calibration, "gpu", fmt::format("one of the swept GPUs ({})", fmt::join(a.gpus, ", ")),
                        fmt::format("'{}'", o.calibration->gpu)});
    }
    if (a.gpus.size() > 1) note(fmt::format("the calibration profile applies to the {} points only; the others are priced as built", o.calibration->gpu));
  }
  o.gpus = a.gpus;
  o.counts = a.counts;
  if (!a.dtypes.empty()) o.dtypes = a.dtypes;
  for (std::string& d : o.dtypes) d = d == "auto" ? "" : d;
  if (!a.engines.empty()) o.engines = a.engines;
  for (std::string& e : o.engines) e = e == "generic" ? "" : e;
  o.search = a.search;
  o.target_rate = a.target_rate;
  o.serve_top_k = a.top_k;
  o.disaggregated = !a.no_disagg;
  o.serve_requests = wo->mode == Mode::kServe && a.overrides.requests ? *a.overrides.requests : 0;
  o.search_options.budget = a.budget;
  o.search_options.seed = *seed;
  o.search_options.threads = threads_or_cores(a.threads);
  Watch watch(stderr_control(a.time_limit));
  o.search_options.watch = &watch;
  // under mpirun: each process plans its share of the points, rank 0 gathers and prints
  const ProcessGroup group = join_process_group();
  struct Leave {
    const ProcessGroup& g;
    ~Leave() { leave_process_group(g); }
  } leave{group};
  o.rank = group.rank;
  o.ranks = group.size;
  Watch quiet(RunControl{a.time_limit, nullptr, nullptr});  // the other ranks: the same limit, silent
  if (group.rank != 0) o.search_options.watch = &quiet;
  auto pts = run_sweep(*model, *wo, o, *prices);
  if (group.rank == 0 && watch.elapsed_s() >= 2.0) std::fputc('\n', stderr);
  if (!pts) return group.rank == 0 ? fail(pts.error()) : kExitBadInput;
  if (group.size > 1) {
    std::vector<std::string> mine;
    for (std::size_t i = static_cast<std::size_t>(group.rank); i < pts->size(); i += static_cast<std::size_t>(group.size)) {
      mine.push_back(std::to_string(i) + " " + sweep_point_to_json((*pts)[i]));
    }
    const auto all = gather_lines(group, mine);
    // the other processes exit with rank 0's status: a failed write fails the whole job
    if (group.rank != 0) return share_status(group, 0);
    for (const auto& line : all) {
      const auto sp = line.find(' ');
      (*pts)[static_cast<std::size_t>(std::stoull(line.substr(0, sp)))] = sweep_point_from_json(line.substr(sp + 1));
    }
    mark_fewest(*pts);
  }
  const SweepHeader h{model->name, wo->name, *wo, a.target_rate, *prices};
  const int status = [&] {
    if (!a.csv.empty()) {
      if (auto e = write_file_whole(a.csv, sweep_csv(*pts), "--csv")) return fail(*e);
    }
    if (!a.svg.empty()) {
      const std::string svg = sweep_svg(h, *pts);
      if (auto e = write_file_whole(a.svg, svg, "--svg")) return fail(*e);
    }
    print(a.json ? sweep_json(h, *pts) : sweep_text(h, *pts));
    if (auto e = flush_stdout()) return fail(*e);
    return 0;
  }();
  return share_status(group, status);
}

}  // namespace

Command add_sweep(CLI::App& app, const CliOptions& cli) {
  auto args = std::make_shared<SweepArgs>();
  SweepArgs& swa = *args;
  auto* sweep = app.add_subcommand("sweep", "Plan every point of GPU types x counts (x formats x engines) and price it (docs/sweep.md)");
  sweep->add_option("--model", swa.model, "A model: a preset (see 'shardwise models'; also its Hugging Face id), a config.json, or a checkpoint folder holding one")->required();
  sweep->add_option("--workload", swa.workload, "A workload preset or YAML (default chat-1k-1k)");
  add_workload_flags(sweep, swa.overrides);
  sweep->add_option("--gpus", swa.gpus, "GPU types, comma-separated (h100,h200,b200,...)")->delimiter(',')->required();
  sweep->add_option("--counts", swa.counts, "GPU counts, comma-separated (8,16,32,...)")->delimiter(',')->required();
  sweep->add_option("--dtypes", swa.dtypes, "Weight formats to compare, comma-separated (auto = the checkpoint's own)")->delimiter(',');
  sweep->add_option("--engines", swa.engines, "Serving engines to compare (vllm,sglang,trtllm; generic = the free search)")->delimiter(',');
  sweep->add_option("--search", swa.search, "The search engine at each point (default exact)");
  sweep->add_option("--budget", swa.budget, "Evaluations per point for the sampling engines (default 4000)");
  sweep->add_option("--seed", swa.seed, "Random seed (default 1)");
  sweep->add_option("--threads", swa.threads, "Search threads (default: all cores)");
  sweep->add_option("--time-limit", swa.time_limit,
                    "Stop after this many seconds (default: none): the points not planned by then are listed as such, never priced "
                    "from a partial search; runs over two seconds print progress on stderr");
  sweep->add_option("--target-rate", swa.target_rate,
                    "Serve: at each point, the fewest of its GPUs that serve this many requests/s within the SLOs (default: the most "
                    "requests/s the point's GPUs serve)");
  sweep->add_option("--top-k", swa.top_k, "Serve: candidates each point's closed-form screen passes to the simulation (default 24; 0: all)");
  sweep->add_flag("--no-disagg", swa.no_disagg, "Serve: do not size disaggregated prefill/decode deployments beside the aggregated ones");
  sweep->add_option("--prices", swa.prices, "USD per GPU-hour, a YAML like data/prices/default.yaml (default: the shipped placeholders)");
  sweep->add_option("--csv", swa.csv, "Also write the points as CSV");
  sweep->add_option("--svg", swa.svg, "Also write the chart of USD per million output tokens against the GPU count");
  sweep->add_flag("--json", swa.json, "Print one JSON object (model, workload, points)");
  add_cost_flags(sweep, swa.cost);

  return {sweep, [args, cli] { return run_sweep_cmd(*args, cli); }};
}

}  // namespace shardwise::cli
