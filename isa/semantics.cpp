#include "isa/semantics.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "base/gemm.hpp"
#include "base/large_page_allocator.hpp"

namespace trnsim::isa {

MemoryImage::MemoryImage(const config::ArchConfig& arch, uint64_t dram_bytes)
    : partitions(arch.partitions),
      sbuf_partition_bytes(arch.sbuf_partition_bytes),
      psum_partition_bytes(arch.psum_partition_bytes),
      sbuf(arch.partitions * arch.sbuf_partition_bytes),
      psum(arch.partitions * arch.psum_partition_bytes),
      hbm(dram_bytes) {}

void MemoryImage::share_hbm(MemoryImage& owner) {
  shared_hbm = &owner.hbm_bytes();
  hbm.clear();
  hbm.shrink_to_fit();
}

const uint8_t* MemoryImage::row(const AccessPattern& ap, uint32_t p) const {
  switch (ap.memory) {
    case Memory::hbm:
      return hbm_bytes().data() + ap.offset +
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
    for_each_free_run(ap, [&](int64_t off, int64_t stride, uint32_t n) {
      load_elements(ap.dtype, base + off * esize, stride, n, out);
      out += n;
    });
  }
  return t;
}

void write(MemoryImage& mem, const AccessPattern& ap, const Tile& t) {
  const int64_t esize = size_of(ap.dtype);
  for (uint32_t p = 0; p < ap.partitions; ++p) {
    uint8_t* base = mem.row(ap, p);
    const float* in = &t(p, 0);
    for_each_free_run(ap, [&](int64_t off, int64_t stride, uint32_t n) {
      store_elements(ap.dtype, base + off * esize, stride, n, in);
      in += n;
    });
  }
}

namespace {

// One value per partition: the immediate repeated, or the [P, 1] pattern read.
Eigen::ArrayXf scalar_column(const MemoryImage& mem, const ScalarOperand& s, uint32_t partitions) {
  if (!s.per_partition().present()) return Eigen::ArrayXf::Constant(partitions, s.imm());
  return read(mem, s.per_partition()).col(0);
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

// t = column op t (operand on the left) when `left`, else t op column.
void apply_alu_per_row_ordered(Tile& t, AluOp op, const Eigen::ArrayXf& column, bool left) {
  if (op == AluOp::bypass) return;
  if (!left) {
    apply_alu_per_row(t, op, column);
    return;
  }
  for (Eigen::Index p = 0; p < t.rows(); ++p) {
    for (Eigen::Index f = 0; f < t.cols(); ++f) t(p, f) = apply(op, column(p), t(p, f));
  }
}

// The value a reduction by `op` starts from.
float identity_of(AluOp op) {
  switch (op) {
    case AluOp::multiply:
      return 1.0f;
    case AluOp::max:
      return -std::numeric_limits<float>::infinity();
    case AluOp::min:
      return std::numeric_limits<float>::infinity();
    default:
      return 0.0f;
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

Tile transposed(const Tile& t) {
  Tile out = t.transpose();
  return out;
}

float reduce(AluOp op, const Eigen::Ref<const Eigen::ArrayXf>& v) {
  switch (op) {
    case AluOp::max:
      return v.maxCoeff();
    case AluOp::min:
      return v.minCoeff();
    case AluOp::mean:
      return v.sum() / static_cast<float>(v.size());
    default:
      return v.sum();
  }
}

// The affine expression of iota and affine_select at every element of `ap`'s shape.
Tile affine_indices(const Instruction& in, const AccessPattern& ap) {
  Tile t(ap.partitions, ap.free_elements());
  std::array<uint32_t, kMaxFreeDims> idx{};
  for (Eigen::Index f = 0; f < t.cols(); ++f) {
    int64_t v = in.extra->index_base;
    for (int k = 0; k < ap.ndims; ++k) v += static_cast<int64_t>(in.extra->index_steps[k]) * idx[k];
    for (Eigen::Index p = 0; p < t.rows(); ++p) {
      t(p, f) = static_cast<float>(v + static_cast<int64_t>(in.extra->partition_step) * p);
    }
    for (int k = ap.ndims - 1; k >= 0; --k) {  // odometer over the free dims, innermost fastest
      if (++idx[k] < ap.dims[k].count) break;
      idx[k] = 0;
    }
  }
  return t;
}

// Integer operands are computed exactly in 64 bits (fp32 would lose bits beyond 2^24), then
// stored with saturation.
using IntTile = std::vector<int64_t>;  // partitions x free, row-major

int64_t load_int(DType t, const uint8_t* p) {
  switch (t) {
    case DType::int32: {
      int32_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case DType::uint32: {
      uint32_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case DType::int16: {
      int16_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case DType::uint16: {
      uint16_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case DType::int8:
      return static_cast<int8_t>(*p);
    default:
      return *p;
  }
}

void store_int(DType t, uint8_t* p, int64_t v) {
  switch (t) {
    case DType::int32: {
      const auto x = static_cast<int32_t>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
      std::memcpy(p, &x, sizeof x);
      return;
    }
    case DType::uint32: {
      const auto x = static_cast<uint32_t>(std::clamp<int64_t>(v, 0, UINT32_MAX));
      std::memcpy(p, &x, sizeof x);
      return;
    }
    case DType::int16: {
      const auto x = static_cast<int16_t>(std::clamp<int64_t>(v, INT16_MIN, INT16_MAX));
      std::memcpy(p, &x, sizeof x);
      return;
    }
    case DType::uint16: {
      const auto x = static_cast<uint16_t>(std::clamp<int64_t>(v, 0, UINT16_MAX));
      std::memcpy(p, &x, sizeof x);
      return;
    }
    case DType::int8:
      *p = static_cast<uint8_t>(static_cast<int8_t>(std::clamp<int64_t>(v, -128, 127)));
      return;
    default:
      *p = static_cast<uint8_t>(std::clamp<int64_t>(v, 0, 255));
  }
}

IntTile read_ints(const MemoryImage& mem, const AccessPattern& ap) {
  IntTile t;
  t.reserve(ap.elements());
  const int64_t esize = size_of(ap.dtype);
  for (uint32_t p = 0; p < ap.partitions; ++p) {
    const uint8_t* base = mem.row(ap, p);
    for_each_free_element(
        ap, [&](int64_t off) { t.push_back(load_int(ap.dtype, base + off * esize)); });
  }
  return t;
}

void write_ints(MemoryImage& mem, const AccessPattern& ap, const IntTile& t) {
  const int64_t esize = size_of(ap.dtype);
  size_t i = 0;
  for (uint32_t p = 0; p < ap.partitions; ++p) {
    uint8_t* base = mem.row(ap, p);
    for_each_free_element(ap,
                          [&](int64_t off) { store_int(ap.dtype, base + off * esize, t[i++]); });
  }
}

int64_t apply_int(AluOp op, int64_t a, int64_t b) {
  switch (op) {
    case AluOp::bypass:
      return a;
    case AluOp::add:
      return a + b;
    case AluOp::subtract:
      return a - b;
    case AluOp::multiply:
      return a * b;
    case AluOp::divide:
      return b == 0 ? 0 : a / b;
    case AluOp::max:
      return std::max(a, b);
    case AluOp::min:
      return std::min(a, b);
    case AluOp::is_equal:
      return a == b;
    case AluOp::not_equal:
      return a != b;
    case AluOp::is_ge:
      return a >= b;
    case AluOp::is_gt:
      return a > b;
    case AluOp::is_le:
      return a <= b;
    case AluOp::is_lt:
      return a < b;
    case AluOp::bitwise_and:
      return static_cast<int32_t>(a) & static_cast<int32_t>(b);
    case AluOp::bitwise_or:
      return static_cast<int32_t>(a) | static_cast<int32_t>(b);
    case AluOp::bitwise_xor:
      return static_cast<int32_t>(a) ^ static_cast<int32_t>(b);
    case AluOp::shift_left:
      return static_cast<int32_t>(static_cast<uint32_t>(a) << (b & 31));
    case AluOp::shift_right:
      return static_cast<int32_t>(a) >> (b & 31);
    default:
      return static_cast<int64_t>(
          std::llround(apply(op, static_cast<float>(a), static_cast<float>(b))));
  }
}

bool integer_operands(const Instruction& in) {
  for (const AccessPattern* ap : {&in.dst.get(), &in.src[0].get(), &in.src[1].get()}) {
    if (ap->present() && !is_integer(ap->dtype)) return false;
  }
  return true;
}

// One integer per partition: the immediate, or the [P, 1] pattern read.
std::vector<int64_t> int_column(const MemoryImage& mem, const ScalarOperand& s,
                                uint32_t partitions) {
  if (!s.per_partition().present()) return std::vector<int64_t>(partitions, std::llround(s.imm()));
  if (is_integer(s.per_partition()->dtype)) return read_ints(mem, s.per_partition());
  std::vector<int64_t> out;
  const Tile t = read(mem, s.per_partition());
  for (Eigen::Index p = 0; p < t.rows(); ++p) out.push_back(std::llround(t(p, 0)));
  return out;
}

}  // namespace

void execute(const Instruction& in, MemoryImage& mem) {
  switch (in.opcode) {
    case Opcode::dma_copy:
    case Opcode::tensor_copy:
      if (integer_operands(in)) {
        write_ints(mem, in.dst, read_ints(mem, in.src[0]));
        return;
      }
      write(mem, in.dst, read(mem, in.src[0]));
      return;
    case Opcode::dma_transpose:
    case Opcode::transpose:
      write(mem, in.dst, transposed(read(mem, in.src[0])));
      return;
    case Opcode::nop:
    case Opcode::collective:  // the data moves between cores when it ends (models/systemc)
      return;
    case Opcode::reciprocal:
      write(mem, in.dst, read(mem, in.src[0]).inverse());
      return;
    case Opcode::scalar_tensor_tensor: {
      Tile t = read(mem, in.src[0]);
      if (in.reverse != 0) {
        apply_alu_per_row_ordered(t, in.op0, scalar_column(mem, in.operand0, in.src[0]->partitions),
                                  in.reverse & 1);
        const Tile other = read(mem, in.src[1]);
        write(mem, in.dst,
              (in.reverse & 2) ? tensor_tensor(other, t, in.op1) : tensor_tensor(t, other, in.op1));
        return;
      }
      apply_alu_per_row(t, in.op0, scalar_column(mem, in.operand0, in.src[0]->partitions));
      write(mem, in.dst, tensor_tensor(t, read(mem, in.src[1]), in.op1));
      return;
    }
    case Opcode::iota:
      write(mem, in.dst, affine_indices(in, in.dst));
      return;
    case Opcode::affine_select: {
      const Tile idx = affine_indices(in, in.dst);
      const Tile src = read(mem, in.src[0]);
      Tile out(src.rows(), src.cols());
      for (Eigen::Index i = 0; i < src.size(); ++i) {
        out(i) = apply(in.op0, idx(i), 0.0f) != 0.0f ? src(i) : in.extra->fill;
      }
      write(mem, in.dst, out);
      return;
    }
    case Opcode::select: {
      const Tile pred = read(mem, in.src[0]);
      write(mem, in.dst, (pred != 0.0f).select(read(mem, in.src[1]), read(mem, in.src[2])));
      return;
    }
    case Opcode::bn_stats: {
      const Tile t = read(mem, in.src[0]);
      if (in.dst->free_elements() == 6) {
        // NKI's form: (count, mean, M2) of the even-indexed elements, then of the odd ones.
        Tile out(t.rows(), 6);
        for (Eigen::Index p = 0; p < t.rows(); ++p) {
          for (Eigen::Index half = 0; half < 2; ++half) {
            double n = 0, sum = 0;
            for (Eigen::Index i = half; i < t.cols(); i += 2, ++n) sum += t(p, i);
            const double mean = n > 0 ? sum / n : 0.0;
            double m2 = 0;
            for (Eigen::Index i = half; i < t.cols(); i += 2)
              m2 += (t(p, i) - mean) * (t(p, i) - mean);
            out(p, 3 * half) = static_cast<float>(n);
            out(p, 3 * half + 1) = static_cast<float>(mean);
            out(p, 3 * half + 2) = static_cast<float>(m2);
          }
        }
        write(mem, in.dst, out);
        return;
      }
      Tile out(t.rows(), 3);
      for (Eigen::Index p = 0; p < t.rows(); ++p) {
        const float mean = t.row(p).mean();
        out(p, 0) = static_cast<float>(t.cols());
        out(p, 1) = mean;
        out(p, 2) = (t.row(p) - mean).square().sum();
      }
      write(mem, in.dst, out);
      return;
    }
    case Opcode::bn_aggr: {
      // Chan et al.'s pairwise combination of (count, mean, M2) groups.
      const Tile t = read(mem, in.src[0]);
      Tile out(t.rows(), 2);
      for (Eigen::Index p = 0; p < t.rows(); ++p) {
        double n = 0, mean = 0, m2 = 0;
        for (Eigen::Index g = 0; g + 2 < t.cols(); g += 3) {
          const double nb = t(p, g), mb = t(p, g + 1), m2b = t(p, g + 2);
          if (nb <= 0) continue;
          const double delta = mb - mean;
          const double total = n + nb;
          mean += delta * nb / total;
          m2 += m2b + delta * delta * n * nb / total;
          n = total;
        }
        out(p, 0) = static_cast<float>(mean);
        out(p, 1) = static_cast<float>(n > 0 ? m2 / n : 0.0);
      }
      write(mem, in.dst, out);
      return;
    }
    case Opcode::shuffle: {
      const Tile src = read(mem, in.src[0]);
      Tile out(src.rows(), src.cols());
      for (Eigen::Index p = 0; p < src.rows(); ++p) {
        out.row(p) = src.row((p & ~Eigen::Index(31)) + in.extra->shuffle_mask[p & 31]);
      }
      write(mem, in.dst, out);
      return;
    }
    case Opcode::partition_reduce:
    case Opcode::partition_all_reduce: {
      const Tile src = read(mem, in.src[0]);
      Tile out(in.dst->partitions, src.cols());
      for (Eigen::Index f = 0; f < src.cols(); ++f) {
        const float v = reduce(in.op0, src.col(f));
        out.col(f).setConstant(v);
      }
      write(mem, in.dst, out);
      return;
    }
    case Opcode::memset:
      write(mem, in.dst,
            Tile::Constant(in.dst->partitions, in.dst->free_elements(), in.operand0.imm()));
      return;
    case Opcode::matmul: {
      const Tile stationary = read(mem, in.src[0]);  // K x M
      const Tile moving = read(mem, in.src[1]);      // K x N
      Tile product(stationary.cols(), moving.cols());
      base::gemm(product.rows(), product.cols(), stationary.rows(), stationary.data(),
                 stationary.cols(), true, moving.data(), moving.cols(), false, 0.0f, product.data(),
                 product.cols());
      if (!in.accumulate_start) product += read(mem, in.dst);
      write(mem, in.dst, product);
      return;
    }
    case Opcode::activation: {
      Tile t = read(mem, in.src[0]);
      const uint32_t parts = in.src[0]->partitions;
      apply_alu_per_row(t, AluOp::multiply, scalar_column(mem, in.scale, parts));
      apply_alu_per_row(t, AluOp::add, scalar_column(mem, in.bias, parts));
      apply_activation(t, in.function);
      if (in.accumulate->present()) {
        Tile sums = t.rowwise().sum();
        write(mem, in.accumulate, sums);
      }
      write(mem, in.dst, t);
      return;
    }
    case Opcode::tensor_scalar: {
      if (integer_operands(in)) {
        IntTile t = read_ints(mem, in.src[0]);
        const uint32_t parts = in.src[0]->partitions;
        const size_t free = t.size() / parts;
        const auto c0 = int_column(mem, in.operand0, parts);
        const auto c1 = int_column(mem, in.operand1, parts);
        for (size_t i = 0; i < t.size(); ++i) {
          const int64_t a = (in.reverse & 1) ? apply_int(in.op0, c0[i / free], t[i])
                                             : apply_int(in.op0, t[i], c0[i / free]);
          t[i] = (in.reverse & 2) ? apply_int(in.op1, c1[i / free], a)
                                  : apply_int(in.op1, a, c1[i / free]);
        }
        write_ints(mem, in.dst, t);
        return;
      }
      Tile t = read(mem, in.src[0]);
      const uint32_t parts = in.src[0]->partitions;
      if (in.reverse != 0) {  // operand on the left of op0 (bit 0) or of op1 (bit 1)
        apply_alu_per_row_ordered(t, in.op0, scalar_column(mem, in.operand0, parts),
                                  in.reverse & 1);
        apply_alu_per_row_ordered(t, in.op1, scalar_column(mem, in.operand1, parts),
                                  in.reverse & 2);
        write(mem, in.dst, t);
        return;
      }
      apply_alu_per_row(t, in.op0, scalar_column(mem, in.operand0, parts));
      apply_alu_per_row(t, in.op1, scalar_column(mem, in.operand1, parts));
      write(mem, in.dst, t);
      return;
    }
    case Opcode::tensor_tensor:
      if (integer_operands(in)) {
        IntTile a = read_ints(mem, in.src[0]);
        const IntTile b = read_ints(mem, in.src[1]);
        for (size_t i = 0; i < a.size(); ++i) a[i] = apply_int(in.op0, a[i], b[i]);
        write_ints(mem, in.dst, a);
        return;
      }
      write(mem, in.dst, tensor_tensor(read(mem, in.src[0]), read(mem, in.src[1]), in.op0));
      return;
    case Opcode::tensor_reduce: {
      const Tile t = read(mem, in.src[0]);
      uint64_t group = 1;
      for (int i = in.src[0]->ndims - in.reduce_dims; i < in.src[0]->ndims; ++i) {
        group *= in.src[0]->dims[i].count;
      }
      const Eigen::Index kept = static_cast<Eigen::Index>(t.cols() / group);
      Tile out(t.rows(), kept);
      for (Eigen::Index p = 0; p < t.rows(); ++p) {
        for (Eigen::Index k = 0; k < kept; ++k) {
          auto seg = t.row(p).segment(k * group, group);
          out(p, k) = reduce(in.op0, seg.transpose());
        }
      }
      if (in.negate) out = -out;
      write(mem, in.dst, out);
      return;
    }
    case Opcode::tensor_scalar_reduce: {
      Tile t = read(mem, in.src[0]);
      apply_alu_per_row(t, in.op0, scalar_column(mem, in.operand0, in.src[0]->partitions));
      write(mem, in.dst, t);
      Tile sums(t.rows(), 1);
      for (Eigen::Index p = 0; p < t.rows(); ++p) sums(p, 0) = reduce(in.op1, t.row(p).transpose());
      write(mem, in.accumulate, sums);
      return;
    }
    case Opcode::tensor_tensor_scan: {
      const Tile a = read(mem, in.src[0]);
      const Tile b = read(mem, in.src[1]);
      const Eigen::ArrayXf init = scalar_column(mem, in.operand0, in.src[0]->partitions);
      Tile out(a.rows(), a.cols());
      for (Eigen::Index p = 0; p < a.rows(); ++p) {
        float r = init(p);
        for (Eigen::Index i = 0; i < a.cols(); ++i) {
          const float x = (in.reverse & 1) ? apply(in.op0, r, a(p, i)) : apply(in.op0, a(p, i), r);
          r = (in.reverse & 2) ? apply(in.op1, b(p, i), x) : apply(in.op1, x, b(p, i));
          out(p, i) = r;
        }
      }
      write(mem, in.dst, out);
      return;
    }
    case Opcode::tensor_scalar_cumulative: {
      const Tile a = read(mem, in.src[0]);
      const Eigen::ArrayXf c = scalar_column(mem, in.operand0, in.src[0]->partitions);
      Tile out(a.rows(), a.cols());
      for (Eigen::Index p = 0; p < a.rows(); ++p) {
        float r = identity_of(in.op1);
        for (Eigen::Index i = 0; i < a.cols(); ++i) {
          r = apply(in.op1, apply(in.op0, a(p, i), c(p)), r);
          out(p, i) = r;
        }
      }
      write(mem, in.dst, out);
      return;
    }
    case Opcode::max8: {
      const Tile a = read(mem, in.src[0]);
      Tile out(a.rows(), 8);
      for (Eigen::Index p = 0; p < a.rows(); ++p) {
        std::vector<float> row(a.row(p).begin(), a.row(p).end());
        std::partial_sort(row.begin(), row.begin() + 8, row.end(), std::greater<float>());
        for (int k = 0; k < 8; ++k) out(p, k) = row[k];
      }
      write(mem, in.dst, out);
      return;
    }
    case Opcode::find_index8: {
      const Tile a = read(mem, in.src[0]);
      const Tile v = read(mem, in.src[1]);
      // Unmatched: all ones in the destination's width (0xFFFFFFFF, 0xFFFF).
      const int64_t none = in.dst->dtype == DType::uint16 ? 0xFFFF : 0xFFFFFFFFLL;
      IntTile out;
      out.reserve(static_cast<size_t>(a.rows()) * 8);
      for (Eigen::Index p = 0; p < a.rows(); ++p) {
        std::vector<bool> taken(static_cast<size_t>(a.cols()), false);
        for (int k = 0; k < 8; ++k) {
          int64_t found = none;
          for (Eigen::Index i = 0; i < a.cols(); ++i) {
            if (!taken[i] && a(p, i) == v(p, k)) {
              found = i;
              taken[i] = true;
              break;
            }
          }
          out.push_back(found);
        }
      }
      if (is_integer(in.dst->dtype)) {
        write_ints(mem, in.dst, out);
      } else {
        Tile f(a.rows(), 8);
        for (size_t i = 0; i < out.size(); ++i)
          f(static_cast<Eigen::Index>(i)) = static_cast<float>(out[i]);
        write(mem, in.dst, f);
      }
      return;
    }
    case Opcode::match_replace8: {
      Tile a = read(mem, in.src[0]);
      const Tile v = read(mem, in.src[1]);
      for (Eigen::Index p = 0; p < a.rows(); ++p) {
        std::vector<bool> replaced(static_cast<size_t>(a.cols()), false);
        for (int k = 7; k >= 0; --k) {  // NKI: repeated values are matched from the last
          for (Eigen::Index i = 0; i < a.cols(); ++i) {
            if (!replaced[i] && a(p, i) == v(p, k)) {
              replaced[i] = true;
              break;
            }
          }
        }
        for (Eigen::Index i = 0; i < a.cols(); ++i) {
          if (replaced[i]) a(p, i) = in.operand0.imm();
        }
      }
      write(mem, in.dst, a);
      return;
    }
    case Opcode::range_select: {
      const Tile a = read(mem, in.src[0]);
      const Eigen::ArrayXf b0 = scalar_column(mem, in.operand0, in.src[0]->partitions);
      const Eigen::ArrayXf b1 = scalar_column(mem, in.operand1, in.src[0]->partitions);
      Tile out(a.rows(), a.cols());
      Tile best(a.rows(), 1);
      for (Eigen::Index p = 0; p < a.rows(); ++p) {
        float m = -std::numeric_limits<float>::infinity();
        for (Eigen::Index i = 0; i < a.cols(); ++i) {
          const auto idx = static_cast<float>(in.extra->index_base + i);
          const bool keep = apply(in.op0, idx, b0(p)) != 0.0f && apply(in.op1, idx, b1(p)) != 0.0f;
          out(p, i) = keep ? a(p, i) : in.extra->fill;
          m = std::max(m, out(p, i));
        }
        best(p, 0) = m;
      }
      write(mem, in.dst, out);
      if (in.accumulate->present()) write(mem, in.accumulate, best);
      return;
    }
    case Opcode::copy_predicated: {
      const Tile pred = read(mem, in.src[0]);
      const Tile src = read(mem, in.src[1]);
      Tile out = read(mem, in.dst);
      const bool on_zero = (in.reverse & 1) != 0;
      for (Eigen::Index i = 0; i < out.size(); ++i) {
        if ((pred(i) != 0.0f) != on_zero) out(i) = src(i);
      }
      write(mem, in.dst, out);
      return;
    }
    case Opcode::local_gather: {
      const Tile src = read(mem, in.src[0]);
      const IntTile index = read_ints(mem, in.src[1]);
      const auto index_free = static_cast<size_t>(in.src[1]->free_elements());
      const uint32_t per = in.gather_elements;
      Tile out(src.rows(), static_cast<Eigen::Index>(in.gather_indices) * per);
      for (Eigen::Index base = 0; base < src.rows(); base += 16) {
        // The slice's indices, partition first (numpy's flatten(order='F')).
        std::vector<int64_t> flat;
        for (size_t f = 0; f < index_free; ++f) {
          for (Eigen::Index p = base; p < base + 16; ++p) {
            flat.push_back(index[static_cast<size_t>(p) * index_free + f]);
          }
        }
        for (Eigen::Index p = base; p < base + 16; ++p) {
          for (uint32_t k = 0; k < in.gather_indices; ++k) {
            for (uint32_t e = 0; e < per; ++e) {
              const int64_t at = flat[k] + e;
              out(p, static_cast<Eigen::Index>(k * per + e)) =
                  at >= 0 && at < src.cols() ? src(p, static_cast<Eigen::Index>(at)) : 0.0f;
            }
          }
        }
      }
      write(mem, in.dst, out);
      return;
    }
    case Opcode::gather: {
      const Tile src = read(mem, in.src[0]);
      const IntTile index = read_ints(mem, in.src[1]);
      const Eigen::Index n = static_cast<Eigen::Index>(in.src[1]->free_elements());
      Tile out(src.rows(), n);
      for (Eigen::Index p = 0; p < src.rows(); ++p) {
        for (Eigen::Index i = 0; i < n; ++i) {
          const int64_t at = index[static_cast<size_t>(p * n + i)];
          out(p, i) = at >= 0 && at < src.cols() ? src(p, static_cast<Eigen::Index>(at)) : 0.0f;
        }
      }
      write(mem, in.dst, out);
      return;
    }
  }
}

}  // namespace trnsim::isa
