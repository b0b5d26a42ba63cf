#include "isa/semantics.hpp"

namespace trnsim::isa {

MemoryImage::MemoryImage(const ArchConfig& arch, uint64_t dram_bytes)
    : partitions(arch.partitions),
      sbuf_partition_bytes(arch.sbuf_partition_bytes),
      psum_partition_bytes(arch.psum_partition_bytes),
      sbuf(arch.partitions * arch.sbuf_partition_bytes),
      psum(arch.partitions * arch.psum_partition_bytes),
      hbm(dram_bytes) {}

const uint8_t* MemoryImage::row(const AccessPattern& ap, uint32_t p) const {
  switch (ap.memory) {
    case Memory::hbm:
      return hbm.data() + ap.offset +
             static_cast<int64_t>(p) * ap.partition_stride * size_of(ap.dtype);
    case Memory::sbuf:
      return sbuf.data() + (ap.start_partition + p) * sbuf_partition_bytes + ap.offset;
    case Memory::psum:
      return psum.data() + (ap.start_partition + p) * psum_partition_bytes + ap.offset;
  }
  return nullptr;
}

uint8_t* MemoryImage::row(const AccessPattern& ap, uint32_t p) {
  return const_cast<uint8_t*>(static_cast<const MemoryImage*>(this)->row(ap, p));
}

Tile read(const MemoryImage& mem, const AccessPattern& ap) {
  Tile t(ap.partitions, ap.free_elements());
  const int64_t esize = size_of(ap.dtype);
  for (uint32_t p = 0; p < ap.partitions; ++p) {
    const uint8_t* base = mem.row(ap, p);
    float* out = &t(p, 0);
    for_each_free_element(ap, [&](int64_t off) { *out++ = load_element(ap.dtype, base + off * esize); });
  }
  return t;
}

void write(MemoryImage& mem, const AccessPattern& ap, const Tile& t) {
  const int64_t esize = size_of(ap.dtype);
  for (uint32_t p = 0; p < ap.partitions; ++p) {
    uint8_t* base = mem.row(ap, p);
    const float* in = &t(p, 0);
    for_each_free_element(ap, [&](int64_t off) { store_element(ap.dtype, base + off * esize, *in++); });
  }
}

namespace {

// One value per partition: the immediate repeated, or the [P, 1] pattern read.
Eigen::ArrayXf scalar_column(const MemoryImage& mem, const ScalarOperand& s, uint32_t partitions) {
  if (!s.per_partition.present()) return Eigen::ArrayXf::Constant(partitions, s.imm);
  return read(mem, s.per_partition).col(0);
}

void apply_alu_per_row(Tile& t, AluOp op, const Eigen::ArrayXf& column) {
  if (op == AluOp::bypass) return;
  for (Eigen::Index p = 0; p < t.rows(); ++p) {
    const float s = column(p);
    switch (op) {
      case AluOp::add:
        t.row(p) += s;
        break;
      case AluOp::subtract:
        t.row(p) -= s;
        break;
      case AluOp::multiply:
        t.row(p) *= s;
        break;
      default:
        for (Eigen::Index f = 0; f < t.cols(); ++f) t(p, f) = apply(op, t(p, f), s);
    }
  }
}

void apply_activation(Tile& t, ActivationFunction f) {
  switch (f) {
    case ActivationFunction::identity:
      return;
    case ActivationFunction::square:
      t = t.square();
      return;
    case ActivationFunction::sqrt:
      t = t.sqrt();
      return;
    case ActivationFunction::rsqrt:
      t = t.rsqrt();
      return;
    case ActivationFunction::reciprocal:
      t = t.inverse();
      return;
    case ActivationFunction::exp:
      t = t.exp();
      return;
    default:
      t = t.unaryExpr([f](float x) { return apply(f, x); });
  }
}

Tile tensor_tensor(const Tile& a, const Tile& b, AluOp op) {
  switch (op) {
    case AluOp::add:
      return a + b;
    case AluOp::subtract:
      return a - b;
    case AluOp::multiply:
      return a * b;
    case AluOp::divide:
      return a / b;
    case AluOp::max:
      return a.max(b);
    case AluOp::min:
      return a.min(b);
    default:
      return a.binaryExpr(b, [op](float x, float y) { return apply(op, x, y); });
  }
}

}  // namespace

void execute(const Instruction& in, MemoryImage& mem) {
  switch (in.opcode) {
    case Opcode::dma_copy:
    case Opcode::tensor_copy:
      write(mem, in.dst, read(mem, in.src[0]));
      return;
    case Opcode::memset:
      write(mem, in.dst, Tile::Constant(in.dst.partitions, in.dst.free_elements(), in.operand0.imm));
      return;
    case Opcode::matmul: {
      const Tile stationary = read(mem, in.src[0]);  // K x M
      const Tile moving = read(mem, in.src[1]);      // K x N
      Tile product = (stationary.matrix().transpose() * moving.matrix()).array();
      if (!in.accumulate_start) product += read(mem, in.dst);
      write(mem, in.dst, product);
      return;
    }
    case Opcode::activation: {
      Tile t = read(mem, in.src[0]);
      const uint32_t parts = in.src[0].partitions;
      apply_alu_per_row(t, AluOp::multiply, scalar_column(mem, in.scale, parts));
      apply_alu_per_row(t, AluOp::add, scalar_column(mem, in.bias, parts));
      apply_activation(t, in.function);
      if (in.accumulate.present()) {
        Tile sums = t.rowwise().sum();
        write(mem, in.accumulate, sums);
      }
      write(mem, in.dst, t);
      return;
    }
    case Opcode::tensor_scalar: {
      Tile t = read(mem, in.src[0]);
      const uint32_t parts = in.src[0].partitions;
      apply_alu_per_row(t, in.op0, scalar_column(mem, in.operand0, parts));
      apply_alu_per_row(t, in.op1, scalar_column(mem, in.operand1, parts));
      write(mem, in.dst, t);
      return;
    }
    case Opcode::tensor_tensor:
      write(mem, in.dst, tensor_tensor(read(mem, in.src[0]), read(mem, in.src[1]), in.op0));
      return;
    case Opcode::tensor_reduce: {
      const Tile t = read(mem, in.src[0]);
      uint64_t group = 1;
      for (int i = in.src[0].ndims - in.reduce_dims; i < in.src[0].ndims; ++i) {
        group *= in.src[0].dims[i].count;
      }
      const Eigen::Index kept = static_cast<Eigen::Index>(t.cols() / group);
      Tile out(t.rows(), kept);
      for (Eigen::Index p = 0; p < t.rows(); ++p) {
        for (Eigen::Index k = 0; k < kept; ++k) {
          auto seg = t.row(p).segment(k * group, group);
          out(p, k) = in.op0 == AluOp::add ? seg.sum() : in.op0 == AluOp::max ? seg.maxCoeff()
                                                                              : seg.minCoeff();
        }
      }
      write(mem, in.dst, out);
      return;
    }
  }
}

}  // namespace trnsim::isa
