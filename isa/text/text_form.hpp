// What the three text forms of a program share (internal to isa/text): the .tasm parser
// (tasm_parser.cpp), its printer (tasm_printer.cpp) and the JSON program form
// (program_json.cpp) write and read exactly the same options per opcode.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "isa/program.hpp"
#include "isa/text/assembly.hpp"

namespace trnsim::isa::text_form {

// An engine by its assembler name (pe, dve, act, pool, sp) or its key (tensor, vector, ...).
std::optional<Engine> parse_assembler_engine(std::string_view s);

// Which options an opcode takes; the printer and the JSON form write exactly these.
enum Field : uint32_t {
  kFunction = 1 << 0,
  kScale = 1 << 1,
  kBias = 1 << 2,
  kAccumulate = 1 << 3,
  kOp0 = 1 << 4,
  kOp1 = 1 << 5,
  kOperand0 = 1 << 6,
  kOperand1 = 1 << 7,
  kReduceDims = 1 << 8,
  kStartStop = 1 << 9,
  kQueue = 1 << 10,
  kAffine = 1 << 11,
  kFill = 1 << 12,
  kMask = 1 << 13,
  kReverse = 1 << 14,  // written only when set: earlier programs print as before
  kGather = 1 << 15,
  kBase = 1 << 16,        // index_base alone (range_select)
  kNegate = 1 << 17,      // written only when set
  kCollective = 1 << 18,  // cc=all_reduce|all_gather|reduce_scatter|all_to_all|permute
};
uint32_t fields_of(Opcode op);

// Access patterns written positionally: dst first, then the sources.
int positional_operands(Opcode op);

// A number as the printer writes it (shortest text that reads back the same).
std::string number_text(double v);

// A shape as [a, b, c], and an HBM tensor's init as the .tasm option writes it
// (zeros, normal(mean, stddev, seed=S), uniform(low, high, seed=S)).
std::string shape_text(const std::vector<int64_t>& shape);
std::string init_text(const TensorInit& i);

// An expectation's tensors exist and fit its reference function (what lowering computes);
// else AssemblyError at its line, or at `where` (a JSON path) in the JSON form.
void check_expectation(const Program& program, const std::string& file, const Expectation& e,
                       const std::string& where);

}  // namespace trnsim::isa::text_form
