// trnsim built without MPI (TRNSIM_MPI=OFF, or no MPI found): sweeps run in one process tree.
#include "sim/sweep/sweep.hpp"

namespace trnsim::sim {

std::unique_ptr<SweepComm> mpi_comm() {
  return nullptr;
}

}  // namespace trnsim::sim
