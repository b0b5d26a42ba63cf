// Checks a Program against the rules of the hardware before anything runs: partition rules,
// access-pattern bounds, memory capacities, operand shapes, engines, semaphores and queues.
#pragma once

#include <stdexcept>
#include <string>

#include "config/arch.hpp"
#include "isa/program.hpp"

namespace trnsim::isa {

// Bounds for HBM access patterns (assumption: wide enough for any tensor the core's HBM holds,
// narrow enough that offsets computed from them cannot overflow 64 bits).
constexpr int64_t kMaxHbmStride = int64_t(1) << 36;
constexpr uint32_t kMaxHbmPartitions = 1u << 20;

class ValidationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws ValidationError naming the engine, the instruction index in its stream, the operand
// and the rule that failed.
void validate(const Program& program, const config::ArchConfig& arch);
// validate()'s rules for instruction `index` of engine e's stream (a streamed program checks
// each as it is lowered); `dram_bytes` is program.dram_bytes().
void validate_instruction(const Program& program, const config::ArchConfig& arch, Engine e,
                          size_t index, const Instruction& in, uint64_t dram_bytes);

// The rules for one instruction on its engine, against the program's semaphores, queues and
// HBM tensors; returns an empty string when they hold, else the reason (without a prefix).
std::string check_instruction(const Program& program, const config::ArchConfig& arch,
                              const Instruction& in);

// A collective's sizes over `ranks` ranks (nccom-test's convention, isa/collective.hpp):
// all_reduce, permute src = dst; all_to_all src = dst, a multiple of ranks; all_gather dst =
// src x ranks; reduce_scatter src = dst x ranks. Returns "" when they hold, else the reason.
std::string collective_size_error(const Instruction& in, uint32_t ranks);
// A send's or recv's partner among `ranks` cores: in range and not the core itself. `core` is
// the one core that runs the program (a program set), or -1 when every core runs it (SPMD).
std::string point_to_point_error(const Instruction& in, uint32_t ranks, int core);
// Throws ValidationError naming the first collective whose sizes do not suit `ranks`, or the
// first send/recv whose partner is out of range or itself (`core` as point_to_point_error's).
void validate_collectives(const Program& program, uint32_t ranks, int core = -1);
bool has_collectives(const Program& program);

// The rule for one access pattern alone; returns an empty string when it holds.
std::string check_access_pattern(const AccessPattern& ap, const config::ArchConfig& arch,
                                 uint64_t dram_bytes);

// Partition start rule (section 4): 65-128 partitions start at 0; 33-64 at 0 or 64;
// 32 or fewer at 0, 32, 64 or 96.
bool partition_start_allowed(uint32_t start, uint32_t count);

}  // namespace trnsim::isa
