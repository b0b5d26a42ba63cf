// The instruction builder of the kernels: each constructor sets exactly the fields a kernel set
// by hand before (compared field by field with an instruction built that way), and engine
// handles emit on their engine through the SyncTracker with the waits and raises asked for.
#include <catch2/catch.hpp>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/arch.hpp"
#include "isa/program.hpp"
#include "workloads/kernels/instruction_builder.hpp"
#include "workloads/kernels/row_tiles.hpp"

using trnsim::Engine;
using trnsim::isa::AccessPattern;
using trnsim::isa::ActivationFunction;
using trnsim::isa::AluOp;
using trnsim::isa::DType;
using trnsim::isa::Instruction;
using trnsim::isa::Opcode;
using trnsim::isa::ScalarOperand;
namespace wl = trnsim::workloads;

namespace {

void print(std::ostringstream& o, const AccessPattern& a) {
  o << "[" << int(a.memory) << " " << int(a.dtype) << " " << int(a.ndims) << " "
    << a.start_partition << " " << a.partitions << " " << a.partition_stride << " " << a.offset;
  for (const auto& d : a.dims) o << " " << d.stride << "x" << d.count;
  o << "]";
}
void print(std::ostringstream& o, const ScalarOperand& s) {
  o << "{" << s.imm() << " ";
  print(o, s.per_partition().get());
  o << "}";
}

// Every field of the instruction, as text: equal text, equal instructions.
std::string fields(const Instruction& in) {
  std::ostringstream o;
  o << int(in.opcode) << " " << int(in.engine) << " '" << in.label << "' ";
  print(o, in.dst);
  for (const auto& s : in.src) print(o, s);
  o << " f" << int(in.function);
  print(o, in.scale);
  print(o, in.bias);
  print(o, in.accumulate);
  o << " " << int(in.op0) << " " << int(in.op1);
  print(o, in.operand0);
  print(o, in.operand1);
  o << " " << int(in.reduce_dims) << in.accumulate_start << in.accumulate_stop << " q"
    << in.dma_queue << in.dma_dge << in.dma_transpose << " " << in.extra->index_base << " "
    << in.extra->partition_step;
  for (int32_t s : in.extra->index_steps) o << " " << s;
  o << " " << in.extra->fill;
  for (uint8_t m : in.extra->shuffle_mask) o << " " << int(m);
  for (const auto& w : in.waits) o << " W" << w.semaphore << ">=" << w.value;
  for (const auto& u : in.updates) o << " U" << u.semaphore << ":" << int(u.kind) << u.value;
  return o.str();
}

Instruction by_hand(Opcode op, Engine e, const std::string& label) {
  Instruction in;
  in.opcode = op;
  in.engine = e;
  in.label = label;
  return in;
}

const AccessPattern kRow = trnsim::isa::sbuf_ap(DType::bf16, 0, 128, 1024, {{1, 512}});
const AccessPattern kOther = trnsim::isa::sbuf_ap(DType::bf16, 0, 128, 4096, {{1, 512}});
const AccessPattern kCol = trnsim::isa::sbuf_ap(DType::fp32, 0, 128, 64, {{1, 1}});
const AccessPattern kHbm = trnsim::isa::hbm_ap(DType::bf16, 4096, 128, 512, {{1, 512}});
const AccessPattern kPsum = trnsim::isa::psum_ap(DType::fp32, 0, 128, 2048, {{1, 512}});

}  // namespace

TEST_CASE("the DMA constructors set the queue, operands and issuer only", "[unit][kernels]") {
  Instruction in = by_hand(Opcode::dma_copy, Engine::sync, "load");
  in.src[0] = kHbm;
  in.dst = kRow;
  in.dma_queue = 3;
  CHECK(fields(wl::dma_copy(3, kRow, kHbm, "load")) == fields(in));
  in.engine = Engine::scalar;
  CHECK(fields(wl::dma_copy(3, kRow, kHbm, "load", Engine::scalar)) == fields(in));
  Instruction tr = by_hand(Opcode::dma_transpose, Engine::sync, "load^T");
  tr.src[0] = kHbm;
  tr.dst = kRow;
  tr.dma_queue = 1;
  CHECK(fields(wl::dma_transpose(1, kRow, kHbm, "load^T")) == fields(tr));
}

TEST_CASE("the compute constructors set what the kernels set by hand", "[unit][kernels]") {
  {  // activation: scale and bias as immediates or columns; the _reduce form accumulates.
    Instruction in = by_hand(Opcode::activation, Engine::scalar, "exp");
    in.function = ActivationFunction::exp;
    in.src[0] = kRow;
    in.dst = kOther;
    in.scale = ScalarOperand::immediate(0.5f);
    in.bias = ScalarOperand::from(kCol);
    CHECK(fields(wl::activation(Engine::scalar, ActivationFunction::exp, kOther, kRow, 0.5f, kCol,
                                "exp")) == fields(in));
    in.accumulate = kCol;
    CHECK(fields(wl::activation_reduce(Engine::scalar, ActivationFunction::exp, kOther, kRow, 0.5f,
                                       kCol, kCol, "exp")) == fields(in));
    // The defaults (scale 1, bias 0) given as immediates are the defaults.
    Instruction plain = by_hand(Opcode::activation, Engine::scalar, "copy");
    plain.function = ActivationFunction::copy;
    plain.src[0] = kRow;
    plain.dst = kOther;
    CHECK(fields(wl::activation(Engine::scalar, ActivationFunction::copy, kOther, kRow, 1.0f, 0.0f,
                                "copy")) == fields(plain));
  }
  {
    Instruction in = by_hand(Opcode::tensor_tensor, Engine::gpsimd, "beta");
    in.op0 = AluOp::add;
    in.src[0] = kRow;
    in.src[1] = kOther;
    in.dst = kRow;
    CHECK(fields(wl::tensor_tensor(Engine::gpsimd, kRow, kRow, AluOp::add, kOther, "beta")) ==
          fields(in));
  }
  {
    Instruction in = by_hand(Opcode::tensor_scalar, Engine::vector, "rstd");
    in.op0 = AluOp::add;
    in.operand0 = ScalarOperand::immediate(1e-5f);
    in.src[0] = kCol;
    in.dst = kCol;
    CHECK(fields(wl::tensor_scalar(Engine::vector, kCol, kCol, AluOp::add, 1e-5f, "rstd")) ==
          fields(in));
    in.op1 = AluOp::pow;
    in.operand1 = ScalarOperand::immediate(-0.5f);
    CHECK(fields(wl::tensor_scalar(Engine::vector, kCol, kCol, AluOp::add, 1e-5f, AluOp::pow, -0.5f,
                                   "rstd")) == fields(in));
    Instruction pp = by_hand(Opcode::tensor_scalar, Engine::vector, "scale");
    pp.op0 = AluOp::multiply;
    pp.operand0 = ScalarOperand::from(kCol);
    pp.src[0] = kRow;
    pp.dst = kRow;
    CHECK(fields(wl::tensor_scalar(Engine::vector, kRow, kRow, AluOp::multiply, kCol, "scale")) ==
          fields(pp));
  }
  {
    Instruction in = by_hand(Opcode::scalar_tensor_tensor, Engine::vector, "l");
    in.op0 = AluOp::multiply;
    in.operand0 = ScalarOperand::from(kCol);
    in.op1 = AluOp::add;
    in.src[0] = kCol;
    in.src[1] = kOther;
    in.dst = kRow;
    CHECK(fields(wl::scalar_tensor_tensor(Engine::vector, kRow, kCol, AluOp::multiply, kCol,
                                          AluOp::add, kOther, "l")) == fields(in));
  }
  {
    Instruction in = by_hand(Opcode::tensor_reduce, Engine::vector, "max");
    in.op0 = AluOp::max;
    in.src[0] = kRow;
    in.dst = kCol;
    CHECK(fields(wl::tensor_reduce(Engine::vector, kCol, AluOp::max, kRow, "max")) == fields(in));
  }
  for (const auto& [op, make] :
       std::vector<std::pair<Opcode, Instruction (*)(Engine, const AccessPattern&,
                                                     const AccessPattern&, std::string)>>{
           {Opcode::tensor_copy, wl::tensor_copy},
           {Opcode::reciprocal, wl::reciprocal},
           {Opcode::bn_stats, wl::bn_stats},
           {Opcode::bn_aggr, wl::bn_aggr},
           {Opcode::transpose, wl::transpose}}) {
    Instruction in = by_hand(op, Engine::vector, "x");
    in.src[0] = kRow;
    in.dst = kOther;
    CHECK(fields(make(Engine::vector, kOther, kRow, "x")) == fields(in));
  }
  {
    Instruction in = by_hand(Opcode::memset, Engine::gpsimd, "zeros");
    in.dst = kCol;
    in.operand0 = ScalarOperand::immediate(0.0f);
    CHECK(fields(wl::memset(Engine::gpsimd, kCol, 0.0f, "zeros")) == fields(in));
  }
  {
    Instruction in = by_hand(Opcode::iota, Engine::gpsimd, "index");
    in.dst = kCol;
    in.extra.edit().index_base = 7;
    in.extra.edit().partition_step = 2;
    in.extra.edit().index_steps[0] = 1;
    CHECK(fields(wl::iota(Engine::gpsimd, kCol, 7, 2, {1, 0, 0, 0}, "index")) == fields(in));
  }
  {
    Instruction in = by_hand(Opcode::affine_select, Engine::gpsimd, "causal mask");
    in.src[0] = kRow;
    in.dst = kRow;
    in.extra.edit().partition_step = 1;
    in.extra.edit().index_steps[0] = -1;
    in.op0 = AluOp::is_ge;
    in.extra.edit().fill = -1e30f;
    CHECK(fields(wl::affine_select(Engine::gpsimd, kRow, kRow, 1, {-1, 0, 0, 0}, AluOp::is_ge,
                                   -1e30f, "causal mask")) == fields(in));
  }
  {
    Instruction in = by_hand(Opcode::select, Engine::vector, "pick");
    in.src[0] = kCol;
    in.src[1] = kRow;
    in.src[2] = kOther;
    in.dst = kRow;
    CHECK(fields(wl::select(Engine::vector, kRow, kCol, kRow, kOther, "pick")) == fields(in));
  }
  {
    Instruction in = by_hand(Opcode::matmul, Engine::tensor, "mm");
    in.src[0] = kRow;
    in.src[1] = kOther;
    in.dst = kPsum;
    in.accumulate_start = false;
    in.accumulate_stop = true;
    CHECK(fields(wl::matmul(kPsum, kRow, kOther, false, true, "mm")) == fields(in));
  }
}

TEST_CASE("engine handles emit on their engine with the waits and raises asked for",
          "[unit][kernels]") {
  trnsim::isa::Program p;
  const trnsim::config::ArchConfig arch = trnsim::config::trn2();
  const uint16_t q = p.add_queue("q");
  wl::SyncTracker tracker(p, arch);
  const uint16_t done = tracker.semaphore("done");
  wl::EngineHandle sync(tracker, Engine::sync), dve(tracker, Engine::vector),
      act(tracker, Engine::scalar);
  const wl::Signal loaded = sync.dma_copy(q, kRow, kHbm, "load");
  CHECK(loaded.semaphore == p.queues[q].semaphore);
  CHECK(loaded.value == arch.dma_engines_for(128));
  const wl::Signal max = dve.tensor_reduce(kCol, AluOp::max, kRow, "max", {loaded}, done);
  act.activation(ActivationFunction::exp, kOther, kRow, 1.0f, kCol, "exp", {max});
  REQUIRE(p.stream(Engine::vector).size() == 1);
  const Instruction& m = p.stream(Engine::vector)[0];
  CHECK(m.opcode == Opcode::tensor_reduce);
  REQUIRE(m.waits.size() == 1);
  CHECK(m.waits[0].value == loaded.value);
  REQUIRE(m.updates.size() == 1);
  CHECK(m.updates[0].semaphore == done);
  REQUIRE(p.stream(Engine::scalar).size() == 1);
  CHECK(p.stream(Engine::scalar)[0].engine == Engine::scalar);
  REQUIRE(p.stream(Engine::scalar)[0].waits.size() == 1);
  CHECK(p.stream(Engine::scalar)[0].waits[0].semaphore == done);
  // An instruction built for another engine is an internal error.
  CHECK_THROWS_AS(dve.emit(wl::tensor_copy(Engine::gpsimd, kRow, kOther, "copy")),
                  std::logic_error);
}

TEST_CASE("emit_sequence waits before the first instruction and raises after the last",
          "[unit][kernels]") {
  trnsim::isa::Program p;
  const trnsim::config::ArchConfig arch = trnsim::config::trn2();
  wl::SyncTracker tracker(p, arch);
  const uint16_t a = tracker.semaphore("a");
  const uint16_t b = tracker.semaphore("b");
  const wl::Signal first = tracker.emit(wl::tensor_copy(Engine::scalar, kRow, kOther, "c"), {}, a);
  const wl::Signal last =
      tracker.emit_sequence({wl::matmul(kPsum, kRow, kOther, true, false, "mm 0"),
                             wl::matmul(kPsum, kRow, kOther, false, false, "mm 1"),
                             wl::matmul(kPsum, kRow, kOther, false, true, "mm 2")},
                            {first}, b);
  const auto& pe = p.stream(Engine::tensor);
  REQUIRE(pe.size() == 3);
  CHECK(pe[0].waits.size() == 1);
  CHECK(pe[1].waits.empty());
  CHECK(pe[2].waits.empty());
  CHECK(pe[0].updates.empty());
  CHECK(pe[1].updates.empty());
  REQUIRE(pe[2].updates.size() == 1);
  CHECK(pe[2].updates[0].semaphore == b);
  CHECK(last.semaphore == b);
  CHECK(last.value == 1);
  // Nothing to emit: a signal met from the start.
  const wl::Signal none = tracker.emit_sequence({}, {first}, b);
  CHECK(none.value == 0);
}

TEST_CASE("row tiles: partial last tile, HBM rows and broadcast vectors, buffers that fit",
          "[unit][kernels]") {
  const wl::RowTiles tiles(300, 512, 128);
  CHECK(tiles.count == 3);
  CHECK(tiles.parts(0) == 128);
  CHECK(tiles.parts(2) == 44);
  const AccessPattern x2 = tiles.hbm(DType::bf16, 4096, 2);
  CHECK(x2.offset == 4096 + 2 * 128 * 512 * 2);
  CHECK(x2.partitions == 44);
  CHECK(x2.partition_stride == 512);
  const AccessPattern gamma = tiles.hbm_broadcast(DType::bf16, 64);
  CHECK(gamma.partitions == 128);
  CHECK(gamma.partition_stride == 0);
  CHECK(tiles.sbuf(DType::fp32, 256, 44).free_elements() == 512);
  // Given buffers stay (at most one per tile); otherwise the most that fit.
  auto under = [](uint32_t most) { return [most](uint32_t n) { return n <= most; }; };
  CHECK(wl::row_buffers(5, 3, 3, under(1)) == 3);
  CHECK(wl::row_buffers(0, 3, 10, under(2)) == 2);
  CHECK(wl::row_buffers(0, 3, 10, under(0)) == 1);
  CHECK(wl::row_buffers(0, 3, 2, under(8)) == 2);
}
