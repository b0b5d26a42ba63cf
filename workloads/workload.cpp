#include "workloads/workload.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/json.hpp"
#include "workloads/graph/graph.hpp"
#include "workloads/kernels/dma.hpp"
#include "workloads/kernels/kernel_table.hpp"

namespace trnsim::workloads {

using nlohmann::json;

namespace {

const std::vector<std::string> kCommonKeys = {"name", "kernel", "seed", "cores", "chips"};
const std::vector<std::string> kKernelFormKeys = {"shape", "dtype", "params"};
const std::vector<std::string> kVariants = {"fused"};

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const auto& k : kernel_table()) names.push_back(k.name);
  names.push_back("dma");
  return names;
}

std::string type_name(const json& v) {
  return v.type_name();
}

struct Reader {
  const std::string& file;
  const json& doc;

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw WorkloadError(file, where, what);
  }

  std::string one_of(const char* key, const std::vector<std::string>& allowed) const {
    const std::string where = fmt::format("/{}", key);
    const json& v = doc.at(key);
    if (!v.is_string()) fail(where, fmt::format("expected a string, got {}", type_name(v)));
    const std::string s = v.get<std::string>();
    if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
      const std::string near = closest_name(s, allowed);
      fail(where,
           fmt::format("unknown {} \"{}\"; expected one of: {}{}", key, s, fmt::join(allowed, ", "),
                       near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
    }
    return s;
  }
};

}  // namespace

nlohmann::json parse_json(const std::string& text, const std::string& file) {
  try {
    return base::parse_json_text<nlohmann::json>(text, file);
  } catch (const base::JsonError& e) {
    throw WorkloadError(file, e.where(), e.what_text());
  }
}

namespace {

Workload parse_graph_workload(const json& doc, const std::string& file) {
  Workload w;
  w.file = file;
  w.kernel = "graph";
  auto graph = std::make_shared<Graph>(parse_graph(doc, file));
  w.variant = graph->mode;
  if (!graph->inputs.empty()) w.dtype = graph->ops.back().out.dtype;
  w.shape = graph->find(graph->outputs.front())->shape;
  // Every core runs the graph (SPMD).
  w.cores = std::max<uint32_t>(1, graph->cores);
  w.chips = graph->chips;
  w.graph = std::move(graph);
  if (doc.contains("seed")) {
    if (!doc["seed"].is_number_unsigned()) {
      throw WorkloadError(
          file, "/seed",
          fmt::format("expected a non-negative integer, got {}", doc["seed"].dump()));
    }
    w.seed = doc["seed"].get<uint64_t>();
  }
  if (doc.contains("name")) {
    if (!doc["name"].is_string()) throw WorkloadError(file, "/name", "expected a string");
    w.name = doc["name"].get<std::string>();
  } else {
    std::string stem = file.substr(file.find_last_of('/') + 1);
    w.name = stem.substr(0, stem.rfind(".json"));
  }
  if (doc.contains("params")) {
    if (!doc["params"].is_object()) throw WorkloadError(file, "/params", "expected an object");
    w.params = doc["params"];
  }
  return w;
}

}  // namespace

Workload parse_workload(const std::string& text, const std::string& file) {
  const json doc = parse_json(text, file);
  Reader r{file, doc};
  if (!doc.is_object()) r.fail("/", fmt::format("expected a JSON object, got {}", type_name(doc)));
  if (is_graph_document(doc) && !doc.contains("kernel")) return parse_graph_workload(doc, file);
  const std::vector<std::string> kernels = kernel_names();
  if (!doc.contains("kernel")) {
    r.fail("/kernel", fmt::format("missing; expected one of: {}", fmt::join(kernels, ", ")));
  }
  Workload w;
  w.file = file;
  w.kernel = r.one_of("kernel", kernels);
  const KernelEntry* entry = find_kernel(w.kernel);
  std::vector<std::string> keys = kCommonKeys;
  if (entry == nullptr) {
    keys.insert(keys.end(), dma_workload_keys().begin(), dma_workload_keys().end());
  } else {
    keys.insert(keys.end(), kKernelFormKeys.begin(), kKernelFormKeys.end());
    keys.insert(keys.end(), entry->options.begin(), entry->options.end());
  }
  for (const auto& item : doc.items()) {
    if (std::find(keys.begin(), keys.end(), item.key()) == keys.end()) {
      const std::string near = closest_name(item.key(), keys);
      r.fail("/" + item.key(),
             fmt::format("unknown key for kernel {}; expected one of: {}{}", w.kernel,
                         fmt::join(keys, ", "),
                         near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
    }
  }
  if (doc.contains("cores")) {
    const json& c = doc["cores"];
    if (!c.is_number_unsigned() || c.get<uint64_t>() < 1 || c.get<uint64_t>() > 64) {
      r.fail("/cores", fmt::format("expected a positive integer (NeuronCores), got {}", c.dump()));
    }
    w.cores = static_cast<uint32_t>(c.get<uint64_t>());
  }
  if (doc.contains("chips")) {
    const json& c = doc["chips"];
    if (!c.is_number_unsigned() || c.get<uint64_t>() < 1 || c.get<uint64_t>() > 64) {
      r.fail("/chips", fmt::format("expected a positive integer (chips), got {}", c.dump()));
    }
    w.chips = static_cast<uint32_t>(c.get<uint64_t>());
  }
  if (doc.contains("seed")) {
    const json& s = doc["seed"];
    if (!s.is_number_unsigned()) {
      r.fail("/seed", fmt::format("expected a non-negative integer, got {}", s.dump()));
    }
    w.seed = s.get<uint64_t>();
  }
  if (doc.contains("name")) {
    if (!doc["name"].is_string()) r.fail("/name", "expected a string");
    w.name = doc["name"].get<std::string>();
  } else {
    std::string stem = file.substr(file.find_last_of('/') + 1);
    w.name = stem.substr(0, stem.rfind(".json"));
  }
  if (entry == nullptr) {
    // The dma lowering checks its own keys (workloads/dma.cpp); it sees them as params.
    for (const auto& item : doc.items()) {
      if (std::find(kCommonKeys.begin(), kCommonKeys.end(), item.key()) == kCommonKeys.end()) {
        w.params[item.key()] = item.value();
      }
    }
    return w;
  }
  w.eps = entry->default_eps;
  for (const std::string& key : entry->options) {
    if (doc.contains(key) && key != "variant" && key != "eps") w.options[key] = doc[key];
  }
  if (doc.contains("variant")) w.variant = r.one_of("variant", kVariants);

  if (entry->shape_rank == 0 && doc.contains("shape")) {
    r.fail("/shape", fmt::format("{} takes no shape", w.kernel));
  }
  if (entry->shape_rank > 0 && !doc.contains("shape")) {
    r.fail("/shape", "missing; expected " + entry->shape_help);
  }
  const json& shape = entry->shape_rank == 0 ? json::array() : doc["shape"];
  if (!shape.is_array() || shape.size() != entry->shape_rank) {
    r.fail("/shape", fmt::format("expected an array of {} positive integers {}, got {}",
                                 entry->shape_rank, entry->shape_help, shape.dump()));
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    const json& d = shape[i];
    if (!d.is_number_integer() || d.get<int64_t>() <= 0) {
      r.fail(fmt::format("/shape/{}", i),
             fmt::format("expected a positive integer, got {}", d.dump()));
    }
    w.shape.push_back(d.get<int64_t>());
  }
  if (doc.contains("dtype")) {
    const json& d = doc["dtype"];
    const auto t = d.is_string() ? isa::parse_dtype(d.get<std::string>()) : std::nullopt;
    if (!t) {
      r.fail("/dtype", fmt::format("expected one of {}, got {}", isa::dtype_names(), d.dump()));
    }
    if (isa::is_integer(*t) && entry->float_only) {
      // e.g. RMSNorm divides by a root mean square: its output is not an integer tensor.
      r.fail("/dtype", fmt::format("{} takes a floating-point dtype (fp32, bf16, fp16, "
                                   "fp8_e4m3, fp8_e5m2), got {}",
                                   w.kernel, d.dump()));
    }
    w.dtype = *t;
  }
  if (doc.contains("eps")) {
    const json& e = doc["eps"];
    if (!e.is_number() || e.get<double>() < 0 || e.get<double>() > 1) {
      r.fail("/eps", fmt::format("expected a number in [0, 1], got {}", e.dump()));
    }
    w.eps = e.get<double>();
  }
  if (doc.contains("params")) {
    if (!doc["params"].is_object()) {
      r.fail("/params", fmt::format("expected an object, got {}", type_name(doc["params"])));
    }
    w.params = doc["params"];
  }
  return w;
}

}  // namespace trnsim::workloads
