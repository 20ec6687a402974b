// shardwise command line: argument parsing and wiring only (ARCHITECTURE.md). Each
// command is in its own file (cli/cmd_*.cpp); what they share is cli/common.hpp.
#include "cli/app.hpp"

#include <algorithm>
#include <cstdio>
#include <new>
#include <system_error>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/common.hpp"
#include "core/files.hpp"
#include "core/names.hpp"

namespace shardwise {
namespace {

// For each flag the command does not have, the one it most likely meant: a unique flag it
// begins (--tpot: --tpot-ms), else the closest by edit distance; or the command itself.
std::string flag_hints(CLI::App& app, int argc, const char* const* argv) {
  CLI::App* sub = nullptr;
  std::vector<std::string> commands;
  for (const CLI::App* c : app.get_subcommands({})) commands.push_back(c->get_name());
  int i = 1;
  for (; i < argc && sub == nullptr; ++i) {
    for (CLI::App* c : app.get_subcommands({})) {
      if (c->get_name() == argv[i]) sub = c;
    }
    if (sub == nullptr && argv[i][0] != '-') {
      return fmt::format("'{}' is not a command{}.\n", printable(argv[i]), did_you_mean(argv[i], commands));
    }
  }
  if (sub == nullptr) return "";
  std::vector<std::string> flags;
  for (const CLI::Option* o : sub->get_options()) {
    for (const auto& n : o->get_lnames()) flags.push_back("--" + n);
  }
  std::string out;
  for (; i < argc; ++i) {
    std::string word = argv[i];
    if (word.rfind("--", 0) != 0 || word == "--") continue;
    word = word.substr(0, word.find('='));
    if (std::find(flags.begin(), flags.end(), word) != flags.end()) continue;
    std::vector<std::string> begun;
    for (const auto& f : flags) {
      if (f.rfind(word, 0) == 0) begun.push_back(f);
    }
    const auto near = begun.size() == 1 ? std::optional<std::string>(begun.front()) : closest_name(word, flags);
    if (near) out += fmt::format("{}: did you mean {}?\n", printable(word), *near);
  }
  return out;
}

int run_cli_unguarded(int argc, const char* const* argv, const CliOptions& cli) {
  CLI::App app{
      "shardwise: plans how to shard a large language model over a GPU cluster for inference.\n"
      "It searches parallelism degrees and per-operator sharding and predicts throughput, latency and memory."};
  app.set_version_flag("--version", "shardwise 0.1.0");
  app.require_subcommand(1);
  app.fallthrough(false);
  std::vector<cli::Command> commands = cli::add_listings(app);
  commands.push_back(cli::add_describe(app));
  commands.push_back(cli::add_simulate(app));
  commands.push_back(cli::add_plan(app, cli));
  commands.push_back(cli::add_verify(app, cli));
  commands.push_back(cli::add_sweep(app, cli));
  commands.push_back(cli::add_launch(app));
  for (auto& c : cli::add_check(app)) commands.push_back(std::move(c));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "shardwise: %s\n%sRun 'shardwise --help' or 'shardwise <command> --help'.\n", printable(e.what()).c_str(),
                 flag_hints(app, argc, argv).c_str());
    return kExitBadInput;
  }
  for (const auto& c : commands) {
    if (c.sub->parsed()) return c.run();
  }
  return 0;
}

}  // namespace

int run_cli(int argc, const char* const* argv, const CliOptions& options) {
  // bad input is answered with exit 2 where it is found; anything thrown is a bug or the
  // machine refusing (no memory, no thread): exit 1 with a message, never a signal
  try {
    const int status = run_cli_unguarded(argc, argv, options);
    // what was printed must have arrived: a full disk or a closed pipe is exit 2, never 0
    if (auto e = flush_stdout()) return status != 0 ? status : cli::fail(*e);
    return status;
  } catch (const InternalError& e) {
    std::fprintf(stderr, "shardwise: internal error: %s\n", e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "shardwise: internal error: out of memory\n");
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "shardwise: internal error: the system refused a resource: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardwise: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "shardwise: internal error: an unknown exception\n");
  }
  return kExitInternal;
}

}  // namespace shardwise
