// Sweep and tune children share the host threads: -j N must not start N x host_threads() threads
// for the children's functional references on the same processors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "base/host_threads.hpp"
#include "sim/sweep/sweep.hpp"

namespace {

std::string threads_variable() {
  const char* v = std::getenv("TRNSIM_THREADS");
  return v == nullptr ? "(unset)" : v;
}

}  // namespace

TEST_CASE("children of -j N get an equal share of the host threads, unless the user set them") {
  unsetenv("TRNSIM_THREADS");
  const unsigned all = trnsim::base::host_threads();
  trnsim::sim::share_host_threads(1);  // one child at a time: it may use them all
  CHECK(threads_variable() == "(unset)");
  trnsim::sim::share_host_threads(2);
  CHECK(threads_variable() == std::to_string(std::max(1u, all / 2)));
  unsetenv("TRNSIM_THREADS");
  trnsim::sim::share_host_threads(static_cast<int>(all) * 4);  // more jobs than threads
  CHECK(threads_variable() == "1");
  setenv("TRNSIM_THREADS", "3", 1);  // the user's choice stands
  trnsim::sim::share_host_threads(2);
  CHECK(threads_variable() == "3");
  unsetenv("TRNSIM_THREADS");
}
