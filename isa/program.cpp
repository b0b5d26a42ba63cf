#include "isa/program.hpp"

#include <algorithm>

namespace trnsim::isa {

uint64_t DramTensor::elements() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

uint16_t Program::add_semaphore(std::string sem_name) {
  semaphores.push_back(Semaphore{std::move(sem_name)});
  return static_cast<uint16_t>(semaphores.size() - 1);
}

uint16_t Program::add_queue(std::string queue_name) {
  const uint16_t sem = add_semaphore(queue_name);
  queues.push_back(DmaQueue{std::move(queue_name), sem});
  return static_cast<uint16_t>(queues.size() - 1);
}

const DramTensor& Program::add_dram_tensor(std::string tensor_name, DType dtype,
                                           std::vector<int64_t> shape) {
  constexpr uint64_t kAlign = 64;
  const uint64_t address = (dram_bytes() + kAlign - 1) / kAlign * kAlign;
  dram_tensors.push_back(DramTensor{std::move(tensor_name), dtype, std::move(shape), address});
  return dram_tensors.back();
}

const DramTensor* Program::find_dram_tensor(const std::string& tensor_name) const {
  for (const DramTensor& t : dram_tensors) {
    if (t.name == tensor_name) return &t;
  }
  return nullptr;
}

uint64_t Program::dram_bytes() const {
  uint64_t end = 0;
  for (const DramTensor& t : dram_tensors) end = std::max(end, t.address + t.bytes());
  return end;
}

uint64_t Program::instruction_count() const {
  uint64_t n = 0;
  for (const auto& s : streams) n += s.size();
  return n;
}

}  // namespace trnsim::isa
