#include "exec/verify.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "core/rng.hpp"
#include "graph/graph.hpp"
#include "model/loader.hpp"

extern char** environ;

namespace shardwise::exec {
namespace {

constexpr int kRunLimitS = 600;

std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::string p = path;
  std::size_t start = 0;
  while (start <= p.size()) {
    const std::size_t end = std::min(p.find(':', start), p.size());
    const std::string cand = p.substr(start, end - start) + "/" + name;
    if (access(cand.c_str(), X_OK) == 0) return cand;
    start = end + 1;
  }
  return "";
}

std::string self_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

}  // namespace

Fault parse_fault(const std::string& spec, std::string* why) {
  Fault f;
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t colon = spec.find(':', start);
    parts.push_back(spec.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  const auto integer = [](const std::string& t, long long* out) {
    char* end = nullptr;
    *out = std::strtoll(t.c_str(), &end, 10);
    return !t.empty() && *end == '\0';
  };
  long long layer = 0, index = -1;
  constexpr long long kMaxIndex = 1 << 20;
  if (parts.size() < 2 || parts.size() > 4 || parts[0].empty() || !integer(parts[1], &layer) || layer < -1 ||
      (parts.size() >= 3 && (!integer(parts[2], &index) || index < -1 || index > kMaxIndex)) || layer > kMaxIndex ||
      (parts.size() == 4 && parts[3] != "prefill" && parts[3] != "decode" && parts[3] != "both")) {
    *why = "OP:LAYER[:INDEX[:prefill|decode|both]], e.g. ffn_norm:0 or o_proj:1:0:decode (LAYER -1: embedding, LM head and "
           "pipeline; INDEX -1: every collective of the op)";
    return Fault{};
  }
  f.op = parts[0];
  f.layer = layer;
  f.index = static_cast<int>(index);
  if (parts.size() == 4 && parts[3] != "both") f.phase = static_cast<int>(parts[3] == "prefill" ? Phase::kPrefill : Phase::kDecode);
  return f;
}

Expected<Sharding> resolve_sharding(const std::string& spec, const ModelSpec& m) {
  if (spec.rfind("random:", 0) == 0) {
    const std::string s = spec.substr(7);
    char* end = nullptr;
    const unsigned long long seed = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0') return Error{"--sharding", "", "random:SEED with an integer seed", spec};
    Rng rng(seed);
    Sharding sh{};
    for (int i = 0; i < kNumSlots; ++i) sh[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(rng.below(static_cast<std::uint64_t>(slot_info(i).num_choices)));
    return canonical_sharding(sh, build_graph(m));
  }
  return load_sharding(spec);
}

Expected<int> verify(const VerifyOptions& o) {
  auto m = load_model(o.model);
  if (!m) return m.error();
  auto c = scale_case(m.value(), o.plan, o.seed, o.decode_steps);
  if (!c) return c.error();
  const std::string mpirun = find_in_path(o.mpirun.empty() ? "mpirun" : o.mpirun);
  if (mpirun.empty()) {
    return Error{"shardwise verify", "--mpirun", "an MPI launcher (Debian: apt-get install openmpi-bin libopenmpi-dev)",
                 o.mpirun.empty() ? "no mpirun on PATH" : o.mpirun};
  }
  const std::string worker = o.worker.empty() ? self_dir() + "/shardwise-exec" : o.worker;
  if (access(worker.c_str(), X_OK) != 0) {
    return Error{"shardwise verify", "", "the MPI worker shardwise-exec beside shardwise (built when libopenmpi-dev is installed)",
                 worker + " is missing"};
  }
  const std::int64_t n = c->ranks();
  std::string choices;
  for (int i = 0; i < kNumSlots; ++i) choices += static_cast<char>('0' + o.plan.sharding[static_cast<std::size_t>(i)]);
  // a deadlock must not hang verify (or CI): mpirun kills the job after kRunLimitS (exit 110 here)
  std::vector<std::string> args{mpirun, "-q", "-n", std::to_string(n), "--oversubscribe", "--bind-to", "none", "--timeout",
                                std::to_string(kRunLimitS)};
  if (geteuid() == 0) args.emplace_back("--allow-run-as-root");
  const Degrees& d = o.plan.deg;
  for (const auto& s : std::vector<std::string>{worker, "--model", o.model, "--tp", std::to_string(d.tp), "--pp", std::to_string(d.pp), "--ep",
                                                std::to_string(d.ep), "--attn-dp", std::to_string(d.attn_dp), "--micro-batches",
                                                std::to_string(o.plan.micro_batches), "--choices", choices, "--seed", std::to_string(o.seed),
                                                "--decode-steps", std::to_string(o.decode_steps)}) {
    args.push_back(s);
  }
  if (o.fault.active()) {
    args.emplace_back("--drop");
    const char* phase = o.fault.phase < 0 ? "both" : to_string(static_cast<Phase>(o.fault.phase));
    args.push_back(fmt::format("{}:{}:{}:{}", o.fault.op, o.fault.layer, o.fault.index, phase));
  }
  if (!o.json.empty()) {
    args.emplace_back("--json");
    args.push_back(o.json);
  }
  if (o.quiet) args.emplace_back("--quiet");
  // the environment, plus Open MPI without cross-memory attach (ptrace is often denied in containers)
  std::vector<std::string> env;
  bool have_cma = false;
  for (char** e = environ; *e != nullptr; ++e) {
    env.emplace_back(*e);
    have_cma = have_cma || env.back().rfind("OMPI_MCA_btl_vader_single_copy_mechanism=", 0) == 0;
  }
  if (!have_cma) env.emplace_back("OMPI_MCA_btl_vader_single_copy_mechanism=none");
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  pid_t pid = 0;
  if (posix_spawn(&pid, mpirun.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0) {
    return Error{"shardwise verify", "--mpirun", "a launcher that can be started", mpirun};
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return Error{"shardwise verify", "", "the MPI run to finish", "waitpid failed"};
  if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 1)) return WEXITSTATUS(status);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 110) {
    std::printf("FAIL: the MPI run did not finish within %d s (a deadlock: ranks disagree on a collective)\n", kRunLimitS);
    return 1;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
    return Error{"shardwise verify", "", "input the MPI worker accepts", "it refused it (its message is above)"};
  }
  // 3: a rank stopped on an executor rule (it printed which): the plan did not run as the simulator says
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    std::printf("FAIL: the run stopped before the checks (see the rank's message above)\n");
    return 1;
  }
  return Error{"shardwise verify", "", "the MPI run to finish with PASS or FAIL",
               WIFEXITED(status) ? fmt::format("exit code {}", WEXITSTATUS(status)) : std::string("a signal")};
}

}  // namespace shardwise::exec
