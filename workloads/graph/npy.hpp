// NumPy .npy files (format version 1.0/2.0): read float16/float32/float64 arrays in C order as
// graph inputs, and write outputs as float32 so users can check them in numpy
// (np.load("trnsim-out/y.npy")).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace trnsim::workloads {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses the contents of a .npy file; throws NpyError saying what is wrong.
NpyArray parse_npy(const std::string& bytes);
// The .npy file of a float32 array of `shape`.
std::string npy_bytes(const std::vector<int64_t>& shape, const std::vector<float>& values);

}  // namespace trnsim::workloads
