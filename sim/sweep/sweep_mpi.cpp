// trnsim built with TRNSIM_MPI: under mpirun or srun, `trnsim sweep` spreads the points over
// the ranks (point i on rank i mod N; each rank runs its points as child processes) and rank 0
// gathers the rows and writes the outputs. Only `trnsim sweep` initializes MPI; the points'
// own `trnsim run` processes never do.
#include <mpi.h>

#include <cstdlib>

#include "sim/sweep/sweep.hpp"

namespace trnsim::sim {

namespace {

class MpiComm : public SweepComm {
 public:
  MpiComm() {
    MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiComm() override { MPI_Finalize(); }
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::vector<std::string> gather(const std::string& mine) override {
    int length = static_cast<int>(mine.size());
    std::vector<int> lengths(rank_ == 0 ? size_ : 0);
    MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<int> offsets(lengths.size());
    int total = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = total;
      total += lengths[r];
    }
    std::string all(static_cast<size_t>(total), '\0');
    MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                0, MPI_COMM_WORLD);
    std::vector<std::string> parts;
    for (size_t r = 0; r < lengths.size(); ++r) parts.push_back(all.substr(offsets[r], lengths[r]));
    return parts;
  }

  int broadcast(int value) override {
    MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return value;
  }

  std::string broadcast_text(const std::string& text) override {
    int length = static_cast<int>(text.size());
    MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::string out = rank_ == 0 ? text : std::string(static_cast<size_t>(length), '\0');
    MPI_Bcast(out.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
    return out;
  }

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<SweepComm> mpi_comm() {
  // Started by a launcher (OpenMPI's mpirun, a PMI or PMIx launcher such as srun)? Without
  // one, the sweep runs in this process alone and MPI is never initialized.
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(var) != nullptr) return std::make_unique<MpiComm>();
  }
  return nullptr;
}

}  // namespace trnsim::sim
