#include "isa/program.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

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

const std::string& Program::source_of(const Instruction& in) const {
  static const std::string none;
  return in.source > 0 && in.source <= sources.size() ? sources[in.source - 1] : none;
}

std::pair<uint32_t, uint32_t> Program::kernel_range(size_t k, Engine e) const {
  const auto size = static_cast<uint32_t>(stream(e).size());
  if (kernels.empty()) return {0, size};
  const uint32_t begin = kernels[k].first[index_of(e)];
  const uint32_t end = k + 1 < kernels.size() ? kernels[k + 1].first[index_of(e)] : size;
  return {begin, end};
}

namespace {

uint16_t shared_semaphore(Program& whole, const std::string& name) {
  for (size_t i = 0; i < whole.semaphores.size(); ++i) {
    if (whole.semaphores[i].name == name) return static_cast<uint16_t>(i);
  }
  return whole.add_semaphore(name);
}

}  // namespace

void append_kernel(Program& whole, const Program& kernel, const std::string& name,
                   const std::vector<std::pair<std::string, std::string>>& binding) {
  if (whole.kernels.empty() && whole.instruction_count() > 0) {
    throw std::invalid_argument("append_kernel: the program already holds an unnamed kernel");
  }
  // Semaphores: queue semaphores go with their queue, the others by name.
  std::vector<uint16_t> sem_map(kernel.semaphores.size(), 0);
  std::vector<bool> mapped(kernel.semaphores.size(), false);
  std::vector<uint16_t> queue_map(kernel.queues.size(), 0);
  for (size_t q = 0; q < kernel.queues.size(); ++q) {
    const DmaQueue& kq = kernel.queues[q];
    size_t found = whole.queues.size();
    for (size_t i = 0; i < whole.queues.size(); ++i) {
      if (whole.queues[i].name == kq.name) found = i;
    }
    if (found == whole.queues.size()) found = whole.add_queue(kq.name);
    queue_map[q] = static_cast<uint16_t>(found);
    sem_map[kq.semaphore] = whole.queues[found].semaphore;
    mapped[kq.semaphore] = true;
  }
  for (size_t i = 0; i < kernel.semaphores.size(); ++i) {
    if (!mapped[i]) sem_map[i] = shared_semaphore(whole, "k:" + kernel.semaphores[i].name);
  }
  // HBM tensors: kernel tensor i moves by delta[i].
  struct Move {
    uint64_t begin, end;
    int64_t delta;
  };
  std::vector<Move> moves;
  for (const DramTensor& t : kernel.dram_tensors) {
    std::string target = t.name;
    for (const auto& [from, to] : binding) {
      if (from == t.name) target = to;
    }
    const DramTensor* w = whole.find_dram_tensor(target);
    if (w == nullptr) {
      throw std::invalid_argument("append_kernel: kernel " + name + "'s tensor " + t.name +
                                  " is bound to " + target + ", which the program does not hold");
    }
    if (w->bytes() != t.bytes()) {
      throw std::invalid_argument("append_kernel: kernel " + name + "'s tensor " + t.name + " (" +
                                  std::to_string(t.bytes()) + " bytes) is bound to " + target +
                                  " of " + std::to_string(w->bytes()) + " bytes");
    }
    moves.push_back(Move{t.address, t.address + t.bytes(),
                         static_cast<int64_t>(w->address) - static_cast<int64_t>(t.address)});
  }
  auto relocate = [&](PatternRef& ref) {
    if (!ref.present() || ref->memory != Memory::hbm) return;
    for (const Move& m : moves) {
      if (ref->offset >= m.begin && ref->offset < m.end) {
        AccessPattern ap = ref;
        ap.offset = static_cast<uint64_t>(static_cast<int64_t>(ap.offset) + m.delta);
        ref = ap;  // shared with the kernel's other instructions that use the same pattern
        return;
      }
    }
  };
  KernelSpan span;
  span.name = name;
  for (Engine e : kAllEngines) {
    auto& out = whole.stream(e);
    span.first[index_of(e)] = static_cast<uint32_t>(out.size());
    for (Instruction in : kernel.stream(e)) {
      for (auto& w : in.waits) w.semaphore = sem_map[w.semaphore];
      for (auto& u : in.updates) u.semaphore = sem_map[u.semaphore];
      if (is_dma(in.opcode)) {
        in.dma_queue = queue_map[in.dma_queue];
        relocate(in.dst);
        relocate(in.src[0]);
      } else if (is_collective(in.opcode)) {
        relocate(in.dst);  // a collective names HBM tensors too
        relocate(in.src[0]);
      }
      out.push_back(std::move(in));
    }
  }
  whole.kernels.push_back(std::move(span));
}

Program kernel_program(const Program& program, size_t k) {
  Program out;
  out.name = program.kernels.empty() ? program.name : program.kernels[k].name;
  out.semaphores = program.semaphores;
  out.queues = program.queues;
  out.dram_tensors = program.dram_tensors;
  for (Engine e : kAllEngines) {
    const auto [begin, end] = program.kernel_range(k, e);
    const auto& s = program.stream(e);
    out.stream(e).assign(s.begin() + begin, s.begin() + end);
  }
  return out;
}

}  // namespace trnsim::isa
