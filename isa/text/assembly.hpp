// The text assembly form of the ISA (.tasm) and its JSON form for tools. The grammar is in
// docs/isa.md. A parsed file is an Assembly: the program's tensors, buffers, semaphores and
// queues, its instructions in the order written, and what the file says about initial values
// and the expected results.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/arch.hpp"
#include "isa/program.hpp"

namespace trnsim::isa {

// A malformed program: names the file, the line and column, and what was expected.
class AssemblyError : public std::runtime_error {
 public:
  AssemblyError(const std::string& file, int line, int column, const std::string& what);
  int line;
  int column;
};

// An SBUF or PSUM region with a name: partitions [0, shape[0]) and row-major free dims.
struct OnChipBuffer {
  std::string name;
  Memory memory = Memory::sbuf;
  DType dtype = DType::fp32;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // bytes within each partition
  uint64_t partition_bytes() const;
};

// How an HBM tensor starts: zeros, N(mean, stddev) or U(low, high) from a seed.
struct TensorInit {
  enum class Kind { zeros, normal, uniform } kind = Kind::zeros;
  double a = 0.0;
  double b = 1.0;
  uint64_t seed = 0;
};

// `.expect OUTPUT = FUNCTION(INPUTS..., eps=...)`: the functional check of a program.
struct Expectation {
  std::string output;
  // rmsnorm, matmul, copy, or a collective's reference over every core's input:
  // all_reduce_{add,max,min}, all_gather, reduce_scatter_{add,max,min}, all_to_all, permute;
  // or recv(x, peer=+K / -K, scale=S): S x the input of the core K after (before) this one.
  std::string function;
  std::vector<std::string> inputs;
  double eps = 1e-6;
  uint32_t group = 0;  // a collective's reference: over groups of this many cores (0: all)
  // recv's reference: core c expects its input from core c + peer (modulo the run's cores).
  int32_t peer = 0;
  double scale = 1.0;  // recv's reference: the partner's input times this (what it computed)
  int line = 0;
};

// The reference functions of `.expect` and whether `name` is one; a collective's reference
// (all_reduce_add, ...) is computed over every core's inputs.
bool known_reference(const std::string& name);
std::string reference_names();
bool is_collective_reference(const std::string& name);

struct Assembly {
  std::string file;
  std::string arch;       // `.arch NAME`, empty when the file does not say
  bool auto_sync = true;  // `.sync auto` (default) or `.sync manual`
  // `.cores N`: the program runs on N NeuronCores of the chip (the ranks of its collectives);
  // core c draws each init with seed + c, so that the cores' inputs differ.
  uint32_t cores = 1;
  uint32_t chips = 1;  // `.chips C`: the cores spread over C chips (docs/chip.md)
  Program program;     // tensors, semaphores, queues; the streams are filled by synchronize
  std::vector<Instruction> sequence;  // every instruction, in the order written
  std::vector<int> sequence_lines;    // source line of each
  std::vector<OnChipBuffer> buffers;
  std::vector<std::pair<std::string, TensorInit>> inits;  // per HBM tensor with an init
  std::vector<Expectation> expectations;
  // JSON form only: tensors whose initial values come from a .npy file ("data", a path relative
  // to the program file), and tensors written as <out>/<name>.npy after a run ("output": true).
  std::vector<std::pair<std::string, std::string>> data_files;
  std::vector<std::string> outputs;
};

Assembly parse_assembly(const std::string& text, const std::string& file,
                        const config::ArchConfig& arch);

// Text that parses back to the same program (streams as they are, `.sync manual`). Buffers,
// inits and expectations are printed when given.
std::string print_assembly(const Program& program, const std::vector<OnChipBuffer>& buffers = {},
                           const std::vector<std::pair<std::string, TensorInit>>& inits = {},
                           const std::vector<Expectation>& expectations = {});

// The JSON form: the same content, for tools. from_json throws AssemblyError on bad input.
nlohmann::json to_json(const Program& program, const std::vector<OnChipBuffer>& buffers = {},
                       const std::vector<std::pair<std::string, TensorInit>>& inits = {},
                       const std::vector<Expectation>& expectations = {});
Assembly from_json(const nlohmann::json& j, const std::string& file);

}  // namespace trnsim::isa
