// Input data as a user gives it (.npy files): every layout numpy writes is read as the values it
// holds, or refused; never taken in the wrong order with a check that cannot see it.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

#include "cli_support.hpp"
#include "workloads/graph/npy.hpp"

using namespace trnsim_test;
using Catch::Matchers::Contains;

namespace {

// A float32 .npy file of `rows` x `cols` holding a[i][j] = i * cols + j, written in Fortran
// order (np.asfortranarray) and/or big-endian ('>f4') as numpy does.
std::string arange_npy(int rows, int cols, bool fortran, bool big_endian) {
  std::string header = fmt::format("{{'descr': '{}f4', 'fortran_order': {}, 'shape': ({}, {}), }}",
                                   big_endian ? ">" : "<", fortran ? "True" : "False", rows, cols);
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  for (int n = 0; n < rows * cols; ++n) {
    const int i = fortran ? n % rows : n / cols;
    const int j = fortran ? n / rows : n % cols;
    const float v = static_cast<float>(i * cols + j);
    char b[4];
    std::memcpy(b, &v, 4);
    if (big_endian) std::swap(b[0], b[3]), std::swap(b[1], b[2]);
    out.append(b, 4);
  }
  return out;
}

}  // namespace

// Issue 18, item 1: the reproduction as filed. Before, xF.npy was read as C order by both the
// run and its reference: PASS, exit 0, and y.npy - 2 * xF had a maximum of 260610.
TEST_CASE("a Fortran-order or big-endian .npy input gives y = 2x exactly, as a C-order one does") {
  for (const bool fortran : {false, true}) {
    for (const bool big : {false, true}) {
      const std::string tag = fmt::format("npy_layout_{}{}", fortran ? "F" : "C", big ? "B" : "L");
      INFO(tag);
      const std::string dir = fresh_dir(tag);
      write_file(dir, "x.npy", arange_npy(256, 512, fortran, big));
      const std::string w = write_file(
          dir, "w.json",
          R"({"mode":"eager","dtype":"fp32","inputs":{"x":{"shape":[256,512],"npy":"x.npy"}},)"
          R"("ops":[{"op":"mul","args":["x",2],"out":"y"}],"outputs":["y"]})");
      const Invocation r = trnsim_test::trnsim(w + " --no-report --out " + dir + "/out", dir);
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
      const trnsim::workloads::NpyArray y = trnsim::workloads::parse_npy(slurp(dir + "/out/y.npy"));
      REQUIRE(y.shape == std::vector<int64_t>{256, 512});
      double worst = 0;
      for (size_t n = 0; n < y.values.size(); ++n) {
        worst = std::max(worst, std::abs(y.values[n] - 2.0 * static_cast<double>(n)));
      }
      CHECK(worst == 0);
    }
  }
}

// The JSON program form's "data" files used to be checked by element count only: a transposed
// (or flattened) array of the same size filled the tensor in the wrong order.
TEST_CASE("a JSON program's data file of another shape than its tensor is refused") {
  const std::string dir = fresh_dir("npy_program_shape");
  const Invocation assembled =
      trnsim_test::trnsim("asm " + example("rmsnorm_manual.tasm") + " -o " + dir + "/p.json", dir);
  REQUIRE(assembled.exit_code == 0);
  nlohmann::json p = read_json(dir + "/p.json");
  for (auto& t : p["tensors"]) {
    if (t["name"] == "x") t["data"] = "xT.npy";
  }
  write_file(dir, "p.json", p.dump(1));
  write_file(dir, "xT.npy", arange_npy(512, 256, false, false));  // x is [256, 512]
  const Invocation r = trnsim_test::trnsim(dir + "/p.json --no-report --out " + dir + "/out", dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Contains("p.json: tensor x: " + dir +
                             "/xT.npy holds shape [512, 256]; the "
                             "tensor is declared [256, 512]"));
  CHECK_FALSE(std::filesystem::exists(dir + "/out/stats.json"));
}
