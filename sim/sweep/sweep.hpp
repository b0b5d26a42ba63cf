// `trnsim sweep SWEEP.json`: architecture what-if studies. The sweep file (docs/sweeps.md)
// names workloads, a base arch and parameters to vary (a grid, zipped lists, or both); every
// point is one `trnsim run ... --set ...` in a child process of its own (SystemC runs one
// simulation per process), at most `jobs` at once, or spread over MPI ranks. Results: CSV and
// JSON (one row per point), a text table, a gnuplot SVG.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace trnsim::sim {

struct SweepOptions {
  std::string file;
  int jobs = 1;
  std::string out;  // empty: trnsim-sweep/<the sweep file's name without .json>
  bool resume = false;
  // The points' mode: the sweep file's "timing_only" (default true), unless one of these is set.
  bool full = false;         // run the functional model and its check too
  bool timing_only = false;  // timing only, whatever the file says
};

// How points are spread over processes: one (rank 0 of 1), or MPI ranks (sim/sweep_mpi.cpp).
class SweepComm {
 public:
  virtual ~SweepComm() = default;
  virtual int rank() const { return 0; }
  virtual int size() const { return 1; }
  // Every rank's `mine`, in rank order, on rank 0; empty on the others. Collective.
  virtual std::vector<std::string> gather(const std::string& mine) { return {mine}; }
  // Rank 0's `value` on every rank. Collective.
  virtual int broadcast(int value) { return value; }
  // Rank 0's `text` on every rank. Collective (trnsim tune: every rank's search goes on in step).
  virtual std::string broadcast_text(const std::string& text) { return text; }
};

// Every rank's `error` (empty: it read its inputs) reaches rank 0, which logs the first one;
// true on every rank when none had one. Collective: sweep and tune call it before any point.
bool every_rank_read_its_inputs(const std::string& error, SweepComm& comm);

// Before `jobs` child trnsims run at once: unless the user set TRNSIM_THREADS, each child's
// functional reference and inputs get an equal share of the host threads (at least one), so
// that -j N does not start N x host_threads() threads on the same processors.
void share_host_threads(int jobs);

// A child trnsim's error output as one line: "trnsim: error: " prefixes and usage lines
// dropped, lines joined with " | ", at most 600 characters (a failed sweep or tune point).
std::string child_error_line(const std::string& err);

// Exit code: 0 every point ran, 1 some point failed (or failed its functional check), 2 a bad
// sweep file or option (nothing ran).
int sweep(const SweepOptions& options, SweepComm& comm);

// The MPI world when this process was started by an MPI launcher (mpirun, srun) and trnsim
// was built with TRNSIM_MPI; nullptr otherwise. Defined in sim/sweep_mpi.cpp, or as nullptr.
std::unique_ptr<SweepComm> mpi_comm();
// The number of ranks an MPI launcher says this process is one of (1 when none).
int launcher_ranks();

}  // namespace trnsim::sim
