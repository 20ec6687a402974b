// libFuzzer harness for the command line's argument vector (run_cli): the input is split
// at newlines into arguments; the first must be simulate, plan, launch or describe. Any
// argument vector must end in exit 0 or 2: exit 1 (an internal error) or a signal is a
// finding. The harness forbids file writes (--out, --report, --save-policy) and verify,
// and gives `plan` a tiny budget, one thread and a time limit, so that each run is short.
// Run with -close_fd_mask=3 (fuzz/run.sh does): the commands' own output is not wanted.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "cli/app.hpp"

namespace {
bool starts_with(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardwise;
  if (size > 4096) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args{"shardwise"};
  std::size_t at = 0;
  while (at <= text.size() && args.size() < 40) {
    const std::size_t nl = text.find('\n', at);
    std::string a = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    // the harness sets these itself (CLI11 refuses an option given twice)
    for (const char* own : {"--budget", "--threads", "--time-limit", "--compare"}) {
      if (starts_with(a, own)) a = "--json";
    }
    args.push_back(a);
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  if (args.size() < 2) return 0;
  const std::string& cmd = args[1];
  if (cmd != "simulate" && cmd != "plan" && cmd != "launch" && cmd != "describe") return 0;
  if (cmd == "plan") {
    for (const char* a : {"--budget", "8", "--threads", "1", "--time-limit", "0.5"}) args.emplace_back(a);
  }
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  CliOptions o;
  o.allow_writes = false;
  o.allow_verify = false;
  const int rc = run_cli(static_cast<int>(argv.size()), argv.data(), o);
  if (rc != kExitOk && rc != kExitBadInput) std::abort();  // an internal error is a bug
  return 0;
}
