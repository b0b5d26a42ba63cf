// The Python module _trnsim: trnsim's C++ core for the trnsim package (python/trnsim). It builds
// programs (the NKI tracer appends instructions one by one; each is checked as the simulator
// validates it), turns them into the text forms, and runs the simulation exactly as the command
// line does (sim::execute). It never computes a time of its own.
//
// SystemC elaborates once per process: run() may be called once per process. The Python side
// forks a child for each simulation (python/trnsim/_runner.py).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <systemc>
#include <vector>

#include "compiler/synchronize.hpp"
#include "config/arch.hpp"
#include "isa/semantics.hpp"
#include "isa/text/assembly.hpp"
#include "isa/validate.hpp"
#include "sim/report/key_averages.hpp"
#include "sim/run/load.hpp"
#include "sim/run/run.hpp"
#include "sim/run/tools.hpp"
#include "workloads/lowering.hpp"

namespace py = pybind11;
using namespace trnsim;

namespace {

int64_t as_int(py::handle h) {
  return h.cast<int64_t>();
}

isa::AccessPattern access_pattern(py::handle h) {
  isa::AccessPattern ap;
  if (h.is_none()) return ap;
  const auto t = h.cast<py::tuple>();
  if (t.size() != 7) throw std::invalid_argument("an access pattern is a 7-tuple");
  ap.memory = static_cast<isa::Memory>(as_int(t[0]));
  ap.dtype = static_cast<isa::DType>(as_int(t[1]));
  ap.start_partition = static_cast<uint32_t>(as_int(t[2]));
  ap.partitions = static_cast<uint32_t>(as_int(t[3]));
  ap.partition_stride = as_int(t[4]);
  ap.offset = static_cast<uint64_t>(as_int(t[5]));
  const auto dims = t[6].cast<py::tuple>();
  if (dims.size() > isa::kMaxFreeDims) throw std::invalid_argument("at most 4 free dimensions");
  for (auto d : dims) {
    const auto pair = d.cast<py::tuple>();
    const int64_t count = as_int(pair[1]);
    if (count <= 0 || count > 65535) {
      throw std::invalid_argument("a free dimension's count is 1 to 65535, got " +
                                  std::to_string(count));
    }
    ap.dims[ap.ndims++] = isa::Dim{as_int(pair[0]), static_cast<uint32_t>(count)};
  }
  return ap;
}

isa::ScalarOperand scalar(py::handle h) {
  if (py::isinstance<py::tuple>(h)) return isa::ScalarOperand::from(access_pattern(h));
  return isa::ScalarOperand::immediate(h.cast<float>());
}

// The options of one instruction, by name (only those given).
void apply_extra(isa::Instruction& in, const py::dict& extra) {
  for (auto item : extra) {
    const std::string key = item.first.cast<std::string>();
    py::handle v = item.second;
    if (key == "function") {
      in.function = static_cast<isa::ActivationFunction>(as_int(v));
    } else if (key == "scale") {
      in.scale = scalar(v);
    } else if (key == "bias") {
      in.bias = scalar(v);
    } else if (key == "accumulate") {
      in.accumulate = access_pattern(v);
    } else if (key == "op0") {
      in.op0 = static_cast<isa::AluOp>(as_int(v));
    } else if (key == "op1") {
      in.op1 = static_cast<isa::AluOp>(as_int(v));
    } else if (key == "operand0") {
      in.operand0 = scalar(v);
    } else if (key == "operand1") {
      in.operand1 = scalar(v);
    } else if (key == "reduce_dims") {
      in.reduce_dims = static_cast<uint8_t>(as_int(v));
    } else if (key == "start") {
      in.accumulate_start = v.cast<bool>();
    } else if (key == "stop") {
      in.accumulate_stop = v.cast<bool>();
    } else if (key == "queue") {
      in.dma_queue = static_cast<uint16_t>(as_int(v));
    } else if (key == "dge") {
      in.dma_dge = v.cast<bool>();
    } else if (key == "index_base") {
      in.extra.edit().index_base = static_cast<int32_t>(as_int(v));
    } else if (key == "partition_step") {
      in.extra.edit().partition_step = static_cast<int32_t>(as_int(v));
    } else if (key == "index_steps") {
      const auto steps = v.cast<std::vector<int64_t>>();
      if (steps.size() > isa::kMaxFreeDims) throw std::invalid_argument("at most 4 index steps");
      for (size_t k = 0; k < steps.size(); ++k)
        in.extra.edit().index_steps[k] = static_cast<int32_t>(steps[k]);
    } else if (key == "fill") {
      in.extra.edit().fill = v.cast<float>();
    } else if (key == "shuffle_mask") {
      const auto mask = v.cast<std::vector<int64_t>>();
      if (mask.size() != 32) throw std::invalid_argument("a shuffle mask has 32 lanes");
      for (size_t k = 0; k < 32; ++k)
        in.extra.edit().shuffle_mask[k] = static_cast<uint8_t>(mask[k]);
    } else if (key == "negate") {
      in.negate = v.cast<bool>();
    } else if (key == "reverse") {
      in.reverse = static_cast<uint8_t>(as_int(v));
    } else if (key == "gather_elements") {
      // Above a byte: 255, which validation refuses (not a wrapped value it might accept).
      in.gather_elements = static_cast<uint8_t>(std::min<int64_t>(as_int(v), 255));
    } else if (key == "gather_indices") {
      in.gather_indices = static_cast<uint32_t>(as_int(v));
    } else if (key == "label") {
      in.label = v.cast<std::string>();
    } else {
      throw std::invalid_argument("unknown instruction option " + key);
    }
  }
}

py::dict arch_dict(const config::ArchConfig& a) {
  py::dict d;
  d["name"] = a.name;
  d["partitions"] = a.partitions;
  d["sbuf_partition_bytes"] = a.sbuf_partition_bytes;
  d["psum_partition_bytes"] = a.psum_partition_bytes;
  d["psum_banks"] = a.psum_banks;
  d["pe_rows"] = a.pe_rows;
  d["pe_columns"] = a.pe_columns;
  d["matmul_moving_max"] = a.matmul_moving_max;
  d["bn_stats_free_max"] = a.bn_stats_free_max;
  d["vector_transpose_max"] = a.vector_transpose_max;
  d["dma_queues"] = a.dma_queues;
  d["chip_cores"] = a.chip_cores;
  // The largest logical core (LNC): the physical cores that share an HBM stack (nki.lnc pairs
  // "the physical NeuronCores that share an HBM stack"; trn1 has one core per stack: LNC=1).
  d["lnc_max"] = a.hbm.cores_per_stack;
  return d;
}

// A finished program: synchronised and validated, with the arch it was built for.
struct PyProgram {
  isa::Program program;
  config::ArchConfig arch;

  std::string to_json() const {
    nlohmann::json j = isa::to_json(program);
    j["arch"] = arch.name;
    return j.dump(1) + "\n";
  }
  std::string to_tasm() const { return ".arch " + arch.name + "\n" + isa::print_assembly(program); }
  uint64_t instruction_count() const { return program.instruction_count(); }
  py::list tensors() const {
    py::list out;
    for (const auto& t : program.dram_tensors) {
      py::dict d;
      d["name"] = t.name;
      d["dtype"] = std::string(isa::name_of(t.dtype));
      d["shape"] = t.shape;
      d["address"] = t.address;
      out.append(d);
    }
    return out;
  }
  py::dict engine_counts() const {
    py::dict d;
    for (Engine e : kAllEngines) d[py::str(std::string(name_of(e)))] = program.stream(e).size();
    return d;
  }
};

// Instructions in program order, checked one by one; finish() adds the synchronisation.
class ProgramBuilder {
 public:
  ProgramBuilder(const std::string& name, const std::string& arch,
                 const std::vector<std::string>& sets)
      : arch_(sim::configured_arch(arch.empty() ? "trn2" : arch, sets)) {
    program_.name = name;
  }

  py::dict arch_info() const { return arch_dict(arch_); }

  uint64_t add_tensor(const std::string& name, const std::string& dtype,
                      const std::vector<int64_t>& shape) {
    const auto t = isa::parse_dtype(dtype);
    if (!t) throw std::invalid_argument("unknown dtype " + dtype);
    return program_.add_dram_tensor(name, *t, shape).address;
  }
  uint16_t add_queue(const std::string& name) { return program_.add_queue(name); }
  uint32_t add_source(const std::string& where) {
    program_.sources.push_back(where);
    return static_cast<uint32_t>(program_.sources.size());
  }

  // (index, "") when the instruction holds to the rules, else (index, why).
  std::pair<size_t, std::string> add(int opcode, int engine, uint32_t source, py::handle dst,
                                     py::handle s0, py::handle s1, py::handle s2,
                                     py::handle extra) {
    isa::Instruction in;
    in.opcode = static_cast<isa::Opcode>(opcode);
    in.engine = static_cast<Engine>(engine);
    in.source = source;
    try {
      in.dst = access_pattern(dst);
      in.src[0] = access_pattern(s0);
      in.src[1] = access_pattern(s1);
      in.src[2] = access_pattern(s2);
      if (!extra.is_none()) apply_extra(in, extra.cast<py::dict>());
    } catch (const std::exception& e) {
      sequence_.push_back(in);
      return {sequence_.size() - 1, e.what()};
    }
    std::string err;
    if (sequence_.size() >= arch_.max_instructions) {
      err = "the kernel exceeds the " + std::to_string(arch_.max_instructions) +
            " instructions one program may hold";
    } else {
      err = isa::check_instruction(program_, arch_, in);
    }
    sequence_.push_back(std::move(in));
    return {sequence_.size() - 1, err};
  }

  void drop_last() {
    if (!sequence_.empty()) sequence_.pop_back();
  }

  // Instruction `index` writes `dst` instead (and, for a matmul, starts or continues an
  // accumulation group): the earlier API's `res[...] = call(...)` and `psum[...] += matmul`.
  std::string retarget(size_t index, py::handle dst, py::handle start) {
    isa::Instruction& in = sequence_.at(index);
    const isa::Instruction before = in;
    in.dst = access_pattern(dst);
    if (!start.is_none()) in.accumulate_start = start.cast<bool>();
    std::string err = isa::check_instruction(program_, arch_, in);
    if (!err.empty()) in = before;
    return err;
  }

  PyProgram finish() {
    PyProgram p{compiler::synchronize(sequence_, program_, arch_), arch_};
    try {
      isa::validate(p.program, arch_);
    } catch (const isa::ValidationError& e) {
      throw std::runtime_error(std::string("the traced program is invalid: ") + e.what());
    }
    return p;
  }

 private:
  config::ArchConfig arch_;
  isa::Program program_;
  std::vector<isa::Instruction> sequence_;
};

// Bytes of HBM tensor `t` from what Python sent: its own bytes (raw), or float32 values to round
// to a type numpy lacks (bf16, fp8).
std::string tensor_bytes(const isa::DramTensor& t, const std::string& data, bool raw) {
  if (raw) {
    if (data.size() != t.bytes()) {
      throw std::invalid_argument("input " + t.name + " has " + std::to_string(data.size()) +
                                  " bytes; the tensor has " + std::to_string(t.bytes()));
    }
    return data;
  }
  if (data.size() != t.elements() * 4) {
    throw std::invalid_argument("input " + t.name + ": expected float32 values");
  }
  std::string out(t.bytes(), '\0');
  for (uint64_t i = 0; i < t.elements(); ++i) {
    float f;
    std::memcpy(&f, data.data() + 4 * i, 4);
    isa::store_element(t.dtype, reinterpret_cast<uint8_t*>(&out[i * isa::size_of(t.dtype)]), f);
  }
  return out;
}

bool numpy_has(isa::DType t) {
  return !(t == isa::DType::bf16 || isa::is_fp8(t));
}

// SystemC runs one simulation per process: the first run() or run_workload() claims this one
// (a second of either is refused); the run's warnings and errors go to `errors`.
void claim_process_for_simulation(std::ostringstream& errors) {
  static bool ran = false;
  if (ran) {
    throw std::runtime_error(
        "SystemC runs one simulation per process: run each simulation in a process of its own "
        "(trnsim.run_program forks one)");
  }
  ran = true;
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(errors);
  auto logger = std::make_shared<spdlog::logger>("trnsim", sink);
  logger->set_pattern("%v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::warn);
}

py::dict run(const PyProgram& p, const py::dict& inputs, const py::dict& options) {
  std::ostringstream errors;
  claim_process_for_simulation(errors);

  sim::RunOptions o;
  o.out = options["out"].cast<std::string>();
  o.timing_only = options["timing_only"].cast<bool>();
  o.report = options["report"].cast<bool>();
  o.workload = p.program.name;
  sim::LoadedWorkload loaded;
  loaded.arch = p.arch;
  loaded.kernel.program = p.program;
  loaded.kernel.choices = {{"synchronization", "auto-sync"}, {"source", "nki"}};
  loaded.workload.name = p.program.name;
  loaded.workload.file = p.program.name;
  loaded.workload.kernel = "nki";
  loaded.workload.variant = "traced";
  // SPMD over a logical core (lnc > 1): the programs of cores 1.., sharing the HBM.
  if (options.contains("core_programs")) {
    for (auto c : options["core_programs"])
      loaded.core_programs.push_back(c.cast<const PyProgram&>().program);
  }
  sim::HostData data;
  if (!o.timing_only) {
    for (auto item : inputs) {
      const std::string name = item.first.cast<std::string>();
      const auto pair = item.second.cast<py::tuple>();
      const isa::DramTensor* t = p.program.find_dram_tensor(name);
      if (t == nullptr) throw std::invalid_argument("no tensor " + name);
      data.inputs.emplace_back(name,
                               tensor_bytes(*t, pair[0].cast<std::string>(), pair[1].cast<bool>()));
    }
    for (auto f : options["fetch"]) data.fetch.push_back(f.cast<std::string>());
  }
  sim::RunOutcome r;
  {
    py::gil_scoped_release release;
    r = sim::execute(o, std::move(loaded), data);
  }
  py::dict out;
  out["exit_code"] = r.exit_code;
  out["stats"] = r.stats.is_null() ? std::string() : r.stats.dump();
  out["summary"] = r.summary;
  out["error"] = errors.str();
  py::dict tensors;
  for (const auto& [name, bytes] : r.tensors) {
    const isa::DramTensor* t = p.program.find_dram_tensor(name);
    if (numpy_has(t->dtype)) {
      tensors[py::str(name)] =
          py::make_tuple(py::bytes(bytes), std::string(isa::name_of(t->dtype)));
      continue;
    }
    std::string f(t->elements() * 4, '\0');
    for (uint64_t i = 0; i < t->elements(); ++i) {
      const float v = isa::load_element(
          t->dtype, reinterpret_cast<const uint8_t*>(bytes.data() + i * isa::size_of(t->dtype)));
      std::memcpy(&f[4 * i], &v, 4);
    }
    tensors[py::str(name)] = py::make_tuple(py::bytes(f), std::string(isa::name_of(t->dtype)));
  }
  out["tensors"] = tensors;
  return out;
}

// Runs a workload file exactly as `trnsim FILE` does (once per process, like run()).
py::dict run_workload(const std::string& path, const py::dict& options) {
  std::ostringstream errors;
  claim_process_for_simulation(errors);
  sim::RunOptions o;
  o.workload = path;
  o.out = options["out"].cast<std::string>();
  o.timing_only = options["timing_only"].cast<bool>();
  o.report = options["report"].cast<bool>();
  o.arch = options["arch"].cast<std::string>();
  o.sets = options["sets"].cast<std::vector<std::string>>();
  sim::RunOutcome r;
  {
    py::gil_scoped_release release;
    r = sim::execute(o);
  }
  py::dict out;
  out["exit_code"] = r.exit_code;
  out["stats"] = r.stats.is_null() ? std::string() : r.stats.dump();
  out["summary"] = r.summary;
  out["error"] = errors.str();
  return out;
}

// The first op of a graph workload (its text) that does not lower on `arch`, as (index into
// "ops", message), or (-1, "") when it lowers; (-2, message) for a problem elsewhere. Parses and
// lowers without data or simulation (so any number of times per process).
std::pair<int64_t, std::string> graph_problem(const std::string& text, const std::string& file,
                                              const std::string& arch_name,
                                              const std::vector<std::string>& sets) {
  const config::ArchConfig arch =
      sim::configured_arch(arch_name.empty() ? "trn2" : arch_name, sets);
  try {
    workloads::lower(workloads::parse_workload(text, file), arch, false);
  } catch (const workloads::WorkloadError& e) {
    const std::string what = e.what();
    const std::string mark = ": /ops/";
    const auto at = what.find(mark);
    if (at == std::string::npos) return {-2, what};
    return {std::stoll(what.substr(at + mark.size())), what};
  }
  return {-1, ""};
}

std::string key_averages_table(const std::string& rows, const std::string& sort_by,
                               int64_t row_limit, const std::string& device,
                               int64_t max_name_column_width, const std::string& header) {
  sim::KeyAveragesTableOptions o;
  o.sort_by = sort_by;
  o.row_limit = row_limit;
  o.device = device;
  o.max_name_column_width = max_name_column_width;
  o.header = header;
  return sim::key_averages_table(sim::key_averages_from_json(nlohmann::json::parse(rows)), o);
}

PyProgram load_program(const std::string& path, const std::string& arch_name) {
  const config::ArchConfig arch = sim::configured_arch(arch_name, {});
  isa::Assembly a = sim::load_program_file(path, arch);
  if (!a.sequence.empty()) {
    a.program = a.auto_sync ? compiler::synchronize(a.sequence, a.program, arch)
                            : compiler::distribute(a.sequence, a.program);
  }
  isa::validate(a.program, arch);
  return PyProgram{a.program, arch};
}

template <typename Names>
py::dict names_dict(int count, Names&& name_of_index) {
  py::dict d;
  for (int i = 0; i < count; ++i) d[py::str(std::string(name_of_index(i)))] = i;
  return d;
}

}  // namespace

// Debian's libsystemc.so calls sc_main from its main(), and needs the symbol when it is loaded;
// a Python process never calls it. Exported past pybind11's hidden visibility.
__attribute__((visibility("default"))) int sc_main(int, char*[]) {
  return 0;
}

PYBIND11_MODULE(_trnsim, m) {
  m.doc() = "trnsim's C++ core: program building, text forms and the simulation";
  m.attr("OPCODES") = names_dict(isa::kOpcodeCount,
                                 [](int i) { return isa::name_of(static_cast<isa::Opcode>(i)); });
  m.attr("ENGINES") =
      names_dict(kEngineCount, [](int i) { return key_of(static_cast<Engine>(i)); });
  m.attr("FUNCTIONS") = names_dict(isa::kActivationFunctionCount, [](int i) {
    return isa::name_of(static_cast<isa::ActivationFunction>(i));
  });
  m.attr("ALU") =
      names_dict(isa::kAluOpCount, [](int i) { return isa::name_of(static_cast<isa::AluOp>(i)); });
  m.attr("DTYPES") =
      names_dict(isa::kDTypeCount, [](int i) { return isa::name_of(static_cast<isa::DType>(i)); });
  m.attr("MEMORY") = names_dict(3, [](int i) { return isa::name_of(static_cast<isa::Memory>(i)); });

  py::class_<PyProgram>(m, "Program")
      .def("to_json", &PyProgram::to_json, "the JSON program form (trnsim asm's output)")
      .def("to_tasm", &PyProgram::to_tasm, "the .tasm text form (trnsim disasm's output)")
      .def("instruction_count", &PyProgram::instruction_count)
      .def("tensors", &PyProgram::tensors)
      .def("engine_counts", &PyProgram::engine_counts)
      .def_property_readonly("name", [](const PyProgram& p) { return p.program.name; })
      .def_property_readonly("arch", [](const PyProgram& p) { return p.arch.name; });

  py::class_<ProgramBuilder>(m, "ProgramBuilder")
      .def(py::init<const std::string&, const std::string&, const std::vector<std::string>&>())
      .def("arch_info", &ProgramBuilder::arch_info)
      .def("add_tensor", &ProgramBuilder::add_tensor)
      .def("add_queue", &ProgramBuilder::add_queue)
      .def("add_source", &ProgramBuilder::add_source)
      .def("add", &ProgramBuilder::add)
      .def("drop_last", &ProgramBuilder::drop_last)
      .def("retarget", &ProgramBuilder::retarget)
      .def("finish", &ProgramBuilder::finish);

  m.def("run", &run, "simulate a program once in this process (the CLI's sim::execute)");
  m.def("load_program", &load_program, py::arg("path"), py::arg("arch") = "trn2");
  m.def("run_workload", &run_workload,
        "simulate a workload file once in this process, as `trnsim FILE` does");
  m.def("graph_problem", &graph_problem, py::arg("text"), py::arg("file"), py::arg("arch"),
        py::arg("sets"));
  m.def("key_averages_table", &key_averages_table, py::arg("rows"), py::arg("sort_by"),
        py::arg("row_limit"), py::arg("device"), py::arg("max_name_column_width"),
        py::arg("header"));
  m.def("isa_table", &sim::isa_table, py::arg("markdown") = false);
  m.def(
      "arch_info",
      [](const std::string& name, const std::vector<std::string>& sets) {
        return arch_dict(sim::configured_arch(name, sets));
      },
      py::arg("name") = "trn2", py::arg("sets") = std::vector<std::string>{});
  py::register_exception<isa::AssemblyError>(m, "AssemblyError", PyExc_ValueError);
  py::register_exception<isa::ValidationError>(m, "ValidationError", PyExc_ValueError);
  py::register_exception<sim::InputError>(m, "InputError", PyExc_ValueError);
}
