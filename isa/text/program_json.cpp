#include "isa/text/assembly.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "isa/text/text_form.hpp"

namespace trnsim::isa {

using namespace text_form;  // NOLINT: the text forms' shared vocabulary

namespace {

nlohmann::json ap_json(const AccessPattern& ap) {
  nlohmann::json dims = nlohmann::json::array();
  for (int i = 0; i < ap.ndims; ++i) dims.push_back({ap.dims[i].stride, ap.dims[i].count});
  return {{"memory", std::string(name_of(ap.memory))},
          {"dtype", std::string(name_of(ap.dtype))},
          {"start_partition", ap.start_partition},
          {"partitions", ap.partitions},
          {"partition_stride", ap.partition_stride},
          {"offset", ap.offset},
          {"dims", dims}};
}

nlohmann::json scalar_json(const ScalarOperand& s) {
  return s.per_partition().present() ? ap_json(s.per_partition()) : nlohmann::json(s.imm());
}

struct JsonReader {
  const std::string& file;
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw AssemblyError(file, 0, 0, fmt::format("{}: {}", where, what));
  }
  const nlohmann::json& at(const nlohmann::json& j, const std::string& key,
                           const std::string& where) const {
    if (!j.is_object() || !j.contains(key)) fail(where, fmt::format("missing \"{}\"", key));
    return j.at(key);
  }
  // `j` itself, when it is an array.
  const nlohmann::json& array(const nlohmann::json& j, const std::string& where) const {
    if (!j.is_array()) fail(where, fmt::format("expected an array, got {}", j.type_name()));
    return j;
  }
  bool boolean(const nlohmann::json& j, const char* key, bool otherwise,
               const std::string& where) const {
    if (!j.contains(key)) return otherwise;
    if (!j[key].is_boolean())
      fail(where + "/" + key, fmt::format("expected true or false, got {}", j[key].dump()));
    return j[key].get<bool>();
  }
  int64_t integer(const nlohmann::json& j, const std::string& where) const {
    if (!j.is_number_integer()) fail(where, fmt::format("expected an integer, got {}", j.dump()));
    return j.get<int64_t>();
  }
  std::string string(const nlohmann::json& j, const std::string& where) const {
    if (!j.is_string()) fail(where, fmt::format("expected a string, got {}", j.dump()));
    return j.get<std::string>();
  }
  template <typename T>
  T named(const nlohmann::json& j, std::optional<T> (*parse)(std::string_view),
          const std::string& where) const {
    const std::string s = string(j, where);
    const auto v = parse(s);
    if (!v) fail(where, fmt::format("unknown value \"{}\"", s));
    return *v;
  }
  AccessPattern ap(const nlohmann::json& j, const std::string& w) const {
    AccessPattern a;
    const std::string m = string(at(j, "memory", w), w + "/memory");
    a.memory = m == "HBM"    ? Memory::hbm
               : m == "SBUF" ? Memory::sbuf
               : m == "PSUM" ? Memory::psum
                             : (fail(w + "/memory", "expected HBM, SBUF or PSUM"), Memory::hbm);
    a.dtype = named<DType>(at(j, "dtype", w), parse_dtype, w + "/dtype");
    const int64_t sp = integer(at(j, "start_partition", w), w + "/start_partition");
    const int64_t parts = integer(at(j, "partitions", w), w + "/partitions");
    if (sp < 0 || sp > 4096 || parts <= 0 || parts > 1 << 30)
      fail(w, "partition range out of bounds");
    a.start_partition = static_cast<uint32_t>(sp);
    a.partitions = static_cast<uint32_t>(parts);
    a.partition_stride = integer(at(j, "partition_stride", w), w + "/partition_stride");
    const int64_t off = integer(at(j, "offset", w), w + "/offset");
    if (off < 0) fail(w + "/offset", "must not be negative");
    a.offset = static_cast<uint64_t>(off);
    const auto& dims = at(j, "dims", w);
    if (!dims.is_array() || dims.size() > kMaxFreeDims)
      fail(w + "/dims", "expected up to 4 [stride, count] pairs");
    for (size_t i = 0; i < dims.size(); ++i) {
      const std::string dw = fmt::format("{}/dims/{}", w, i);
      if (!dims[i].is_array() || dims[i].size() != 2) fail(dw, "expected [stride, count]");
      const int64_t count = integer(dims[i][1], dw + "/1");
      if (count <= 0 || count > 65535) fail(dw + "/1", "a count is 1 to 65535");
      a.dims[a.ndims++] = Dim{integer(dims[i][0], dw + "/0"), static_cast<uint32_t>(count)};
    }
    return a;
  }
  ScalarOperand scalar(const nlohmann::json& j, const std::string& w) const {
    if (j.is_number()) return ScalarOperand::immediate(j.get<float>());
    return ScalarOperand::from(ap(j, w));
  }
};

}  // namespace

nlohmann::json to_json(const Program& program, const std::vector<OnChipBuffer>& buffers,
                       const std::vector<std::pair<std::string, TensorInit>>& inits,
                       const std::vector<Expectation>& expectations) {
  using nlohmann::json;
  json tensors = json::array();
  for (const auto& t : program.dram_tensors) {
    json o = {{"name", t.name},
              {"dtype", std::string(name_of(t.dtype))},
              {"shape", t.shape},
              {"address", t.address}};
    for (const auto& [n, i] : inits) {
      if (n == t.name) o["init"] = init_text(i);
    }
    tensors.push_back(o);
  }
  json bufs = json::array();
  for (const auto& b : buffers) {
    bufs.push_back({{"name", b.name},
                    {"memory", std::string(name_of(b.memory))},
                    {"dtype", std::string(name_of(b.dtype))},
                    {"shape", b.shape},
                    {"offset", b.offset}});
  }
  json sems = json::array();
  for (const auto& s : program.semaphores) sems.push_back(s.name);
  json queues = json::array();
  for (const auto& q : program.queues)
    queues.push_back({{"name", q.name}, {"semaphore", q.semaphore}});
  json streams = json::object();
  for (Engine e : kAllEngines) {
    json list = json::array();
    for (const auto& in : program.stream(e)) {
      json o = {{"opcode", std::string(name_of(in.opcode))}};
      if (!in.label.empty()) o["label"] = in.label;
      const int n = positional_operands(in.opcode);
      const bool p2p = is_collective(in.opcode) && is_point_to_point(in.collective_op);
      if (p2p && in.collective_op == CollectiveOp::send) {
        o["src"] = json::array({ap_json(in.src[0])});
      } else if (p2p) {
        o["dst"] = ap_json(in.dst);
      } else {
        if (n > 0) o["dst"] = ap_json(in.dst);
        json src = json::array();
        for (int i = 1; i < n; ++i) src.push_back(ap_json(in.src[i - 1]));
        if (n > 1) o["src"] = src;
      }
      const uint32_t f = fields_of(in.opcode);
      if (f & kQueue) o["queue"] = in.dma_queue;
      if ((f & kQueue) && in.dma_dge) o["dge"] = true;
      if (f & kCollective) o["cc"] = std::string(name_of(in.collective_op));
      if ((f & kCollective) && in.collective_group != 0) o["group"] = in.collective_group;
      if ((f & kCollective) && in.peer_kind == PeerKind::absolute) o["peer"] = in.peer;
      if ((f & kCollective) && in.peer_kind == PeerKind::relative)
        o["peer"] = fmt::format("{:+d}", in.peer);
      if (f & kStartStop) {
        o["start"] = in.accumulate_start;
        o["stop"] = in.accumulate_stop;
      }
      if (f & kFunction) o["function"] = std::string(name_of(in.function));
      if (f & kScale) o["scale"] = scalar_json(in.scale);
      if (f & kBias) o["bias"] = scalar_json(in.bias);
      if ((f & kAccumulate) && in.accumulate->present()) o["accumulate"] = ap_json(in.accumulate);
      if (f & kOp0) o["op0"] = std::string(name_of(in.op0));
      if (f & kOperand0) o["operand0"] = scalar_json(in.operand0);
      if (f & kOp1) o["op1"] = std::string(name_of(in.op1));
      if (f & kOperand1) o["operand1"] = scalar_json(in.operand1);
      if (f & kReduceDims) o["reduce_dims"] = in.reduce_dims;
      if (f & kAffine) {
        o["index_base"] = in.extra->index_base;
        o["partition_step"] = in.extra->partition_step;
        o["index_steps"] = in.extra->index_steps;
      }
      if (f & kFill) o["fill"] = in.extra->fill;
      if (f & kMask) o["shuffle_mask"] = in.extra->shuffle_mask;
      if ((f & kReverse) && in.reverse != 0) o["reverse"] = in.reverse;
      if (f & kGather) {
        o["elements"] = in.gather_elements;
        o["indices"] = in.gather_indices;
      }
      if (f & kBase) o["index_base"] = in.extra->index_base;
      if ((f & kNegate) && in.negate) o["negate"] = true;
      if (in.source != 0) o["source"] = in.source;
      json waits = json::array();
      for (const auto& w : in.waits)
        waits.push_back({{"semaphore", w.semaphore}, {"value", w.value}});
      json updates = json::array();
      for (const auto& u : in.updates) {
        updates.push_back({{"semaphore", u.semaphore},
                           {u.kind == SemaphoreUpdateKind::add ? "add" : "set", u.value}});
      }
      if (!waits.empty()) o["wait"] = waits;
      if (!updates.empty()) o["update"] = updates;
      list.push_back(o);
    }
    streams[std::string(assembler_name_of(e))] = list;
  }
  json expect = json::array();
  for (const auto& e : expectations) {
    expect.push_back(
        {{"output", e.output}, {"function", e.function}, {"inputs", e.inputs}, {"eps", e.eps}});
    if (e.group != 0) expect.back()["group"] = e.group;
    if (e.peer != 0) expect.back()["peer"] = e.peer;
    if (e.scale != 1.0) expect.back()["scale"] = e.scale;
  }
  json out = {{"format", "trnsim-program"}, {"version", 1},       {"name", program.name},
              {"tensors", tensors},         {"buffers", bufs},    {"semaphores", sems},
              {"queues", queues},           {"streams", streams}, {"expect", expect}};
  if (!program.sources.empty()) out["sources"] = program.sources;
  return out;
}

Assembly from_json(const nlohmann::json& j, const std::string& file) {
  const JsonReader r{file};
  if (!j.is_object() || !j.contains("format") || j["format"] != "trnsim-program") {
    r.fail("/format", "expected \"trnsim-program\"");
  }
  Assembly a;
  a.file = file;
  a.auto_sync = false;
  Program& p = a.program;
  if (j.contains("name")) p.name = r.string(j["name"], "/name");
  if (j.contains("cores")) {
    const int64_t n = r.integer(j["cores"], "/cores");
    if (n < 1 || n > 1024) r.fail("/cores", "expected a number of NeuronCores, 1 or more");
    a.cores = static_cast<uint32_t>(n);
  }
  if (j.contains("chips")) {
    const int64_t n = r.integer(j["chips"], "/chips");
    if (n < 1 || n > 1024) r.fail("/chips", "expected a number of chips, 1 or more");
    a.chips = static_cast<uint32_t>(n);
  }
  if (j.contains("arch")) {
    a.arch = r.string(j["arch"], "/arch");
    if (!config::preset(a.arch))
      r.fail("/arch", fmt::format("unknown preset; expected one of {}", config::preset_names()));
  }
  const auto& tensors = r.at(j, "tensors", "");
  if (!tensors.is_array()) r.fail("/tensors", "expected an array");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string w = fmt::format("/tensors/{}", i);
    const auto& t = tensors[i];
    DramTensor d;
    d.name = r.string(r.at(t, "name", w), w + "/name");
    d.dtype = r.named<DType>(r.at(t, "dtype", w), parse_dtype, w + "/dtype");
    const auto& shape = r.at(t, "shape", w);
    if (!shape.is_array() || shape.empty())
      r.fail(w + "/shape", "expected an array of positive integers");
    for (size_t k = 0; k < shape.size(); ++k) {
      const int64_t v = r.integer(shape[k], fmt::format("{}/shape/{}", w, k));
      if (v <= 0 || v > (int64_t(1) << 40))
        r.fail(fmt::format("{}/shape/{}", w, k), "out of range");
      d.shape.push_back(v);
    }
    uint64_t bytes = size_of(d.dtype);
    for (int64_t v : d.shape) {
      if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(v), &bytes) ||
          bytes > (uint64_t(1) << 44)) {
        r.fail(w + "/shape", "the tensor is larger than any HBM");
      }
    }
    const int64_t addr = r.integer(r.at(t, "address", w), w + "/address");
    if (addr < 0 || addr > (int64_t(1) << 44)) r.fail(w + "/address", "out of range");
    d.address = static_cast<uint64_t>(addr);
    p.dram_tensors.push_back(d);
    if (t.contains("data")) a.data_files.emplace_back(d.name, r.string(t["data"], w + "/data"));
    if (r.boolean(t, "output", false, w)) a.outputs.push_back(d.name);
    if (t.contains("init")) {
      const std::string text = ".tensor _ fp32 [1] init=" + r.string(t["init"], w + "/init");
      try {
        const Assembly one = parse_assembly(text, file, config::trn2());
        a.inits.emplace_back(d.name, one.inits.at(0).second);
      } catch (const AssemblyError&) {
        r.fail(w + "/init",
               "expected zeros, normal(mean, stddev, seed=N) or uniform(low, high, seed=N)");
      }
    }
  }
  if (j.contains("buffers")) {
    const auto& buffers = r.array(j["buffers"], "/buffers");
    for (size_t i = 0; i < buffers.size(); ++i) {
      const std::string w = fmt::format("/buffers/{}", i);
      const auto& b = buffers[i];
      OnChipBuffer ob;
      ob.name = r.string(r.at(b, "name", w), w + "/name");
      ob.memory =
          r.string(r.at(b, "memory", w), w + "/memory") == "PSUM" ? Memory::psum : Memory::sbuf;
      ob.dtype = r.named<DType>(r.at(b, "dtype", w), parse_dtype, w + "/dtype");
      for (const auto& v : r.array(r.at(b, "shape", w), w + "/shape"))
        ob.shape.push_back(r.integer(v, w + "/shape"));
      ob.offset = static_cast<uint64_t>(r.integer(r.at(b, "offset", w), w + "/offset"));
      a.buffers.push_back(ob);
    }
  }
  if (j.contains("sources")) {
    const auto& sources = r.array(j["sources"], "/sources");
    for (size_t i = 0; i < sources.size(); ++i)
      p.sources.push_back(r.string(sources[i], fmt::format("/sources/{}", i)));
  }
  const auto& sems = r.array(r.at(j, "semaphores", ""), "/semaphores");
  for (size_t i = 0; i < sems.size(); ++i)
    p.semaphores.push_back(Semaphore{r.string(sems[i], fmt::format("/semaphores/{}", i))});
  const auto& queues = r.array(r.at(j, "queues", ""), "/queues");
  for (size_t i = 0; i < queues.size(); ++i) {
    const std::string w = fmt::format("/queues/{}", i);
    const int64_t s = r.integer(r.at(queues[i], "semaphore", w), w + "/semaphore");
    if (s < 0 || static_cast<size_t>(s) >= p.semaphores.size())
      r.fail(w + "/semaphore", "no such semaphore");
    p.queues.push_back(
        DmaQueue{r.string(r.at(queues[i], "name", w), w + "/name"), static_cast<uint16_t>(s)});
  }
  const auto& streams = r.at(j, "streams", "");
  if (!streams.is_object()) r.fail("/streams", "expected an object of per-engine streams");
  for (Engine e : kAllEngines) {
    const std::string ename(assembler_name_of(e));
    if (!streams.contains(ename)) continue;
    const auto& list = r.array(streams[ename], "/streams/" + ename);
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string w = fmt::format("/streams/{}/{}", ename, i);
      const auto& o = list[i];
      Instruction in;
      in.engine = e;
      in.opcode = r.named<Opcode>(r.at(o, "opcode", w), parse_opcode, w + "/opcode");
      if (!runs_on(in.opcode, e))
        r.fail(w + "/opcode", fmt::format("{} does not run on {}", name_of(in.opcode), name_of(e)));
      if (o.contains("label")) in.label = r.string(o["label"], w + "/label");
      const int n = positional_operands(in.opcode);
      const uint32_t f = fields_of(in.opcode);
      if (f & kCollective)
        in.collective_op = r.named<CollectiveOp>(r.at(o, "cc", w), parse_collective_op, w + "/cc");
      if (is_collective(in.opcode) && is_point_to_point(in.collective_op)) {
        // send has only "src" ([one pattern]), recv only "dst".
        const bool send = in.collective_op == CollectiveOp::send;
        if (o.contains(send ? "dst" : "src"))
          r.fail(w + (send ? "/dst" : "/src"),
                 send ? "a send has no dst (only src, what it sends)"
                      : "a recv has no src (only dst, where it receives)");
        if (send) {
          const auto& src = r.at(o, "src", w);
          if (!src.is_array() || src.size() != 1) r.fail(w + "/src", "expected 1 access pattern");
          in.src[0] = r.ap(src[0], w + "/src/0");
        } else {
          in.dst = r.ap(r.at(o, "dst", w), w + "/dst");
        }
        const auto& peer = r.at(o, "peer", w);
        // An integer: an absolute core; a string "+K" / "-K": relative.
        int64_t v = 0;
        bool relative = false;
        if (peer.is_string()) {
          const std::string t = peer.get<std::string>();
          size_t used = 0;
          try {
            if (t.size() > 1 && (t[0] == '+' || t[0] == '-')) v = std::stoll(t, &used);
          } catch (const std::exception&) {
            used = 0;
          }
          if (used == 0 || used != t.size())
            r.fail(w + "/peer",
                   fmt::format("expected a core or \"+K\" / \"-K\", got {}", peer.dump()));
          relative = true;
        } else {
          v = r.integer(peer, w + "/peer");
        }
        if (v < -32767 || v > 32767 || (!relative && v < 0))
          r.fail(w + "/peer",
                 "expected a core 0 to 32767, or \"+K\" / \"-K\" with K at most 32767");
        in.peer_kind = relative ? PeerKind::relative : PeerKind::absolute;
        in.peer = static_cast<int16_t>(v);
      } else {
        if (n > 0) in.dst = r.ap(r.at(o, "dst", w), w + "/dst");
        if (n > 1) {
          const auto& src = r.at(o, "src", w);
          if (!src.is_array() || static_cast<int>(src.size()) != n - 1)
            r.fail(w + "/src", fmt::format("expected {} access patterns", n - 1));
          for (int k = 0; k + 1 < n; ++k) in.src[k] = r.ap(src[k], fmt::format("{}/src/{}", w, k));
        }
      }
      if (f & kQueue) {
        const int64_t q = r.integer(r.at(o, "queue", w), w + "/queue");
        if (q < 0 || static_cast<size_t>(q) >= p.queues.size())
          r.fail(w + "/queue", "no such queue");
        in.dma_queue = static_cast<uint16_t>(q);
        in.dma_dge = r.boolean(o, "dge", false, w);
      }
      if ((f & kCollective) && o.contains("group")) {
        const int64_t g = r.integer(o["group"], w + "/group");
        if (g < 1 || g > 255) r.fail(w + "/group", "expected 1 to 255 cores per group");
        in.collective_group = static_cast<uint8_t>(g);
      }
      if (f & kStartStop) {
        in.accumulate_start = r.boolean(o, "start", true, w);
        in.accumulate_stop = r.boolean(o, "stop", true, w);
      }
      if ((f & kFunction) && o.contains("function"))
        in.function =
            r.named<ActivationFunction>(o["function"], parse_activation_function, w + "/function");
      if ((f & kScale) && o.contains("scale")) in.scale = r.scalar(o["scale"], w + "/scale");
      if ((f & kBias) && o.contains("bias")) in.bias = r.scalar(o["bias"], w + "/bias");
      if ((f & kAccumulate) && o.contains("accumulate"))
        in.accumulate = r.ap(o["accumulate"], w + "/accumulate");
      if ((f & kOp0) && o.contains("op0"))
        in.op0 = r.named<AluOp>(o["op0"], parse_alu_op, w + "/op0");
      if ((f & kOp1) && o.contains("op1"))
        in.op1 = r.named<AluOp>(o["op1"], parse_alu_op, w + "/op1");
      if ((f & kOperand0) && o.contains("operand0"))
        in.operand0 = r.scalar(o["operand0"], w + "/operand0");
      if ((f & kOperand1) && o.contains("operand1"))
        in.operand1 = r.scalar(o["operand1"], w + "/operand1");
      if ((f & kReduceDims) && o.contains("reduce_dims")) {
        const int64_t d = r.integer(o["reduce_dims"], w + "/reduce_dims");
        if (d < 1 || d > kMaxFreeDims) r.fail(w + "/reduce_dims", "is 1 to 4");
        in.reduce_dims = static_cast<uint8_t>(d);
      }
      if (f & kAffine) {
        in.extra.edit().index_base = static_cast<int32_t>(
            r.integer(o.value("index_base", nlohmann::json(0)), w + "/index_base"));
        in.extra.edit().partition_step = static_cast<int32_t>(
            r.integer(o.value("partition_step", nlohmann::json(0)), w + "/partition_step"));
        if (o.contains("index_steps")) {
          const auto& st = o["index_steps"];
          if (!st.is_array() || st.size() > kMaxFreeDims)
            r.fail(w + "/index_steps", "expected up to 4 integers");
          for (size_t k = 0; k < st.size(); ++k)
            in.extra.edit().index_steps[k] =
                static_cast<int32_t>(r.integer(st[k], w + "/index_steps"));
        }
      }
      if ((f & kFill) && o.contains("fill")) {
        if (!o["fill"].is_number()) r.fail(w + "/fill", "expected a number");
        in.extra.edit().fill = o["fill"].get<float>();
      }
      if ((f & kReverse) && o.contains("reverse")) {
        const int64_t v = r.integer(o["reverse"], w + "/reverse");
        if (v < 0 || v > 3) r.fail(w + "/reverse", "is 0 to 3");
        in.reverse = static_cast<uint8_t>(v);
      }
      if (f & kGather) {
        const int64_t e = r.integer(r.at(o, "elements", w), w + "/elements");
        const int64_t n = r.integer(r.at(o, "indices", w), w + "/indices");
        if (e < 1 || e > 32) r.fail(w + "/elements", "is 1 to 32");
        if (n < 1 || n > 65536) r.fail(w + "/indices", "is 1 to 65536");
        in.gather_elements = static_cast<uint8_t>(e);
        in.gather_indices = static_cast<uint32_t>(n);
      }
      if (f & kNegate) in.negate = r.boolean(o, "negate", false, w);
      if ((f & kBase) && o.contains("index_base")) {
        in.extra.edit().index_base =
            static_cast<int32_t>(r.integer(o["index_base"], w + "/index_base"));
      }
      if (o.contains("source")) {
        const int64_t v = r.integer(o["source"], w + "/source");
        if (v < 0 || static_cast<size_t>(v) > p.sources.size())
          r.fail(w + "/source", "names no entry of /sources");
        in.source = static_cast<uint32_t>(v);
      }
      if ((f & kMask) && o.contains("shuffle_mask")) {
        const auto& m = o["shuffle_mask"];
        if (!m.is_array() || m.size() != 32) r.fail(w + "/shuffle_mask", "expected 32 lanes");
        for (size_t k = 0; k < 32; ++k) {
          const int64_t v = r.integer(m[k], w + "/shuffle_mask");
          if (v < 0 || v > 31) r.fail(w + "/shuffle_mask", "a lane is 0 to 31");
          in.extra.edit().shuffle_mask[k] = static_cast<uint8_t>(v);
        }
      }
      auto sem = [&](const nlohmann::json& s, const std::string& sw) {
        const int64_t id = r.integer(s, sw);
        if (id < 0 || static_cast<size_t>(id) >= p.semaphores.size())
          r.fail(sw, "no such semaphore");
        return static_cast<uint16_t>(id);
      };
      if (o.contains("wait")) {
        const auto& waits = r.array(o["wait"], w + "/wait");
        for (size_t k = 0; k < waits.size(); ++k) {
          const std::string ww = fmt::format("{}/wait/{}", w, k);
          const auto& x = waits[k];
          in.waits.push_back(SemaphoreWait{sem(r.at(x, "semaphore", ww), ww + "/semaphore"),
                                           r.integer(r.at(x, "value", ww), ww + "/value")});
        }
      }
      if (o.contains("update")) {
        const auto& updates = r.array(o["update"], w + "/update");
        for (size_t k = 0; k < updates.size(); ++k) {
          const std::string uw = fmt::format("{}/update/{}", w, k);
          const auto& x = updates[k];
          const uint16_t s = sem(r.at(x, "semaphore", uw), uw + "/semaphore");
          if (x.contains("add")) {
            in.updates.push_back(
                SemaphoreUpdate{s, SemaphoreUpdateKind::add, r.integer(x["add"], uw + "/add")});
          } else {
            in.updates.push_back(SemaphoreUpdate{s, SemaphoreUpdateKind::set,
                                                 r.integer(r.at(x, "set", uw), uw + "/set")});
          }
        }
      }
      p.stream(e).push_back(in);
    }
  }
  if (j.contains("expect")) {
    const auto& expect = r.array(j["expect"], "/expect");
    for (size_t i = 0; i < expect.size(); ++i) {
      const std::string w = fmt::format("/expect/{}", i);
      const auto& x = expect[i];
      Expectation e;
      e.output = r.string(r.at(x, "output", w), w + "/output");
      e.function = r.string(r.at(x, "function", w), w + "/function");
      for (const auto& in : r.array(r.at(x, "inputs", w), w + "/inputs"))
        e.inputs.push_back(r.string(in, w + "/inputs"));
      if (x.contains("eps") && x["eps"].is_number()) e.eps = x["eps"].get<double>();
      if (x.contains("group")) {
        const int64_t g = r.integer(x["group"], w + "/group");
        if (g < 1 || g > 255) r.fail(w + "/group", "expected 1 to 255 cores per group");
        e.group = static_cast<uint32_t>(g);
      }
      if (x.contains("peer")) {
        const int64_t k = r.integer(x["peer"], w + "/peer");
        if (k < -32767 || k > 32767) r.fail(w + "/peer", "expected -32767 to 32767 cores");
        e.peer = static_cast<int32_t>(k);
      }
      if (x.contains("scale")) {
        if (!x["scale"].is_number()) r.fail(w + "/scale", "expected a number");
        e.scale = x["scale"].get<double>();
      }
      check_expectation(p, file, e, w);
      a.expectations.push_back(e);
    }
  }
  return a;
}

}  // namespace trnsim::isa
