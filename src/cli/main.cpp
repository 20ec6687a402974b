// shardwise: the executable (the commands are in cli/app.cpp).
#include "cli/app.hpp"

int main(int argc, char** argv) { return shardwise::run_cli(argc, argv); }
