// What the commands of the command line share (wiring only, ARCHITECTURE.md): the flag
// groups (workload overrides, engine, degrees), the inputs by name, printing, the checks
// of numbers typed on the command line, and the watch of a long run (time limit, progress
// on stderr). One file per command beside it (cmd_*.cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "core/control.hpp"
#include "core/error.hpp"
#include "cost/calibration.hpp"
#include "cost/engine.hpp"
#include "cost/params.hpp"
#include "cost/simulator.hpp"
#include "hardware/cluster.hpp"
#include "model/model_spec.hpp"
#include "plan/plan_json.hpp"
#include "workload/workload.hpp"

namespace CLI {
class App;
}

namespace shardwise::cli {

// Upper bounds of the numeric flags: beyond them a value is a slip, not a request.
constexpr std::int32_t kMaxDegreeFlag = 1 << 20;  // as in plan.json
constexpr int kMaxThreads = 256;

// One subcommand: runs it once parsed and gives its exit status.
struct Command {
  CLI::App* sub = nullptr;
  std::function<int()> run;
};

int fail(const Error& e);                // the message on stderr; kExitBadInput
void print(const std::string& s);        // on stdout, with a final newline
void note(const std::string& s);         // "shardwise: note: ..." on stderr
// load_model, with a note when a local folder is read instead of the preset of its name
Expected<ModelSpec> load_model_noted(const std::string& name_or_path);

// An error about a name that came from a file (a plan's model, cluster or workload) is
// that file's, not the flag's the user never passed.
Error blame(Error e, const char* flag, const std::string& file, const char* field);
// --tp and its kin: at least `lo`, at most kMaxDegreeFlag.
std::optional<Error> check_degree_flag(const char* flag, const std::optional<std::int32_t>& v, std::int32_t lo);
// A seed typed as decimal digits, up to `max`; nullopt for anything else ("-1", "0x10", "1e3").
std::optional<std::uint64_t> parse_seed(const std::string& s, std::uint64_t max = UINT64_MAX);
// --threads: 0 is every core.
std::optional<Error> check_threads(int threads);
int threads_or_cores(int threads);
// A path a report or plan can be written to: its folder exists and is writable, and it
// is not itself a folder.
bool writable_path(const std::string& path);

using OptDegree = std::optional<std::int32_t>;
void add_degree_flags(CLI::App* cmd, OptDegree& tp, OptDegree& pp, OptDegree& ep, OptDegree& attn_dp, OptDegree& micro_batches,
                      OptDegree* redundant = nullptr);
void add_workload_flags(CLI::App* cmd, WorkloadOverrides& o);
bool any_override(const WorkloadOverrides& o);

// The engine profile flags of simulate and plan (docs/cost-model.md, "Engine profiles").
struct EngineArgs {
  std::optional<std::string> name, version;  // given empty ('') is an error, not "none"
  std::optional<std::int64_t> max_num_tokens, max_num_seqs, decode_steps;
  std::optional<std::string> adp_balance;  // "WAIT,TIMEOUT" (TensorRT-LLM's attention-DP balancing)
  std::optional<std::string> cuda_graph_batch_sizes;  // "128,256,384,512" (decode-only iterations padded to them)
};
void add_engine_flags(CLI::App* cmd, EngineArgs& e);
// The traits, with a note on stderr when the version is newer than the profile describes.
Expected<EngineTraits> engine_of(const EngineArgs& a);

// The kernel-table flags of simulate, plan and sweep (docs/silicon.md): --kernel-tables
// costs GEMMs from the measured tables; --silicon DIR reads a folder of one's own
// measurements (bench/silicon/measure.py) beside the built-in tables, and implies it.
// --calibration FILE applies a calibration profile (shardwise calibrate; docs/calibration.md).
struct CostArgs {
  bool kernel_tables = false;
  std::string silicon;
  std::string calibration;
};
void add_cost_flags(CLI::App* cmd, CostArgs& a);
// The cost parameters of a GPU with the flags applied; a --silicon folder that does not
// read is an error naming the flag, or the file, row and value.
Expected<CostParams> cost_params_of(const CostArgs& a, const std::string& gpu);
// Whether any cost flag was given; the cost flags as a plan file records them; and the cost a
// command replaying `plan_file` runs: its flags where any is given, else the plan's recorded
// ones (nothing recorded: the fitted model).
bool any_cost_flag(const CostArgs& a);
std::optional<PlanFile::Cost> recorded_cost(const CostArgs& a);
CostArgs cost_for_plan(const CostArgs& flags, const PlanFile& plan_file);
// The profile of --calibration (nullopt without it); errors name the file and field.
Expected<std::optional<CalibrationProfile>> calibration_of(const CostArgs& a);
// A note on stderr for each way `plan` lies outside what the --calibration profile measured.
void note_calibration(const CostArgs& a, const SimContext& ctx, const Plan& plan);
// The tables once, for commands that cost several GPUs (sweep): null without --silicon.
Expected<std::shared_ptr<const SiliconTables>> silicon_of(const CostArgs& a);

// The three inputs of simulate and plan, with the workload overrides applied.
struct Inputs {
  ModelSpec model;
  ClusterSpec cluster;
  Workload workload;
};
// Where the names came from: the flags, or a plan file (whose fields an error then names).
struct InputSource {
  std::string plan_file;  // empty: every name and override came from flags
  bool model_from_plan = false, cluster_from_plan = false, workload_from_plan = false;
  const WorkloadOverrides* plan_overrides = nullptr;  // the plan file's, applied before the flags'
};
Expected<Inputs> load_inputs(const std::string& model, const std::string& cluster, const std::string& workload,
                             const WorkloadOverrides& overrides, const InputSource& src = {});

// The watch of a command: its time limit, and progress lines on stderr for runs over two
// seconds (on a terminal every two seconds, one line rewritten; elsewhere one line every
// ten seconds).
RunControl stderr_control(double time_limit_s);

// The subcommands (cmd_*.cpp): each adds itself to the app.
std::vector<Command> add_listings(CLI::App& app);  // models, clusters, workloads
Command add_describe(CLI::App& app);
Command add_simulate(CLI::App& app);
Command add_plan(CLI::App& app, const CliOptions& cli);
Command add_sweep(CLI::App& app, const CliOptions& cli);
Command add_launch(CLI::App& app);
std::vector<Command> add_check(CLI::App& app);  // check, calibrate
Command add_verify(CLI::App& app, const CliOptions& cli);

}  // namespace shardwise::cli
