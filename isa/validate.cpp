#include "isa/validate.hpp"

#include <fmt/format.h>

#include <utility>

namespace trnsim::isa {

bool partition_start_allowed(uint32_t start, uint32_t count) {
  if (count > 64) return start == 0;
  if (count > 32) return start == 0 || start == 64;
  return start % 32 == 0 && start <= 96;
}

std::string check_access_pattern(const AccessPattern& ap, const config::ArchConfig& arch,
                                 uint64_t dram_bytes) {
  if (ap.ndims > kMaxFreeDims) {
    return fmt::format("{} free dimensions, at most {}", ap.ndims, kMaxFreeDims);
  }
  // Section 4: a free dimension's count is a uint16 and its stride an int16 (on-chip). HBM
  // patterns get wider strides and partition counts (assumption: they address whole tensors),
  // bounded so that no offset arithmetic below can overflow.
  const bool hbm = ap.memory == Memory::hbm;
  const int64_t stride_limit = hbm ? kMaxHbmStride : 32767;
  for (int i = 0; i < ap.ndims; ++i) {
    if (ap.dims[i].count == 0 || ap.dims[i].count > 65535) {
      return fmt::format("free dimension {} has count {}; a count is 1 to 65535", i,
                         ap.dims[i].count);
    }
    if (ap.dims[i].stride > stride_limit || ap.dims[i].stride < -stride_limit) {
      return fmt::format("free dimension {} has stride {}; at most {} in magnitude", i,
                         ap.dims[i].stride, stride_limit);
    }
  }
  if (hbm && (ap.partitions > kMaxHbmPartitions || ap.partition_stride > kMaxHbmStride ||
              ap.partition_stride < -kMaxHbmStride)) {
    return fmt::format("{} partition rows of stride {}; at most {} rows of stride up to {}",
                       ap.partitions, ap.partition_stride, kMaxHbmPartitions, kMaxHbmStride);
  }
  if (ap.offset > (uint64_t(1) << 50)) return fmt::format("offset {} is out of range", ap.offset);
  const uint64_t esize = size_of(ap.dtype);
  if (hbm) {
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
      return fmt::format(
          "reaches HBM bytes [{}, {}), outside the {} bytes of the program's "
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
    return fmt::format(
        "reaches bytes [{}, {}) of each partition, outside the {} bytes of a {} "
        "partition",
        lo, hi, capacity, name_of(ap.memory));
  }
  return {};
}

namespace {

struct Checker {
  const Program& program;
  const config::ArchConfig& arch;
  Engine engine;
  size_t index;
  const Instruction& in;
  uint64_t dram_bytes;  // program.dram_bytes(), computed once per program, not per operand

  [[noreturn]] void fail(const std::string& what) const {
    std::string label = in.label.empty() ? "" : fmt::format(" '{}'", in.label);
    throw ValidationError(fmt::format("{} instruction {} ({}{}): {}", name_of(engine), index,
                                      name_of(in.opcode), label, what));
  }

  void operand(const char* name, const AccessPattern& ap) const {
    if (!ap.present()) fail(fmt::format("operand {} is missing", name));
    std::string err = check_access_pattern(ap, arch, dram_bytes);
    if (!err.empty()) fail(fmt::format("{} {}: {}", name, ap.to_string(), err));
  }

  void on_chip(const char* name, const AccessPattern& ap) const {
    if (ap.memory == Memory::hbm)
      fail(fmt::format("{} is in HBM; this engine reads SBUF/PSUM", name));
    if (ap.memory == Memory::psum && engine == Engine::gpsimd) {
      fail(fmt::format("{} is in PSUM, which GpSimdE cannot reach (A1)", name));
    }
    const uint64_t limit =
        ap.memory == Memory::psum ? arch.psum_free_elements_max : arch.sbuf_free_elements_max;
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
    if (!s.per_partition().present()) return;
    operand(name, s.per_partition());
    on_chip(name, s.per_partition());
    if (s.per_partition()->partitions != data.partitions ||
        s.per_partition()->free_elements() != 1) {
      fail(fmt::format("{} must be one value per partition, [{} x 1]", name, data.partitions));
    }
  }

  void alu(const char* name, AluOp op, bool reduction_allowed) const {
    if (op == AluOp::mean && !reduction_allowed) {
      fail(fmt::format("{} is mean, which only reductions take", name));
    }
    if (is_bitwise(op)) {
      for (const AccessPattern* ap : {&in.dst.get(), &in.src[0].get(), &in.src[1].get()}) {
        if (ap->present() && !is_integer(ap->dtype)) {
          fail(fmt::format("{} is {}, which takes integer operands; {} is {}", name, name_of(op),
                           ap->to_string(), name_of(ap->dtype)));
        }
      }
    }
  }

  // DMA paths (issue 4 / D1): HBM<->SBUF, SBUF<->SBUF, SBUF<->PSUM, HBM->HBM. An on-chip side
  // moves at most one partition's capacity per partition; an HBM-to-HBM copy at most the
  // program's HBM.
  // Bytes an access pattern moves, saturating instead of overflowing.
  static uint64_t bytes_of(const AccessPattern& ap, bool per_partition) {
    uint64_t n = size_of(ap.dtype);
    for (int i = 0; i < ap.ndims; ++i) {
      if (__builtin_mul_overflow(n, uint64_t(ap.dims[i].count), &n)) return UINT64_MAX;
    }
    if (!per_partition && __builtin_mul_overflow(n, uint64_t(ap.partitions), &n)) return UINT64_MAX;
    return n;
  }

  void dma_paths() const {
    const Memory a = in.src[0]->memory, b = in.dst->memory;
    if ((a == Memory::hbm && b == Memory::psum) || (a == Memory::psum && b == Memory::hbm)) {
      fail("DMA between HBM and PSUM is not a path: go through SBUF");
    }
    if (a == Memory::psum && b == Memory::psum) fail("DMA from PSUM to PSUM is not a path");
    for (const AccessPattern* ap : {&in.src[0].get(), &in.dst.get()}) {
      if (ap->memory == Memory::hbm) continue;
      const uint64_t cap =
          ap->memory == Memory::sbuf ? arch.sbuf_partition_bytes : arch.psum_partition_bytes;
      if (bytes_of(*ap, true) > cap) {
        fail(fmt::format("moves {} bytes per partition of {}; a partition holds {}",
                         bytes_of(*ap, true), name_of(ap->memory), cap));
      }
    }
    if (a == Memory::hbm && b == Memory::hbm && bytes_of(in.dst, false) > dram_bytes) {
      fail(fmt::format("an HBM-to-HBM copy of {} bytes; the program's HBM tensors hold {}",
                       bytes_of(in.dst, false), dram_bytes));
    }
  }

  // src0 and dst on chip, of one shape.
  void unary_on_chip() const {
    operand("src", in.src[0]);
    operand("dst", in.dst);
    on_chip("src", in.src[0]);
    on_chip("dst", in.dst);
    same_shape("dst", in.dst, "src", in.src[0]);
  }

  // src0, src1 and dst on chip, of one shape, the two sources not both in PSUM.
  void binary_on_chip() const {
    operand("src0", in.src[0]);
    operand("src1", in.src[1]);
    operand("dst", in.dst);
    on_chip("src0", in.src[0]);
    on_chip("src1", in.src[1]);
    on_chip("dst", in.dst);
    same_shape("dst", in.dst, "src0", in.src[0]);
    same_shape("dst", in.dst, "src1", in.src[1]);
    if (in.src[0]->memory == Memory::psum && in.src[1]->memory == Memory::psum) {
      fail("src0 and src1 are both in PSUM; two inputs may not both be (I1)");
    }
  }

  // An fp32 [P x 1] result (a reduction per partition).
  void per_partition_result(const char* name, const AccessPattern& ap, bool required) const {
    if (!ap.present()) {
      if (required) fail(fmt::format("operand {} is missing", name));
      return;
    }
    operand(name, ap);
    on_chip(name, ap);
    if (ap.partitions != in.src[0]->partitions || ap.free_elements() != 1 ||
        ap.dtype != DType::fp32) {
      fail(fmt::format("{} must be fp32 [{} x 1]", name, in.src[0]->partitions));
    }
  }

  // A collective's rules that do not depend on the number of ranks (ranks_error has those):
  // src and dst in HBM (the collective engines move HBM buffers, as nccom-test's do), one
  // dtype, and a reduction (add, max, min) exactly when the op reduces.
  void collective() const {
    if (is_point_to_point(in.collective_op)) {
      point_to_point();
      return;
    }
    if (in.peer_kind != PeerKind::none)
      fail(fmt::format("peer= is for cc=send and cc=recv, not {}", name_of(in.collective_op)));
    operand("src", in.src[0]);
    operand("dst", in.dst);
    for (const auto& [name, ap] :
         {std::pair<const char*, const AccessPattern*>{"src", &in.src[0].get()},
          std::pair<const char*, const AccessPattern*>{"dst", &in.dst.get()}}) {
      if (ap->memory != Memory::hbm) {
        fail(fmt::format("{} {} is in {}; a collective moves HBM tensors", name, ap->to_string(),
                         name_of(ap->memory)));
      }
    }
    if (in.src[0]->dtype != in.dst->dtype) {
      fail(fmt::format("src is {} but dst is {}; a collective does not convert dtypes",
                       name_of(in.src[0]->dtype), name_of(in.dst->dtype)));
    }
    const bool reduces = in.collective_op == CollectiveOp::all_reduce ||
                         in.collective_op == CollectiveOp::reduce_scatter;
    if (reduces && in.op0 != AluOp::add && in.op0 != AluOp::max && in.op0 != AluOp::min) {
      fail(fmt::format("{} reduces with op0 add, max or min; op0 is {}", name_of(in.collective_op),
                       name_of(in.op0)));
    }
    if (!reduces && in.op0 != AluOp::bypass) {
      fail(fmt::format("{} does not reduce; op0 must be bypass (is {})", name_of(in.collective_op),
                       name_of(in.op0)));
    }
    if (is_integer(in.dst->dtype) && reduces) {
      fail("a reducing collective takes floating-point data");
    }
  }

  // send: only src, recv: only dst, in HBM; a partner (peer=); no reduction, no group. The
  // partner's range and whether it is the core itself depend on the run's cores
  // (validate_collectives).
  void point_to_point() const {
    const bool send = in.collective_op == CollectiveOp::send;
    const char* name = send ? "src" : "dst";
    const AccessPattern& ap = send ? in.src[0] : in.dst;
    const AccessPattern& other = send ? in.dst : in.src[0];
    if (other.present())
      fail(send ? "a send has no dst (only src, what it sends)"
                : "a recv has no src (only dst, where it receives)");
    operand(name, ap);
    if (ap.memory != Memory::hbm) {
      fail(fmt::format("{} {} is in {}; a {} moves HBM tensors", name, ap.to_string(),
                       name_of(ap.memory), name_of(in.collective_op)));
    }
    if (in.peer_kind == PeerKind::none) {
      fail(fmt::format("cc={} needs its partner core: peer=P, or peer=+K / peer=-K relative",
                       name_of(in.collective_op)));
    }
    if (in.op0 != AluOp::bypass)
      fail(fmt::format("{} does not reduce; op0 must be bypass (is {})", name_of(in.collective_op),
                       name_of(in.op0)));
    if (in.collective_group != 0)
      fail(fmt::format("{} has one partner (peer=), not group=", name_of(in.collective_op)));
  }

  void transposed_shape(const AccessPattern& src, const AccessPattern& dst) const {
    if (src.ndims > 1) fail("src must be 2-D: partitions and one free dimension");
    if (dst.partitions != src.free_elements() || dst.free_elements() != src.partitions) {
      fail(fmt::format("dst must be [{} x {}], the transpose of src [{} x {}]; is [{} x {}]",
                       src.free_elements(), src.partitions, src.partitions, src.free_elements(),
                       dst.partitions, dst.free_elements()));
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
      case Opcode::nop:
        return;
      case Opcode::collective:
        collective();
        return;
      case Opcode::dma_transpose:
        operand("src", in.src[0]);
        operand("dst", in.dst);
        transposed_shape(in.src[0], in.dst);
        dma_paths();
        if (in.src[0]->dtype != in.dst->dtype) fail("a DMA transpose does not convert dtypes");
        if (in.dma_dge && arch.dma_dge_instruction_ns <= 0) {
          fail(fmt::format("asks for hardware descriptor generation (DGE), which {} does not have",
                           arch.name));
        }
        if (in.dma_queue >= program.queues.size()) {
          fail(fmt::format("uses DMA queue {}, but the program has {}", in.dma_queue,
                           program.queues.size()));
        }
        return;
      case Opcode::transpose: {
        operand("src", in.src[0]);
        operand("dst", in.dst);
        on_chip("src", in.src[0]);
        on_chip("dst", in.dst);
        transposed_shape(in.src[0], in.dst);
        const uint32_t limit = engine == Engine::tensor ? arch.pe_rows : arch.vector_transpose_max;
        if (in.src[0]->partitions > limit || in.src[0]->free_elements() > limit) {
          fail(fmt::format("{} transposes at most {} x {}; src is [{} x {}]", name_of(engine),
                           limit, limit, in.src[0]->partitions, in.src[0]->free_elements()));
        }
        if (engine == Engine::tensor && in.dst->memory != Memory::psum) {
          fail("a TensorE transpose writes PSUM");
        }
        return;
      }
      case Opcode::iota:
        operand("dst", in.dst);
        on_chip("dst", in.dst);
        return;
      case Opcode::select:
        operand("predicate", in.src[0]);
        operand("on_true", in.src[1]);
        operand("on_false", in.src[2]);
        operand("dst", in.dst);
        for (int i = 0; i < 3; ++i)
          on_chip(i == 0 ? "predicate" : i == 1 ? "on_true" : "on_false", in.src[i]);
        on_chip("dst", in.dst);
        same_shape("dst", in.dst, "predicate", in.src[0]);
        same_shape("dst", in.dst, "on_true", in.src[1]);
        same_shape("dst", in.dst, "on_false", in.src[2]);
        return;
      case Opcode::bn_stats:
      case Opcode::bn_aggr: {
        operand("src", in.src[0]);
        operand("dst", in.dst);
        on_chip("src", in.src[0]);
        on_chip("dst", in.dst);
        const bool stats = in.opcode == Opcode::bn_stats;
        if (stats && in.src[0]->free_elements() > arch.bn_stats_free_max) {
          fail(fmt::format("src has {} elements per partition; bn_stats takes at most {}",
                           in.src[0]->free_elements(), arch.bn_stats_free_max));
        }
        if (!stats && in.src[0]->free_elements() % 3 != 0) {
          fail("src must hold (count, mean, M2) groups from bn_stats: a multiple of 3 elements");
        }
        // bn_stats writes one (count, mean, M2) group, or NKI's two (even and odd elements).
        const uint64_t out = stats ? (in.dst->free_elements() == 6 ? 6 : 3) : 2;
        if (in.dst->partitions != in.src[0]->partitions || in.dst->free_elements() != out) {
          fail(fmt::format("dst must be [{} x {}]{}", in.src[0]->partitions, out,
                           stats ? " (or 6 wide: even and odd elements)" : ""));
        }
        return;
      }
      case Opcode::shuffle:
        operand("src", in.src[0]);
        operand("dst", in.dst);
        on_chip("src", in.src[0]);
        on_chip("dst", in.dst);
        same_shape("dst", in.dst, "src", in.src[0]);
        for (uint32_t p = 0; p < in.dst->partitions; ++p) {
          const uint32_t from = (p & ~31u) + in.extra->shuffle_mask[p & 31];
          if (in.extra->shuffle_mask[p & 31] >= 32 || from >= in.src[0]->partitions) {
            fail(fmt::format("shuffle_mask[{}] = {} reads partition {} of {}", p & 31,
                             in.extra->shuffle_mask[p & 31], from, in.src[0]->partitions));
          }
        }
        return;
      case Opcode::affine_select:
        operand("src", in.src[0]);
        operand("dst", in.dst);
        on_chip("src", in.src[0]);
        on_chip("dst", in.dst);
        same_shape("dst", in.dst, "src", in.src[0]);
        if (in.op0 < AluOp::is_equal || in.op0 > AluOp::is_lt) {
          fail(
              fmt::format("op0 is {}; affine_select compares: is_equal, not_equal, is_ge, is_gt, "
                          "is_le or is_lt",
                          name_of(in.op0)));
        }
        return;
      case Opcode::partition_reduce:
      case Opcode::partition_all_reduce: {
        operand("src", in.src[0]);
        operand("dst", in.dst);
        on_chip("src", in.src[0]);
        on_chip("dst", in.dst);
        if (!is_reduction(in.op0)) {
          fail(fmt::format("reduces with {}; expected add, max, min or mean", name_of(in.op0)));
        }
        const uint32_t parts = in.opcode == Opcode::partition_reduce ? 1 : in.src[0]->partitions;
        if (in.dst->partitions != parts || in.dst->free_elements() != in.src[0]->free_elements()) {
          fail(fmt::format("dst must be [{} x {}], is [{} x {}]", parts, in.src[0]->free_elements(),
                           in.dst->partitions, in.dst->free_elements()));
        }
        return;
      }
      case Opcode::dma_copy:
        operand("src", in.src[0]);
        operand("dst", in.dst);
        same_shape("dst", in.dst, "src", in.src[0]);
        dma_paths();
        if (in.src[0]->dtype != in.dst->dtype) fail("a DMA copy does not convert dtypes");
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
        if (in.src[0]->memory != Memory::sbuf || in.src[1]->memory != Memory::sbuf) {
          fail("TensorE reads its inputs from SBUF; it only writes PSUM");
        }
        if (in.dst->memory != Memory::psum) fail("matmul writes PSUM only");
        if (in.dst->dtype != DType::fp32) fail("PSUM accumulation groups are fp32");
        const AccessPattern& st = in.src[0];
        const AccessPattern& mv = in.src[1];
        if (st.partitions != mv.partitions) {
          fail(
              fmt::format("stationary has {} partitions and moving {}: the contraction runs "
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
        if (in.dst->partitions != st.free_elements() ||
            in.dst->free_elements() != mv.free_elements()) {
          fail(fmt::format(
              "dst must be [{} x {}] (stationary columns x moving columns), is "
              "[{} x {}]",
              st.free_elements(), mv.free_elements(), in.dst->partitions, in.dst->free_elements()));
        }
        const int64_t bank = arch.psum_partition_bytes / arch.psum_banks;
        const int64_t es = size_of(in.dst->dtype);
        const int64_t lo = static_cast<int64_t>(in.dst->offset) + in.dst->min_element_offset() * es;
        const int64_t hi =
            static_cast<int64_t>(in.dst->offset) + in.dst->max_element_offset_exclusive() * es;
        if (lo / bank != (hi - 1) / bank) {
          fail(fmt::format("dst reaches bytes [{}, {}), which crosses a {}-byte PSUM bank boundary",
                           lo, hi, bank));
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
        if (in.reduce_dims < 1 || in.reduce_dims > in.src[0]->ndims) {
          fail(fmt::format("reduces {} free dimensions; src has {}", in.reduce_dims,
                           in.src[0]->ndims));
        }
        uint64_t kept = 1;
        for (int i = 0; i < in.src[0]->ndims - in.reduce_dims; ++i)
          kept *= in.src[0]->dims[i].count;
        if (in.dst->partitions != in.src[0]->partitions || in.dst->free_elements() != kept) {
          fail(fmt::format("dst must be [{} x {}] after reducing, is [{} x {}]",
                           in.src[0]->partitions, kept, in.dst->partitions,
                           in.dst->free_elements()));
        }
        if (!is_reduction(in.op0)) {
          fail(fmt::format("reduces with {}; expected add, max, min or mean", name_of(in.op0)));
        }
        return;
      }
      case Opcode::scalar_tensor_tensor:
        scalar("operand0", in.operand0, in.src[0]);
        alu("op0", in.op0, false);
        alu("op1", in.op1, false);
        [[fallthrough]];
      case Opcode::tensor_tensor:
        alu("op0", in.op0, false);
        operand("src0", in.src[0]);
        operand("src1", in.src[1]);
        operand("dst", in.dst);
        on_chip("src0", in.src[0]);
        on_chip("src1", in.src[1]);
        on_chip("dst", in.dst);
        same_shape("dst", in.dst, "src0", in.src[0]);
        same_shape("dst", in.dst, "src1", in.src[1]);
        return;
      case Opcode::tensor_scalar_reduce:
        unary_on_chip();
        scalar("operand0", in.operand0, in.src[0]);
        alu("op0", in.op0, false);
        if (in.op1 != AluOp::add && in.op1 != AluOp::max && in.op1 != AluOp::min) {
          fail(fmt::format("op1 (the reduction) is {}; expected add, max or min", name_of(in.op1)));
        }
        per_partition_result("accumulate", in.accumulate, true);
        return;
      case Opcode::tensor_tensor_scan:
        alu("op0", in.op0, false);
        alu("op1", in.op1, false);
        binary_on_chip();
        scalar("operand0", in.operand0, in.src[0]);
        return;
      case Opcode::tensor_scalar_cumulative:
        unary_on_chip();
        scalar("operand0", in.operand0, in.src[0]);
        alu("op0", in.op0, false);
        if (in.op1 != AluOp::add && in.op1 != AluOp::subtract && in.op1 != AluOp::multiply &&
            in.op1 != AluOp::max && in.op1 != AluOp::min) {
          fail(fmt::format("op1 is {}; expected add, subtract, multiply, max or min",
                           name_of(in.op1)));
        }
        return;
      case Opcode::max8:
      case Opcode::find_index8:
      case Opcode::match_replace8: {
        operand("src0", in.src[0]);
        operand("dst", in.dst);
        on_chip("src0", in.src[0]);
        on_chip("dst", in.dst);
        const uint64_t n = in.src[0]->free_elements();
        if (n < 8 || n > 16384) {
          fail(fmt::format("src0 has {} elements per partition; {} takes 8 to 16384", n,
                           name_of(in.opcode)));
        }
        if (in.opcode != Opcode::max8) {
          operand("src1", in.src[1]);
          on_chip("src1", in.src[1]);
          if (in.src[1]->partitions != in.src[0]->partitions || in.src[1]->free_elements() != 8) {
            fail(fmt::format("src1 (the values) must be [{} x 8]", in.src[0]->partitions));
          }
        }
        if (in.opcode == Opcode::match_replace8) {
          same_shape("dst", in.dst, "src0", in.src[0]);
        } else if (in.dst->partitions != in.src[0]->partitions || in.dst->free_elements() != 8) {
          fail(fmt::format("dst must be [{} x 8]", in.src[0]->partitions));
        }
        if (in.opcode == Opcode::find_index8 && in.dst->dtype != DType::uint32 &&
            in.dst->dtype != DType::uint16) {
          fail(fmt::format("dst is {}; find_index8 writes uint32 or uint16 indices",
                           name_of(in.dst->dtype)));
        }
        return;
      }
      case Opcode::range_select:
        unary_on_chip();
        for (const auto& [name, op] : {std::pair<const char*, AluOp>{"op0", in.op0},
                                       std::pair<const char*, AluOp>{"op1", in.op1}}) {
          if (op != AluOp::is_equal && op != AluOp::is_lt && op != AluOp::is_le &&
              op != AluOp::is_gt && op != AluOp::is_ge) {
            fail(
                fmt::format("{} is {}; range_select compares with is_equal, is_lt, is_le, "
                            "is_gt or is_ge",
                            name, name_of(op)));
          }
        }
        scalar("operand0", in.operand0, in.src[0]);
        scalar("operand1", in.operand1, in.src[0]);
        if (in.accumulate->present()) per_partition_result("accumulate", in.accumulate, true);
        return;
      case Opcode::copy_predicated:
        binary_on_chip();
        if (!is_integer(in.src[0]->dtype)) {
          fail(fmt::format("the predicate (src0) is {}; it must hold integers",
                           name_of(in.src[0]->dtype)));
        }
        if (in.src[1]->dtype != in.dst->dtype) fail("src (src1) and dst must have one dtype");
        return;
      case Opcode::local_gather: {
        operand("src0", in.src[0]);
        operand("src1", in.src[1]);
        operand("dst", in.dst);
        on_chip("src0", in.src[0]);
        on_chip("src1", in.src[1]);
        on_chip("dst", in.dst);
        const uint32_t p = in.src[0]->partitions;
        if (in.src[1]->partitions != p || p % 16 != 0) {
          fail(
              fmt::format("src0 and the indices (src1) must cover the same partitions, a "
                          "multiple of 16; they have {} and {}",
                          p, in.src[1]->partitions));
        }
        if (!is_integer(in.src[1]->dtype)) fail("the indices (src1) must be integers (uint16)");
        const uint32_t e = in.gather_elements;
        if (e != 1 && e != 2 && e != 4 && e != 8 && e != 16 && e != 32) {
          fail(fmt::format("gather_elements is {}; expected 1, 2, 4, 8, 16 or 32", e));
        }
        const uint64_t per_slice = in.src[1]->free_elements() * 16;
        if (in.gather_indices == 0 || in.gather_indices > per_slice || in.gather_indices > 4096) {
          fail(
              fmt::format("gather_indices is {}; 1 to {} (the indices of a 16-partition slice, "
                          "at most 4096)",
                          in.gather_indices, std::min<uint64_t>(per_slice, 4096)));
        }
        if (in.src[0]->dtype != in.dst->dtype) fail("local_gather does not convert dtypes");
        if (in.dst->partitions != p ||
            in.dst->free_elements() != static_cast<uint64_t>(in.gather_indices) * e) {
          fail(fmt::format("dst must be [{} x {}] (gather_indices x gather_elements)", p,
                           static_cast<uint64_t>(in.gather_indices) * e));
        }
        return;
      }
      case Opcode::gather:
        operand("src0", in.src[0]);
        operand("src1", in.src[1]);
        operand("dst", in.dst);
        on_chip("src0", in.src[0]);
        on_chip("src1", in.src[1]);
        on_chip("dst", in.dst);
        if (!is_integer(in.src[1]->dtype)) fail("the indices (src1) must be integers");
        same_shape("dst", in.dst, "src1", in.src[1]);
        if (in.src[0]->partitions != in.dst->partitions) {
          fail(fmt::format("src0 has {} partitions and dst {}", in.src[0]->partitions,
                           in.dst->partitions));
        }
        return;
      case Opcode::activation:
      case Opcode::tensor_scalar:
      case Opcode::tensor_copy:
      case Opcode::reciprocal:
        operand("src", in.src[0]);
        operand("dst", in.dst);
        on_chip("src", in.src[0]);
        on_chip("dst", in.dst);
        same_shape("dst", in.dst, "src", in.src[0]);
        if (in.opcode == Opcode::activation) {
          scalar("scale", in.scale, in.src[0]);
          scalar("bias", in.bias, in.src[0]);
          if (in.accumulate->present()) {
            operand("accumulate", in.accumulate);
            on_chip("accumulate", in.accumulate);
            if (in.accumulate->partitions != in.src[0]->partitions ||
                in.accumulate->free_elements() != 1 || in.accumulate->dtype != DType::fp32) {
              fail(fmt::format("accumulate must be fp32 [{} x 1]", in.src[0]->partitions));
            }
          }
        }
        if (in.opcode == Opcode::tensor_scalar) {
          scalar("operand0", in.operand0, in.src[0]);
          scalar("operand1", in.operand1, in.src[0]);
          alu("op0", in.op0, false);
          alu("op1", in.op1, false);
        }
        return;
    }
  }
};

}  // namespace

std::string check_instruction(const Program& program, const config::ArchConfig& arch,
                              const Instruction& in) {
  try {
    Checker{program, arch, in.engine, 0, in, program.dram_bytes()}.run();
  } catch (const ValidationError& e) {
    // Drop the "<engine> instruction 0 (<opcode>): " prefix: the caller names the place.
    const std::string msg = e.what();
    const auto colon = msg.find("): ");
    return colon == std::string::npos ? msg : msg.substr(colon + 3);
  }
  return {};
}

void validate(const Program& program, const config::ArchConfig& arch) {
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
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    for (Engine e : kAllEngines) {
      const uint32_t first = program.kernels[k].first[index_of(e)];
      const uint32_t low = k == 0 ? 0 : program.kernels[k - 1].first[index_of(e)];
      if ((k == 0 && first != 0) || first < low || first > program.stream(e).size()) {
        throw ValidationError(
            fmt::format("kernel {} ({}) starts {} at instruction {}, outside "
                        "[{}, {}]",
                        k, program.kernels[k].name, name_of(e), first, k == 0 ? 0 : low,
                        program.stream(e).size()));
      }
    }
  }
  size_t next_kernel = 0;
  for (const HostOp& op : program.host_ops) {
    if (op.on_host && !op.kernels.empty()) {
      throw ValidationError(
          fmt::format("host op {} runs on the host and cannot launch kernels", op.name));
    }
    for (uint32_t k : op.kernels) {
      if (k != next_kernel) {
        throw ValidationError(fmt::format("host op {} launches kernel {}; kernel {} comes next",
                                          op.name, k, next_kernel));
      }
      ++next_kernel;
    }
  }
  if (!program.host_ops.empty() && next_kernel != program.kernel_count()) {
    throw ValidationError(fmt::format("the host ops launch {} of the {} kernels", next_kernel,
                                      program.kernel_count()));
  }
  const uint64_t dram_bytes = program.dram_bytes();
  for (Engine e : kAllEngines) {
    const auto& stream = program.stream(e);
    for (size_t i = 0; i < stream.size(); ++i)
      validate_instruction(program, arch, e, i, stream[i], dram_bytes);
  }
}

void validate_instruction(const Program& program, const config::ArchConfig& arch, Engine e,
                          size_t index, const Instruction& in, uint64_t dram_bytes) {
  if (in.engine != e) {
    throw ValidationError(
        fmt::format("{} instruction {} is marked for {}", name_of(e), index, name_of(in.engine)));
  }
  Checker{program, arch, e, index, in, dram_bytes}.run();
}

std::string point_to_point_error(const Instruction& in, uint32_t ranks, int core) {
  const std::string op(name_of(in.collective_op));
  if (in.peer_kind == PeerKind::absolute && static_cast<uint32_t>(in.peer) >= ranks) {
    return fmt::format("{} peer={}: the run has cores 0 to {}", op, in.peer, ranks - 1);
  }
  if (in.peer_kind == PeerKind::relative && in.peer % static_cast<int64_t>(ranks) == 0) {
    return fmt::format("{} peer={:+d}: every core's partner is itself (modulo the run's {} cores)",
                       op, in.peer, ranks);
  }
  if (in.peer_kind == PeerKind::absolute && (core < 0 || in.peer == core)) {
    return core < 0
               ? fmt::format(
                     "{} peer={}: every core runs this program, so core {} would {} itself "
                     "(name the partner relative, peer=+K / peer=-K)",
                     op, in.peer, in.peer,
                     in.collective_op == CollectiveOp::send ? "send to" : "receive from")
               : fmt::format("{} peer={}: core {} {} itself", op, in.peer, core,
                             in.collective_op == CollectiveOp::send ? "sends to" : "receives from");
  }
  return {};
}

std::string collective_size_error(const Instruction& in, uint32_t ranks) {
  const uint64_t src = in.src[0]->elements(), dst = in.dst->elements();
  const uint64_t r = ranks;
  switch (in.collective_op) {
    case CollectiveOp::send:
    case CollectiveOp::recv:
      return {};  // the partners' sizes are compared when they meet
    case CollectiveOp::all_reduce:
    case CollectiveOp::all_to_all:
    case CollectiveOp::permute:
      if (src != dst) {
        return fmt::format("{}: src and dst hold the same number of elements; src has {}, dst {}",
                           name_of(in.collective_op), src, dst);
      }
      if (in.collective_op == CollectiveOp::all_to_all && src % r != 0) {
        return fmt::format(
            "all_to_all over {} ranks: src's {} elements do not split into {} "
            "equal chunks",
            ranks, src, ranks);
      }
      return {};
    case CollectiveOp::all_gather:
      if (dst != src * r) {
        return fmt::format("all_gather over {} ranks: dst holds src x {} = {} elements; it has {}",
                           ranks, ranks, src * r, dst);
      }
      return {};
    case CollectiveOp::reduce_scatter:
      if (src != dst * r) {
        return fmt::format(
            "reduce_scatter over {} ranks: src holds dst x {} = {} elements; it has {}", ranks,
            ranks, dst * r, src);
      }
      return {};
  }
  return {};
}

void validate_collectives(const Program& program, uint32_t ranks, int core) {
  for (Engine e : kAllEngines) {
    const auto& stream = program.stream(e);
    for (size_t i = 0; i < stream.size(); ++i) {
      if (!is_collective(stream[i].opcode)) continue;
      if (is_point_to_point(stream[i].collective_op)) {
        const std::string err = point_to_point_error(stream[i], ranks, core);
        if (err.empty()) continue;
        const std::string label = stream[i].label.empty() ? "" : " '" + stream[i].label + "'";
        throw ValidationError(
            fmt::format("{} instruction {} (collective{}): {}", name_of(e), i, label, err));
      }
      const uint32_t group = stream[i].collective_group;
      std::string err =
          group != 0 && ranks % group != 0
              ? fmt::format("group={} does not divide the run's {} cores into groups", group, ranks)
              : collective_size_error(stream[i], group != 0 ? group : ranks);
      if (err.empty()) continue;
      const std::string label = stream[i].label.empty() ? "" : " '" + stream[i].label + "'";
      throw ValidationError(fmt::format(
          "{} instruction {} (collective{}): {} (the run has {} core(s){})", name_of(e), i, label,
          err, ranks, group != 0 ? fmt::format(", in groups of {}", group) : ", its ranks"));
    }
  }
}

bool has_collectives(const Program& program) {
  // A streamed program's lowering says so: its instructions are not all there at any time.
  if (program.feed != nullptr) return program.feed->collectives;
  for (Engine e : kAllEngines) {
    for (const auto& in : program.stream(e)) {
      if (is_collective(in.opcode)) return true;
    }
  }
  return false;
}

}  // namespace trnsim::isa
