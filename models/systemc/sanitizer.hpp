// After sc_core::sc_start returns: tells AddressSanitizer the thread is back on its own stack
// (no-op in other builds). Every caller of sc_start (simulate(), SystemC-level tests) calls it.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define TRNSIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRNSIM_ASAN 1
#endif
#endif
#ifdef TRNSIM_ASAN
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace trnsim::models {

// AddressSanitizer builds only. SystemC's coroutines switch stacks; after sc_start returns,
// ASan still believes this thread runs on the last coroutine's stack (seen: "stack top:
// 0x7f2614600000" against a main-stack sp), so the next exception thrown on the main stack
// is not unpoisoned and ASan reports a false stack-buffer-overflow in its own sigaltstack call
// (google/sanitizers#189). Announcing a switch to the main thread's real stack puts its
// bounds back.
inline void restore_sanitizer_stack_bounds() {
#ifdef TRNSIM_ASAN
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* bottom = nullptr;
  size_t size = 0;
  const bool ok = pthread_attr_getstack(&attr, &bottom, &size) == 0;
  pthread_attr_destroy(&attr);
  if (!ok) return;
  __sanitizer_start_switch_fiber(nullptr, bottom, size);
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
}

}  // namespace trnsim::models
