// The processes of one command started by mpirun (sweep spreads its points over them).
// Without MPI in the build, or outside mpirun, there is one process. Wiring only: the
// command decides what each process does (docs/sweep.md).
#pragma once
#include <string>
#include <vector>

namespace shardwise {

struct ProcessGroup {
  int rank = 0, size = 1;
  bool mpi = false;  // MPI was initialised here (finalize it)
};
// From mpirun's environment (OMPI_COMM_WORLD_SIZE, PMI_SIZE): MPI is initialised only when
// the job has more than one process.
ProcessGroup join_process_group();
// Every process's lines on rank 0, in rank order (empty elsewhere).
std::vector<std::string> gather_lines(const ProcessGroup& g, const std::vector<std::string>& mine);
// Rank 0's exit status on every process (rank 0 passes its own; the others' argument is
// ignored): one process's failed write fails the whole job.
int share_status(const ProcessGroup& g, int rank0_status);
void leave_process_group(const ProcessGroup& g);

}  // namespace shardwise
