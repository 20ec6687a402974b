// shardwise: the executable (the commands are in cli/app.cpp).
#include <csignal>

#include "cli/app.hpp"

int main(int argc, char** argv) {
  // a file-size limit (ulimit -f) makes write(2) fail with EFBIG instead of killing the
  // process, so an output file is left whole or not at all and the error names it
  std::signal(SIGXFSZ, SIG_IGN);
  return shardwise::run_cli(argc, argv);
}
