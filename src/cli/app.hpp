// The shardwise command line as a function (wiring only, ARCHITECTURE.md): the
// executable's main calls it, and so does the fuzz harness of the argument vector.
#pragma once

namespace shardwise {

// Exit codes: 0 success (an infeasible plan is a result: exit 0 with why); 1 an
// internal error (a broken invariant or an exception), with a message, never a signal;
// 2 bad input: the message names the file or flag, the field, what was expected and
// what was found.
constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;

struct CliOptions {
  bool allow_writes = true;  // false: refuse options that write files (the fuzz harness)
  bool allow_verify = true;  // false: refuse `verify` (it spawns mpirun)
};

// Runs one command; never throws.
int run_cli(int argc, const char* const* argv, const CliOptions& options = {});

}  // namespace shardwise
