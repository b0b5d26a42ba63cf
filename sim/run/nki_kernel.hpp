// `trnsim run kernel.py`: an NKI kernel written in Python, traced by the trnsim Python package
// (python/trnsim/nki) into the JSON program form with its inputs, then run like any program.
// Tracing runs Debian's Python interpreter (the one CMake found, or $TRNSIM_PYTHON); the
// simulation is this process's, the same as for a JSON program.
#pragma once

#include <string>
#include <vector>

#include "sim/run/run.hpp"

namespace trnsim::sim {

struct NkiKernelOptions {
  std::string kernel;               // the nki.jit function to run (default: the file's only one)
  std::vector<std::string> inputs;  // NAME=SHAPE[:DTYPE] or NAME=FILE.npy, in any order
  std::string grid;                 // SPMD launch grid, e.g. "2" or "2,2"
  std::string lnc;                  // physical cores per logical core ("1" or "2"; empty: 1)
};

// Whether `path` names a Python kernel file.
bool is_python_kernel(const std::string& path);

// Traces and runs the kernel; prints the summary (or one error line) and returns the exit code:
// 2 when the kernel cannot be traced (an unsupported call, a broken NKI rule, bad inputs).
int run_nki_kernel(RunOptions options, const NkiKernelOptions& kernel);

}  // namespace trnsim::sim
