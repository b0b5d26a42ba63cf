// NumPy .npy files (format versions 1, 2 and 3): read float16/float32/float64 arrays, either
// byte order, C or Fortran order, as graph and program inputs (values in C order: what the
// tensor holds); write outputs as float32 in C order so users can check them in numpy
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

// Parses the contents of a .npy file; throws NpyError saying what is wrong (a header that is
// not numpy's dict of descr, fortran_order and shape, an unsupported dtype, data that is not
// exactly shape's elements).
NpyArray parse_npy(const std::string& bytes);
// The .npy file of a float32 array of `shape`.
std::string npy_bytes(const std::vector<int64_t>& shape, const std::vector<float>& values);

}  // namespace trnsim::workloads
