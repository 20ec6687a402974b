// A build without MPI: one process, whatever the environment says.
#include "cli/dist.hpp"

namespace shardwise {
ProcessGroup join_process_group() { return {}; }
std::vector<std::string> gather_lines(const ProcessGroup&, const std::vector<std::string>& mine) { return mine; }
int share_status(const ProcessGroup&, int rank0_status) { return rank0_status; }
void leave_process_group(const ProcessGroup&) {}
}  // namespace shardwise
