// A simulator-speed micro-benchmark (bench/): one engine runs a long stream of identical small
// instructions, with no semaphore between them, so that the simulation's cost per instruction
// shows without DMA or synchronization around it.
//
//   {"kernel": "engine_stream", "engine": "vector", "instructions": 1000000,
//    "shape": [128, 64], "dtype": "bf16"}
//
// SyncE loads x [partitions, elements] into SBUF; the engine then runs `instructions` times
// y = x * 2 - 1 (tensor_scalar on VectorE and GpSimdE, activation identity with scale 2 and bias
// -1 on ScalarE), every one reading x and writing the same y tile, the first waiting for the
// load and the last raising a semaphore; SyncE stores y. The check compares y with 2x - 1.
// The stream lives in the program (one Instruction each), so its memory grows with
// `instructions`; workloads describe no loops.
#pragma once

#include "workloads/kernels/kernel.hpp"

namespace trnsim::workloads {

struct EngineStreamChoices {
  Engine engine = Engine::vector;  // vector, scalar or gpsimd
  uint64_t instructions = 1000;    // 1 .. arch.max_instructions
};

EngineStreamChoices parse_engine_stream_choices(const Workload& w, const config::ArchConfig& arch);
LoweredKernel lower_engine_stream(const Workload& w, const config::ArchConfig& arch,
                                  bool functional);

}  // namespace trnsim::workloads
