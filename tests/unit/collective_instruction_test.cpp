// The collective instruction (docs/chip.md, "Collectives in a program"): its text and JSON
// forms round-trip, its sizes follow nccom-test's convention over the run's ranks, and bad
// operands are refused naming the instruction and what was expected.
#include <catch2/catch.hpp>
#include <string>

#include "config/arch.hpp"
#include "isa/text/assembly.hpp"
#include "isa/validate.hpp"

using Catch::Matchers::Contains;
using namespace trnsim;

namespace {

const config::ArchConfig& trn2() {
  static const config::ArchConfig a = *config::preset("trn2");
  return a;
}

std::string program_with(const std::string& line) {
  return ".sync manual\n.cores 4\n.tensor x fp32 [4, 64]\n.tensor y fp32 [16, 64]\n"
         ".tensor z fp32 [4, 64]\n.buffer t sbuf fp32 [4, 64]\n.semaphore s\n" +
         line + "\n";
}

std::string parse_error(const std::string& text) {
  try {
    isa::parse_assembly(text, "cc.tasm", trn2());
  } catch (const isa::AssemblyError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a collective prints and parses back with its cc, op0, operands and update") {
  const isa::Assembly a = isa::parse_assembly(
      program_with("ar: sp.collective z[:, :], x[:, :], cc=all_reduce, op0=max, update=s+=1"),
      "cc.tasm", trn2());
  REQUIRE(a.cores == 4);
  REQUIRE(a.sequence.size() == 1);
  const isa::Instruction& in = a.sequence[0];
  CHECK(in.opcode == isa::Opcode::collective);
  CHECK(in.collective_op == isa::CollectiveOp::all_reduce);
  CHECK(in.op0 == isa::AluOp::max);
  const isa::Program p = [&] {
    isa::Program q = a.program;
    q.stream(Engine::sync).push_back(in);
    return q;
  }();
  const std::string text = isa::print_assembly(p);
  CHECK_THAT(text, Contains("ar: sp.collective z{"));
  CHECK_THAT(text, Contains(", cc=all_reduce, op0=max, update=s+=1"));
  const isa::Assembly back = isa::parse_assembly(text, "back.tasm", trn2());
  REQUIRE(back.sequence.size() == 1);
  CHECK(back.sequence[0].collective_op == isa::CollectiveOp::all_reduce);
  CHECK(back.sequence[0].op0 == isa::AluOp::max);
  // The JSON program form carries it as "cc".
  const nlohmann::json j = isa::to_json(p);
  CHECK_THAT(j.dump(), Contains("\"cc\":\"all_reduce\""));
  const isa::Assembly from = isa::from_json(j, "p.json");
  CHECK(from.program.stream(Engine::sync)[0].collective_op == isa::CollectiveOp::all_reduce);
  CHECK(from.program.stream(Engine::sync)[0].op0 == isa::AluOp::max);
}

TEST_CASE("a collective's group prints and parses back, and its sizes count the group's ranks") {
  const isa::Assembly a = isa::parse_assembly(
      program_with("sp.collective y[:, :], x[:, :], cc=all_gather, group=4, update=s+=1"),
      "cc.tasm", trn2());
  REQUIRE(a.sequence.size() == 1);
  CHECK(a.sequence[0].collective_group == 4);
  isa::Program p = a.program;
  p.stream(Engine::sync).push_back(a.sequence[0]);
  CHECK_THAT(isa::print_assembly(p), Contains("cc=all_gather, group=4, op0=bypass, update=s+=1"));
  CHECK(
      isa::from_json(isa::to_json(p), "p.json").program.stream(Engine::sync)[0].collective_group ==
      4);
  // all_gather of [4, 64] into [16, 64] over groups of 4 among 8 cores: valid; over all 8 not.
  CHECK_NOTHROW(isa::validate_collectives(p, 8));
  p.stream(Engine::sync)[0].collective_group = 0;
  CHECK_THROWS_WITH(isa::validate_collectives(p, 8), Contains("all_gather over 8 ranks"));
  p.stream(Engine::sync)[0].collective_group = 3;
  CHECK_THROWS_WITH(isa::validate_collectives(p, 8),
                    Contains("group=3 does not divide the run's 8 cores into groups"));
}

TEST_CASE("a collective's sizes follow nccom-test's convention over the run's ranks") {
  auto sized = [](isa::CollectiveOp op, uint64_t src, uint64_t dst) {
    isa::Instruction in;
    in.opcode = isa::Opcode::collective;
    in.collective_op = op;
    in.src[0].edit().partitions = 1;
    in.src[0].edit().ndims = 1;
    in.src[0].edit().dims[0] = isa::Dim{1, static_cast<uint32_t>(src)};
    in.dst = in.src[0];
    in.dst.edit().dims[0].count = static_cast<uint32_t>(dst);
    return in;
  };
  using Op = isa::CollectiveOp;
  CHECK(isa::collective_size_error(sized(Op::all_reduce, 64, 64), 4).empty());
  CHECK_THAT(isa::collective_size_error(sized(Op::all_reduce, 64, 32), 4),
             Contains("src and dst hold the same number of elements"));
  CHECK(isa::collective_size_error(sized(Op::all_gather, 64, 256), 4).empty());
  CHECK_THAT(isa::collective_size_error(sized(Op::all_gather, 64, 64), 4),
             Contains("dst holds src x 4 = 256 elements; it has 64"));
  CHECK(isa::collective_size_error(sized(Op::reduce_scatter, 256, 64), 4).empty());
  CHECK_THAT(isa::collective_size_error(sized(Op::reduce_scatter, 64, 64), 4),
             Contains("src holds dst x 4 = 256 elements"));
  CHECK(isa::collective_size_error(sized(Op::all_to_all, 64, 64), 4).empty());
  CHECK_THAT(isa::collective_size_error(sized(Op::all_to_all, 66, 66), 4),
             Contains("do not split into 4 equal chunks"));
  CHECK(isa::collective_size_error(sized(Op::permute, 64, 64), 8).empty());
}

TEST_CASE("a collective takes HBM tensors of one dtype and a reduction only when it reduces") {
  CHECK_THAT(parse_error(program_with("sp.collective z[:, :], t[:, :], cc=all_reduce, op0=add")),
             Contains("a collective moves HBM tensors"));
  CHECK_THAT(parse_error(program_with("sp.collective z[:, :], x[:, :], cc=all_reduce")),
             Contains("all_reduce reduces with op0 add, max or min; op0 is bypass"));
  CHECK_THAT(parse_error(program_with("sp.collective y[:, :], x[:, :], cc=all_gather, op0=add")),
             Contains("all_gather does not reduce; op0 must be bypass"));
  CHECK_THAT(parse_error(program_with("sp.collective y[:, :], x[:, :], cc=broadcast")),
             Contains("unknown collective \"broadcast\""));
  CHECK_THAT(parse_error(program_with("sp.collective y[:, :], x[:, :], queue=q")),
             Contains("collective takes no option \"queue\""));
  CHECK_THAT(parse_error(".cores 200\n"), Contains("200 cores; trn2 has 1 to 128 (8 per chip)"));
  CHECK_THAT(parse_error(".chips 17\n"), Contains("17 chips; a trn2 instance has 1 to 16"));
}

TEST_CASE("send and recv print and parse back with their one operand and peer, in both forms") {
  const isa::Assembly a =
      isa::parse_assembly(program_with("s: sp.collective x[:, :], cc=send, peer=+1, update=s+=1\n"
                                       "r: sp.collective z[:, :], cc=recv, peer=-3, update=s+=1\n"
                                       "sp.collective z[:, :], cc=recv, peer=2\n"
                                       ".expect z = recv(x, peer=-1, scale=2)"),
                          "cc.tasm", trn2());
  REQUIRE(a.sequence.size() == 3);
  const isa::Instruction& send = a.sequence[0];
  CHECK(send.collective_op == isa::CollectiveOp::send);
  CHECK(send.src[0]->present());
  CHECK_FALSE(send.dst->present());
  CHECK(send.peer_kind == isa::PeerKind::relative);
  CHECK(send.peer == 1);
  const isa::Instruction& recv = a.sequence[1];
  CHECK(recv.dst->present());
  CHECK_FALSE(recv.src[0]->present());
  CHECK(recv.peer == -3);
  CHECK(a.sequence[2].peer_kind == isa::PeerKind::absolute);
  CHECK(a.sequence[2].peer == 2);
  REQUIRE(a.expectations.size() == 1);
  CHECK(a.expectations[0].function == "recv");
  CHECK(a.expectations[0].peer == -1);
  CHECK(a.expectations[0].scale == 2.0);
  isa::Program p = a.program;
  for (const auto& in : a.sequence) p.stream(Engine::sync).push_back(in);
  const std::string text = isa::print_assembly(p, {}, {}, a.expectations);
  CHECK_THAT(text, Contains("s: sp.collective x{"));
  CHECK_THAT(text, Contains("cc=send, peer=+1"));
  CHECK_THAT(text, Contains("cc=recv, peer=-3"));
  CHECK_THAT(text, Contains("cc=recv, peer=2"));
  CHECK_THAT(text, Contains(".expect z = recv(x, peer=-1, scale=2)"));
  const isa::Assembly back = isa::parse_assembly(text, "back.tasm", trn2());
  REQUIRE(back.sequence.size() == 3);
  CHECK(back.sequence[0].peer == 1);
  CHECK(back.sequence[0].src[0]->present());
  CHECK(back.sequence[1].peer == -3);
  // JSON: a send has only "src", a recv only "dst"; peer an integer (absolute) or "+K"/"-K".
  const nlohmann::json j = isa::to_json(p, {}, {}, a.expectations);
  const auto& stream = j["streams"]["sp"];
  CHECK_FALSE(stream[0].contains("dst"));
  CHECK(stream[0]["peer"] == "+1");
  CHECK_FALSE(stream[1].contains("src"));
  CHECK(stream[1]["peer"] == "-3");
  CHECK(stream[2]["peer"] == 2);
  const isa::Assembly from = isa::from_json(j, "p.json");
  const auto& s = from.program.stream(Engine::sync);
  CHECK(s[0].collective_op == isa::CollectiveOp::send);
  CHECK(s[0].src[0]->present());
  CHECK(s[0].peer == 1);
  CHECK(s[1].peer == -3);
  CHECK(s[2].peer_kind == isa::PeerKind::absolute);
  REQUIRE(from.expectations.size() == 1);
  CHECK(from.expectations[0].peer == -1);
  CHECK(from.expectations[0].scale == 2.0);
  // The Instruction did not grow: peer sits in padding (isa/instruction.cpp keeps it at 192
  // bytes with libstdc++ on x86-64, the platform this suite runs on).
  CHECK(sizeof(isa::Instruction) <= 192);
}

TEST_CASE("send and recv take one HBM operand, a peer, no reduction and no group") {
  CHECK_THAT(parse_error(program_with("sp.collective x[:, :], cc=send")),
             Contains("cc=send needs its partner core"));
  CHECK_THAT(parse_error(program_with("sp.collective t[:, :], cc=send, peer=+1")),
             Contains("a send moves HBM tensors"));
  CHECK_THAT(parse_error(program_with("sp.collective x[:, :], cc=send, peer=+1, group=2")),
             Contains("not group="));
  CHECK_THAT(parse_error(program_with("sp.collective z[:, :], x[:, :], cc=recv, peer=+1")),
             Contains("cc=recv takes one access pattern (dst, where it receives), found 2"));
  CHECK_THAT(parse_error(program_with("sp.collective z[:, :], x[:, :], cc=permute, peer=+1")),
             Contains("peer= is for cc=send and cc=recv"));
  CHECK_THAT(parse_error(program_with("sp.collective x[:, :], cc=send, peer=-2.5")),
             Contains("an integer"));
  CHECK_THAT(parse_error(program_with(".expect z = recv(x)")), Contains("needs its partner"));
  CHECK_THAT(parse_error(program_with(".expect z = copy(x, scale=2)")),
             Contains("scale= is for recv"));
  // The partner's range and itself depend on the run's cores.
  isa::Instruction in;
  in.opcode = isa::Opcode::collective;
  in.collective_op = isa::CollectiveOp::send;
  in.peer_kind = isa::PeerKind::relative;
  in.peer = -1;
  CHECK(isa::point_to_point_error(in, 4, -1).empty());
  CHECK_THAT(isa::point_to_point_error(in, 1, -1), Contains("partner is itself"));
  in.peer_kind = isa::PeerKind::absolute;
  in.peer = 3;
  CHECK(isa::point_to_point_error(in, 4, 0).empty());
  CHECK_THAT(isa::point_to_point_error(in, 4, 3), Contains("core 3 sends to itself"));
  CHECK_THAT(isa::point_to_point_error(in, 4, -1), Contains("would send to itself"));
  CHECK_THAT(isa::point_to_point_error(in, 2, 0), Contains("the run has cores 0 to 1"));
  CHECK(isa::peer_core(isa::PeerKind::relative, -1, 0, 4) == 3);
  CHECK(isa::peer_core(isa::PeerKind::relative, 5, 3, 4) == 0);
}
