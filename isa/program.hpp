// A Program: one in-order instruction stream per engine, the semaphores and DMA queues they
// synchronize through, and the HBM tensors they read and write. One Program is one kernel
// launch on one NeuronCore.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "isa/instruction.hpp"

namespace trnsim::isa {

struct Semaphore {
  std::string name;
};

// A DMA queue completes its transfers in order and raises its own semaphore by the number of
// DMA engines that took part in each (D1), so the semaphore is named after the queue.
struct DmaQueue {
  std::string name;
  uint16_t semaphore = 0;
};

struct DramTensor {
  std::string name;
  DType dtype = DType::fp32;
  std::vector<int64_t> shape;
  uint64_t address = 0;
  uint64_t elements() const;
  uint64_t bytes() const { return elements() * size_of(dtype); }
};

struct Program {
  std::string name;
  std::array<std::vector<Instruction>, kEngineCount> streams;
  std::vector<Semaphore> semaphores;
  std::vector<DmaQueue> queues;
  std::vector<DramTensor> dram_tensors;

  std::vector<Instruction>& stream(Engine e) { return streams[index_of(e)]; }
  const std::vector<Instruction>& stream(Engine e) const { return streams[index_of(e)]; }
  uint16_t add_semaphore(std::string name);
  uint16_t add_queue(std::string name);  // also adds the queue's semaphore
  // Places a tensor in HBM after the ones already there, aligned to 64 bytes; returns it.
  const DramTensor& add_dram_tensor(std::string name, DType dtype, std::vector<int64_t> shape);
  const DramTensor* find_dram_tensor(const std::string& name) const;
  uint64_t dram_bytes() const;  // end of the highest tensor
  uint64_t instruction_count() const;
};

}  // namespace trnsim::isa
