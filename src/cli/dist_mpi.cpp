// mpirun's processes over MPI (a build with Open MPI): a gather of text lines to rank 0.
#include <mpi.h>

#include <cstdlib>
#include <string>

#include "cli/dist.hpp"

namespace shardwise {

ProcessGroup join_process_group() {
  ProcessGroup g;
  int size = 1;
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    if (const char* v = std::getenv(var)) size = std::max(size, std::atoi(v));
  }
  if (size <= 1) return g;
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g.size);
  g.mpi = true;
  return g;
}

std::vector<std::string> gather_lines(const ProcessGroup& g, const std::vector<std::string>& mine) {
  if (!g.mpi || g.size == 1) return mine;
  std::string packed;
  for (const auto& l : mine) packed += l + "\n";
  int len = static_cast<int>(packed.size());
  std::vector<int> lens(static_cast<std::size_t>(g.size)), displ(static_cast<std::size_t>(g.size));
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (g.rank == 0) {
    int total = 0;
    for (int r = 0; r < g.size; ++r) {
      displ[static_cast<std::size_t>(r)] = total;
      total += lens[static_cast<std::size_t>(r)];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(packed.data(), len, MPI_CHAR, all.data(), lens.data(), displ.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (g.rank != 0) return out;
  std::size_t start = 0;
  while (start < all.size()) {
    const auto nl = all.find('\n', start);
    out.push_back(all.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

int share_status(const ProcessGroup& g, int rank0_status) {
  if (!g.mpi || g.size == 1) return rank0_status;
  int status = rank0_status;
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return status;
}

void leave_process_group(const ProcessGroup& g) {
  if (g.mpi) MPI_Finalize();
}

}  // namespace shardwise
