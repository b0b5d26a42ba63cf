// .npy inputs (workloads::parse_npy: graph inputs, the JSON program form's data files, NKI
// kernels' --input): any bytes give an array or NpyError (never another exception, a crash, a
// hang or an allocation the file does not back), and an array read
// - holds exactly as many values as its shape has elements;
// - reads back identically (shape and every value's bits) from the float32 C-order file
//   npy_bytes writes of it, the form trnsim writes its outputs in.
#include <cstdlib>
#include <cstring>

#include "fuzz/fuzz_support.hpp"
#include "workloads/graph/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace w = trnsim::workloads;
  const std::string bytes = trnsim_fuzz::text_of(data, size);
  w::NpyArray a;
  try {
    a = w::parse_npy(bytes);
  } catch (const w::NpyError&) {
    return 0;
  }
  size_t elements = 1;
  for (const int64_t d : a.shape) {
    if (d < 0) std::abort();
    elements *= static_cast<size_t>(d);
  }
  if (a.values.size() != elements) std::abort();
  const w::NpyArray back = w::parse_npy(w::npy_bytes(a.shape, a.values));
  if (back.shape != a.shape || back.values.size() != a.values.size()) std::abort();
  if (!a.values.empty() &&
      std::memcmp(back.values.data(), a.values.data(), a.values.size() * sizeof(float)) != 0) {
    std::abort();
  }
  return 0;
}
