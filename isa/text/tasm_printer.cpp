#include "isa/text/assembly.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "isa/text/text_form.hpp"

namespace trnsim::isa {

using namespace text_form;  // NOLINT: the text forms' shared vocabulary

namespace {

struct Printer {
  const Program& program;
  const std::vector<OnChipBuffer>& buffers;

  std::string access_pattern(const AccessPattern& ap) const {
    const int64_t es = size_of(ap.dtype);
    std::string name;
    std::optional<DType> declared;
    uint64_t base = 0;
    std::string range;
    if (ap.memory == Memory::hbm) {
      const DramTensor* t = nullptr;
      for (const auto& d : program.dram_tensors) {
        if (d.address <= ap.offset) t = &d;
      }
      if (t == nullptr) t = &program.dram_tensors.front();
      name = t->name;
      declared = t->dtype;
      base = t->address;
      range = fmt::format("0:{}*{}", ap.partitions, ap.partition_stride);
    } else {
      for (const auto& b : buffers) {
        if (b.memory == ap.memory && b.offset <= ap.offset &&
            ap.offset < b.offset + b.partition_bytes()) {
          name = b.name;
          declared = b.dtype;
          base = b.offset;
        }
      }
      if (name.empty()) name = ap.memory == Memory::sbuf ? "sbuf" : "psum";
      range = fmt::format("{}:{}", ap.start_partition, ap.start_partition + ap.partitions);
    }
    (void)es;
    std::string s = name;
    if (!declared || *declared != ap.dtype) s += fmt::format(".{}", name_of(ap.dtype));
    s += fmt::format("{{{}, +{}", range, ap.offset - base);
    for (int i = 0; i < ap.ndims; ++i)
      s += fmt::format(", [{},{}]", ap.dims[i].stride, ap.dims[i].count);
    return s + "}";
  }

  std::string scalar(const ScalarOperand& s) const {
    return s.per_partition().present() ? access_pattern(s.per_partition()) : number_text(s.imm());
  }

  static std::string escaped(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out;
  }

  static bool identifier(const std::string& s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
  }

  std::string instruction(const Instruction& in) const {
    std::string s;
    if (!in.label.empty())
      s += identifier(in.label) ? in.label + ": " : fmt::format("\"{}\": ", escaped(in.label));
    s += fmt::format("{}.{}", assembler_name_of(in.engine), name_of(in.opcode));
    std::vector<std::string> items;
    const int n = positional_operands(in.opcode);
    const bool p2p = is_collective(in.opcode) && is_point_to_point(in.collective_op);
    if (p2p) {
      // send names only its src, recv only its dst.
      items.push_back(access_pattern(in.collective_op == CollectiveOp::send ? in.src[0] : in.dst));
    } else {
      if (n > 0) items.push_back(access_pattern(in.dst));
      for (int i = 1; i < n; ++i) items.push_back(access_pattern(in.src[i - 1]));
    }
    const uint32_t f = fields_of(in.opcode);
    if (f & kQueue) items.push_back("queue=" + program.queues[in.dma_queue].name);
    if ((f & kQueue) && in.dma_dge) items.push_back("dge");
    if (f & kCollective) items.push_back(fmt::format("cc={}", name_of(in.collective_op)));
    if ((f & kCollective) && in.collective_group != 0)
      items.push_back(fmt::format("group={}", in.collective_group));
    if ((f & kCollective) && in.peer_kind != PeerKind::none)
      items.push_back(in.peer_kind == PeerKind::relative ? fmt::format("peer={:+d}", in.peer)
                                                         : fmt::format("peer={}", in.peer));
    if (f & kStartStop) {
      if (in.accumulate_start) items.push_back("start");
      if (in.accumulate_stop) items.push_back("stop");
    }
    if (f & kFunction) items.push_back(fmt::format("func={}", name_of(in.function)));
    if (f & kScale) items.push_back("scale=" + scalar(in.scale));
    if (f & kBias) items.push_back("bias=" + scalar(in.bias));
    if ((f & kAccumulate) && in.accumulate->present())
      items.push_back("accumulate=" + access_pattern(in.accumulate));
    if (f & kOp0) items.push_back(fmt::format("op0={}", name_of(in.op0)));
    if (f & kOperand0) items.push_back("operand0=" + scalar(in.operand0));
    if (f & kOp1) items.push_back(fmt::format("op1={}", name_of(in.op1)));
    if (f & kOperand1) items.push_back("operand1=" + scalar(in.operand1));
    if (f & kReduceDims) items.push_back(fmt::format("reduce_dims={}", in.reduce_dims));
    if (f & kAffine) {
      items.push_back(fmt::format("base={}", in.extra->index_base));
      items.push_back(fmt::format("pstep={}", in.extra->partition_step));
      items.push_back(fmt::format("steps=[{}]", fmt::join(in.extra->index_steps, ", ")));
    }
    if (f & kFill) items.push_back("fill=" + number_text(in.extra->fill));
    if (f & kMask)
      items.push_back(fmt::format("mask=[{}]", fmt::join(in.extra->shuffle_mask, ",")));
    if ((f & kReverse) && in.reverse != 0) items.push_back(fmt::format("reverse={}", in.reverse));
    if (f & kGather) {
      items.push_back(fmt::format("elements={}", in.gather_elements));
      items.push_back(fmt::format("indices={}", in.gather_indices));
    }
    if (f & kBase) items.push_back(fmt::format("base={}", in.extra->index_base));
    if ((f & kNegate) && in.negate) items.push_back("negate");
    if (in.source != 0) items.push_back(fmt::format("src={}", in.source));
    for (const auto& w : in.waits) {
      items.push_back(fmt::format("wait={}>={}", program.semaphores[w.semaphore].name, w.value));
    }
    for (const auto& u : in.updates) {
      items.push_back(fmt::format("update={}{}{}", program.semaphores[u.semaphore].name,
                                  u.kind == SemaphoreUpdateKind::add ? "+=" : "=", u.value));
    }
    if (!items.empty()) s += " " + fmt::format("{}", fmt::join(items, ", "));
    return s;
  }
};

}  // namespace

std::string print_assembly(const Program& program, const std::vector<OnChipBuffer>& buffers,
                           const std::vector<std::pair<std::string, TensorInit>>& inits,
                           const std::vector<Expectation>& expectations) {
  std::string s = "# trnsim assembly; per-engine streams with their semaphores\n.sync manual\n";
  for (const auto& t : program.dram_tensors) {
    s += fmt::format(".tensor {} {} {}", t.name, name_of(t.dtype), shape_text(t.shape));
    for (const auto& [n, i] : inits) {
      if (n == t.name) s += " init=" + init_text(i);
    }
    s += "\n";
  }
  for (const auto& b : buffers) {
    s += fmt::format(".buffer {} {} {} {}\n", b.name, b.memory == Memory::sbuf ? "sbuf" : "psum",
                     name_of(b.dtype), shape_text(b.shape));
  }
  // Queues first: each declares its own semaphore, which keeps the semaphore numbering.
  std::vector<bool> queue_semaphore(program.semaphores.size(), false);
  for (const auto& q : program.queues) queue_semaphore[q.semaphore] = true;
  size_t next_queue = 0;
  for (size_t i = 0; i < program.semaphores.size(); ++i) {
    if (queue_semaphore[i]) {
      s += fmt::format(".queue {}\n", program.queues[next_queue++].name);
    } else {
      s += fmt::format(".semaphore {}\n", program.semaphores[i].name);
    }
  }
  // Source locations, numbered from 1 in order: an instruction's src=N names the N-th.
  for (const auto& where : program.sources) s += fmt::format(".source \"{}\"\n", where);
  for (const auto& e : expectations) {
    s += fmt::format(
        ".expect {} = {}({}{}{})\n", e.output, e.function, fmt::join(e.inputs, ", "),
        e.function == "rmsnorm" ? fmt::format(", eps={}", number_text(e.eps)) : "",
        e.group != 0 ? fmt::format(", group={}", e.group)
        : e.peer != 0
            ? fmt::format(", peer={:+d}{}", e.peer,
                          e.scale != 1.0 ? fmt::format(", scale={}", number_text(e.scale)) : "")
            : "");
  }
  const Printer printer{program, buffers};
  for (Engine e : kAllEngines) {
    if (program.stream(e).empty()) continue;
    s += fmt::format("\n# {}\n", name_of(e));
    for (const auto& in : program.stream(e)) s += printer.instruction(in) + "\n";
  }
  return s;
}

}  // namespace trnsim::isa
