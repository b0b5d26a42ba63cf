// load_elements / store_elements (the runs the functional model reads and writes) give exactly
// what load_element / store_element give one element at a time, for every dtype and stride.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "isa/dtype.hpp"

using trnsim::isa::DType;

namespace {

// Floats from bit patterns that cover the corners: zeros, denormals, ties, infinities, NaNs.
std::vector<float> awkward_floats() {
  std::vector<uint32_t> bits = {0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x3f808000,
                                0x3f818000, 0x3f80ffff, 0x7f7fffff, 0xff7fffff, 0x7f800000,
                                0xff800000, 0x7f800001, 0xffc00000, 0x7fbfffff, 0x7fffffff,
                                0x477fe000, 0x477ff000, 0xc3800000, 0x4f000000, 0xcf000000};
  uint32_t x = 0x9e3779b9;
  for (int i = 0; i < 4000; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    bits.push_back(x);
  }
  std::vector<float> f(bits.size());
  std::memcpy(f.data(), bits.data(), bits.size() * sizeof(float));
  return f;
}

}  // namespace

TEST_CASE("runs of elements convert exactly as single elements do, for every dtype and stride") {
  const std::vector<float> values = awkward_floats();
  const auto n = static_cast<uint32_t>(values.size());
  for (DType t : trnsim::isa::kAllDTypes) {
    const size_t es = trnsim::isa::size_of(t);
    for (int64_t stride : {1, 3}) {
      INFO("dtype " << trnsim::isa::name_of(t) << " stride " << stride);
      std::vector<uint8_t> one(n * es * stride, 0xab), run(n * es * stride, 0xab);
      for (uint32_t i = 0; i < n; ++i) {
        trnsim::isa::store_element(t, one.data() + i * es * stride, values[i]);
      }
      trnsim::isa::store_elements(t, run.data(), stride, n, values.data());
      CHECK(one == run);
      std::vector<float> back_one(n), back_run(n);
      for (uint32_t i = 0; i < n; ++i) {
        back_one[i] = trnsim::isa::load_element(t, one.data() + i * es * stride);
      }
      trnsim::isa::load_elements(t, one.data(), stride, n, back_run.data());
      CHECK(std::memcmp(back_one.data(), back_run.data(), n * sizeof(float)) == 0);
    }
  }
}
