#include "isa/validate.hpp"

#include <fmt/format.h>

namespace trnsim::isa {

bool partition_start_allowed(uint32_t start, uint32_t count) {
  if (count > 64) return start == 0;
  if (count > 32) return start == 0 || start == 64;
  return start % 32 == 0 && start <= 96;
}

std::string check_access_pattern(const AccessPattern& ap, const ArchConfig& arch,
                                 uint64_t dram_bytes) {
  if (ap.ndims > kMaxFreeDims) {
    return fmt::format("{} free dimensions, at most {}", ap.ndims, kMaxFreeDims);
  }
  for (int i = 0; i < ap.ndims; ++i) {
    if (ap.dims[i].count == 0) return fmt::format("free dimension {} has count 0", i);
  }
  const uint64_t esize = size_of(ap.dtype);
  if (ap.memory == Memory::hbm) {
    // Partition rows of an HBM pattern are only an addressing device: any count is allowed.
    const int64_t prow_lo =
        ap.partition_stride < 0 ? ap.partition_stride * (int64_t(ap.partitions) - 1) : 0;
    const int64_t prow_hi =
        ap.partition_stride > 0 ? ap.partition_stride * (int64_t(ap.partitions) - 1) : 0;
    const int64_t lo = static_cast<int64_t>(ap.offset) +
                       (prow_lo + ap.min_element_offset()) * static_cast<int64_t>(esize);
    const int64_t hi = static_cast<int64_t>(ap.offset) +
                       (prow_hi + ap.max_element_offset_exclusive()) * static_cast<int64_t>(esize);
    if (lo < 0 || static_cast<uint64_t>(hi) > dram_bytes) {
      return fmt::format("reaches HBM bytes [{}, {}), outside the {} bytes of the program's "
                         "HBM tensors",
                         lo, hi, dram_bytes);
    }
    if (static_cast<uint64_t>(hi) > arch.hbm_capacity_bytes) {
      return fmt::format("reaches HBM byte {}, beyond the core's {} bytes of HBM", hi,
                         arch.hbm_capacity_bytes);
    }
    return {};
  }
  if (ap.start_partition + ap.partitions > arch.partitions) {
    return fmt::format("partitions [{}, {}) exceed the {} partitions", ap.start_partition,
                       ap.start_partition + ap.partitions, arch.partitions);
  }
  if (!partition_start_allowed(ap.start_partition, ap.partitions)) {
    return fmt::format(
        "{} partitions cannot start at partition {} (65-128 start at 0; 33-64 at 0 or 64; "
        "32 or fewer at 0, 32, 64 or 96)",
        ap.partitions, ap.start_partition);
  }
  const uint64_t capacity =
      ap.memory == Memory::sbuf ? arch.sbuf_partition_bytes : arch.psum_partition_bytes;
  const int64_t lo =
      static_cast<int64_t>(ap.offset) + ap.min_element_offset() * static_cast<int64_t>(esize);
  const int64_t hi = static_cast<int64_t>(ap.offset) +
                     ap.max_element_offset_exclusive() * static_cast<int64_t>(esize);
  if (lo < 0 || static_cast<uint64_t>(hi) > capacity) {
    return fmt::format("reaches bytes [{}, {}) of each partition, outside the {} bytes of a {} "
                       "partition",
                       lo, hi, capacity, name_of(ap.memory));
  }
  return {};
}

namespace {

struct Checker {
  const Program& program;
  const ArchConfig& arch;
  Engine engine;
  size_t index;
  const Instruction& in;

  [[noreturn]] void fail(const std::string& what) const {
    std::string label = in.label.empty() ? "" : fmt::format(" '{}'", in.label);
    throw ValidationError(fmt::format("{} instruction {} ({}{}): {}", name_of(engine), index,
                                      name_of(in.opcode), label, what));
  }

  void operand(const char* name, const AccessPattern& ap) const {
    if (!ap.present()) fail(fmt::format("operand {} is missing", name));
    std::string err = check_access_pattern(ap, arch, program.dram_bytes());
    if (!err.empty()) fail(fmt::format("{} {}: {}", name, ap.to_string(), err));
  }

  void on_chip(const char* name, const AccessPattern& ap) const {
    if (ap.memory == Memory::hbm) fail(fmt::format("{} is in HBM; this engine reads SBUF/PSUM", name));
    if (ap.memory == Memory::psum && engine == Engine::gpsimd) {
      fail(fmt::format("{} is in PSUM, which GpSimdE cannot reach (A1)", name));
    }
    const uint64_t limit = ap.memory == Memory::psum ? arch.psum_free_elements_max
                                                     : arch.sbuf_free_elements_max;
    if (ap.free_elements() > limit) {
      fail(fmt::format("{} has {} elements per partition; at most {} from {}", name,
                       ap.free_elements(), limit, name_of(ap.memory)));
    }
  }

  void same_shape(const char* a_name, const AccessPattern& a, const char* b_name,
                  const AccessPattern& b) const {
    if (a.partitions != b.partitions || a.free_elements() != b.free_elements()) {
      fail(fmt::format("{} is [{} x {}] but {} is [{} x {}]", a_name, a.partitions,
                       a.free_elements(), b_name, b.partitions, b.free_elements()));
    }
  }

  void scalar(const char* name, const ScalarOperand& s, const AccessPattern& data) const {
    if (!s.per_partition.present()) return;
    operand(name, s.per_partition);
    on_chip(name, s.per_partition);
    if (s.per_partition.partitions != data.partitions || s.per_partition.free_elements() != 1) {
      fail(fmt::format("{} must be one value per partition, [{} x 1]", name, data.partitions));
    }
  }

  void run() const {
    if (!runs_on(in.opcode, engine)) {
      fail(fmt::format("{} does not run on {}", name_of(in.opcode), name_of(engine)));
    }
    for (const SemaphoreWait& w : in.waits) {
      if (w.semaphore >= program.semaphores.size()) {
        fail(fmt::format("waits on semaphore {}, but the program has {}", w.semaphore,
                         program.semaphores.size()));
      }
    }
    for (const SemaphoreUpdate& u : in.updates) {
      if (u.semaphore >= program.semaphores.size()) {
        fail(fmt::format("updates semaphore {}, but the program has {}", u.semaphore,
                         program.semaphores.size()));
      }
    }
    switch (in.opcode) {
      case Opcode::dma_copy:
        operand("src", in.src[0]);
        operand("dst", in.dst);
        same_shape("dst", in.dst, "src", in.src[0]);
        if (in.src[0].dtype != in.dst.dtype) fail("a DMA copy does not convert dtypes");
        if (in.dma_dge && arch.dma_dge_instruction_ns <= 0) {
          fail(fmt::format("asks for hardware descriptor generation (DGE), which {} does not have",
                           arch.name));
        }
        if (in.dma_queue >= program.queues.size()) {
          fail(fmt::format("uses DMA queue {}, but the program has {}", in.dma_queue,
                           program.queues.size()));
        }
        return;
      case Opcode::matmul: {
        operand("stationary", in.src[0]);
        operand("moving", in.src[1]);
        operand("dst", in.dst);
        on_chip("stationary", in.src[0]);
        on_chip("moving", in.src[1]);
        if (in.dst.memory != Memory::psum) fail("matmul writes PSUM only");
        if (in.dst.dtype != DType::fp32) fail("PSUM accumulation groups are fp32");
        const auto& st = in.src[0];
        const auto& mv = in.src[1];
        if (st.partitions != mv.partitions) {
          fail(fmt::format("stationary has {} partitions and moving {}: the contraction runs "
                           "over partitions and must match",
                           st.partitions, mv.partitions));
        }
        if (st.partitions > arch.pe_rows) {
          fail(fmt::format("contraction over {} partitions; the PE array has {} rows",
                           st.partitions, arch.pe_rows));
        }
        if (st.free_elements() > arch.pe_columns) {
          fail(fmt::format("stationary is {} wide; at most {} columns", st.free_elements(),
                           arch.pe_columns));
        }
        if (mv.free_elements() > arch.matmul_moving_max) {
          fail(fmt::format("moving is {} wide; at most {}", mv.free_elements(),
                           arch.matmul_moving_max));
        }
        if (in.dst.partitions != st.free_elements() ||
            in.dst.free_elements() != mv.free_elements()) {
          fail(fmt::format("dst must be [{} x {}] (stationary columns x moving columns), is "
                           "[{} x {}]",
                           st.free_elements(), mv.free_elements(), in.dst.partitions,
                           in.dst.free_elements()));
        }
        const uint64_t bank = arch.psum_partition_bytes / arch.psum_banks;
        if (in.dst.offset / bank != (in.dst.offset + in.dst.free_bytes() - 1) / bank) {
          fail(fmt::format("dst crosses a {}-byte PSUM bank boundary", bank));
        }
        return;
      }
      case Opcode::memset:
        operand("dst", in.dst);
        on_chip("dst", in.dst);
        return;
      case Opcode::tensor_reduce: {
        operand("src", in.src[0]);
        operand("dst", in.dst);
        on_chip("src", in.src[0]);
        on_chip("dst", in.dst);
        if (in.reduce_dims < 1 || in.reduce_dims > in.src[0].ndims) {
          fail(fmt::format("reduces {} free dimensions; src has {}", in.reduce_dims,
                           in.src[0].ndims));
        }
        uint64_t kept = 1;
        for (int i = 0; i < in.src[0].ndims - in.reduce_dims; ++i) kept *= in.src[0].dims[i].count;
        if (in.dst.partitions != in.src[0].partitions || in.dst.free_elements() != kept) {
          fail(fmt::format("dst must be [{} x {}] after reducing, is [{} x {}]",
                           in.src[0].partitions, kept, in.dst.partitions,
                           in.dst.free_elements()));
        }
        if (in.op0 != AluOp::add && in.op0 != AluOp::max && in.op0 != AluOp::min) {
          fail(fmt::format("reduces with {}; expected add, max or min", name_of(in.op0)));
        }
        return;
      }
      case Opcode::tensor_tensor:
        operand("src0", in.src[0]);
        operand("src1", in.src[1]);
        operand("dst", in.dst);
        on_chip("src0", in.src[0]);
        on_chip("src1", in.src[1]);
        on_chip("dst", in.dst);
        same_shape("dst", in.dst, "src0", in.src[0]);
        same_shape("dst", in.dst, "src1", in.src[1]);
        return;
      case Opcode::activation:
      case Opcode::tensor_scalar:
      case Opcode::tensor_copy:
        operand("src", in.src[0]);
        operand("dst", in.dst);
        on_chip("src", in.src[0]);
        on_chip("dst", in.dst);
        same_shape("dst", in.dst, "src", in.src[0]);
        if (in.opcode == Opcode::activation) {
          scalar("scale", in.scale, in.src[0]);
          scalar("bias", in.bias, in.src[0]);
          if (in.accumulate.present()) {
            operand("accumulate", in.accumulate);
            on_chip("accumulate", in.accumulate);
            if (in.accumulate.partitions != in.src[0].partitions ||
                in.accumulate.free_elements() != 1 || in.accumulate.dtype != DType::fp32) {
              fail(fmt::format("accumulate must be fp32 [{} x 1]", in.src[0].partitions));
            }
          }
        }
        if (in.opcode == Opcode::tensor_scalar) {
          scalar("operand0", in.operand0, in.src[0]);
          scalar("operand1", in.operand1, in.src[0]);
        }
        return;
    }
  }
};

}  // namespace

void validate(const Program& program, const ArchConfig& arch) {
  if (program.semaphores.size() > arch.semaphores) {
    throw ValidationError(fmt::format("the program uses {} semaphores; {} has {}",
                                      program.semaphores.size(), arch.name, arch.semaphores));
  }
  if (program.queues.size() > arch.dma_queues) {
    throw ValidationError(fmt::format("the program uses {} DMA queues; {} allows {}",
                                      program.queues.size(), arch.name, arch.dma_queues));
  }
  if (program.dram_bytes() > arch.hbm_capacity_bytes) {
    throw ValidationError(fmt::format("the program's HBM tensors take {} bytes; the core has {}",
                                      program.dram_bytes(), arch.hbm_capacity_bytes));
  }
  for (Engine e : kAllEngines) {
    const auto& stream = program.stream(e);
    for (size_t i = 0; i < stream.size(); ++i) {
      if (stream[i].engine != e) {
        throw ValidationError(fmt::format("{} instruction {} is marked for {}", name_of(e), i,
                                          name_of(stream[i].engine)));
      }
      Checker{program, arch, e, i, stream[i]}.run();
    }
  }
}

}  // namespace trnsim::isa
