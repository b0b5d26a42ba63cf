#include "base/host_threads.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace trnsim::base {

unsigned host_threads() {
  unsigned n = 1;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    n = static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
  } else {
    n = std::max(1u, std::thread::hardware_concurrency());
  }
  if (const char* v = std::getenv("TRNSIM_THREADS"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const long limit = std::strtol(v, &end, 10);
    // Anything but a positive number is ignored: the default is always a safe choice.
    if (end != v && *end == '\0' && limit > 0) n = std::min(n, static_cast<unsigned>(limit));
  }
  return n;
}

void parallel_chunks(size_t count, size_t grain, const std::function<void(size_t, size_t)>& body) {
  if (count == 0) return;
  grain = std::max<size_t>(grain, 1);
  const size_t chunks = (count + grain - 1) / grain;
  const size_t threads = std::min<size_t>(host_threads(), chunks);
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  // Each thread takes the next chunk until none is left: chunks of uneven cost balance.
  auto work = [&] {
    for (size_t c = next.fetch_add(1); c < chunks; c = next.fetch_add(1)) {
      try {
        body(c * grain, std::min(count, (c + 1) * grain));
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(chunks);  // the others stop at their next chunk
      }
    }
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones started (and this one) do the rest
    }
  }
  work();
  for (std::thread& t : helpers) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace trnsim::base
