// Host threads for work around the simulation that is plain arithmetic over large arrays: the
// functional check's reference and the generated inputs (a [1024, 8192] x [8192, 8192] matmul's
// reference is 137 GFLOP). The simulation itself stays on one thread (SystemC runs one).
#pragma once

#include <cstddef>
#include <functional>

namespace trnsim::base {

// How many threads such work may use: the processors this process may run on (its CPU
// affinity: taskset, a container's cpuset), at most TRNSIM_THREADS when that is set to a
// positive number (TRNSIM_THREADS=1 keeps everything on one thread).
unsigned host_threads();

// Runs body(begin, end) over [0, count) in consecutive chunks of `grain` items (the last may be
// shorter), on up to host_threads() threads, the caller's among them; returns when all are done.
// The chunks depend on count and grain alone, never on the number of threads, so a body whose
// result for a chunk depends only on the chunk gives the same bytes on any machine. An exception
// thrown by a body (std::bad_alloc) is rethrown here, after every thread has stopped.
void parallel_chunks(size_t count, size_t grain, const std::function<void(size_t, size_t)>& body);

}  // namespace trnsim::base
