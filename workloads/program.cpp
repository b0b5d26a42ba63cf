#include "workloads/program.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "compiler/synchronize.hpp"
#include "workloads/kernels/collective.hpp"
#include "workloads/kernels/rmsnorm.hpp"

namespace trnsim::workloads {

namespace {

HostTensor make_tensor(const isa::DramTensor& t, const isa::TensorInit* init) {
  HostTensor h{t.name, t.dtype, t.shape, std::vector<float>(t.elements(), 0.0f)};
  if (init == nullptr || init->kind == isa::TensorInit::Kind::zeros) return h;
  SeededRandom rng(init->seed);
  for (float& v : h.values) {
    const double x = init->kind == isa::TensorInit::Kind::normal
                         ? init->a + init->b * rng.normal()
                         : init->a + (init->b - init->a) * rng.uniform();
    v = isa::round_to(t.dtype, static_cast<float>(x));
  }
  return h;
}

Tolerance tolerance_for(isa::DType out, double accumulation) {
  // bf16/fp16 outputs round once or twice (2^-8 relative each); fp8 has 3 or 2 mantissa bits.
  if (out == isa::DType::fp32) return {1e-5 * accumulation, 1e-4};
  if (isa::is_fp8(out)) return {1e-2 * accumulation, 0.125};
  if (isa::is_integer(out)) return {0.5, 0.0};
  return {1e-3 * accumulation, 1e-2};
}

std::string collective_reference_size_error(const std::string& f, uint64_t in, uint64_t out,
                                            uint32_t ranks) {
  const bool gather = f == "all_gather", scatter = f.rfind("reduce_scatter", 0) == 0;
  const uint64_t want_out = gather ? in * ranks : scatter ? in / ranks : in;
  if (out != want_out || (scatter && in % ranks != 0) || (f == "all_to_all" && in % ranks != 0)) {
    return fmt::format(
        "{} over {} cores: the input has {} elements, so the output needs {}{}; it "
        "has {}",
        f, ranks, in, want_out,
        scatter || f == "all_to_all" ? " (and the input a multiple of the cores)" : "", out);
  }
  return {};
}

}  // namespace

Workload describe_assembly(const isa::Assembly& a) {
  Workload w;
  w.file = a.file;
  std::string stem = a.file.substr(a.file.find_last_of('/') + 1);
  w.name = stem.substr(0, stem.find_last_of('.'));
  w.kernel = "program";
  w.cores = std::max<uint32_t>(1, a.cores);
  w.chips = std::max<uint32_t>(1, a.chips);
  w.variant = a.sequence.empty() ? "streams" : a.auto_sync ? "auto-sync" : "hand-synchronized";
  return w;
}

LoweredKernel lower_assembly(const isa::Assembly& a, const config::ArchConfig& arch,
                             bool functional) {
  LoweredKernel k;
  const std::string spread =
      chips_error(std::max<uint32_t>(1, a.cores), std::max<uint32_t>(1, a.chips), arch);
  if (!spread.empty()) throw isa::AssemblyError(a.file, 0, 0, spread);
  if (a.sequence.empty()) {
    k.program = a.program;  // the JSON form: streams as given
  } else if (a.auto_sync) {
    for (size_t i = 0; i < a.sequence.size(); ++i) {
      if (isa::is_collective(a.sequence[i].opcode)) {
        throw isa::AssemblyError(
            a.file, a.sequence_lines.empty() ? 0 : a.sequence_lines[i], 1,
            "a collective needs `.sync manual`: the automatic synchronization does not model "
            "when a collective ends on every core; wait on the semaphore its update= raises");
      }
    }
    k.program = compiler::synchronize(a.sequence, a.program, arch);
  } else {
    k.program = compiler::distribute(a.sequence, a.program);
  }
  k.program.name = describe_assembly(a).name;
  k.choices = {{"synchronization", describe_assembly(a).variant}};
  auto init_of = [&](const std::string& name) -> const isa::TensorInit* {
    for (const auto& [n, i] : a.inits) {
      if (n == name) return &i;
    }
    return nullptr;
  };
  if (functional) {
    const std::string why = functional_size_problem(k.program.dram_bytes());
    if (!why.empty()) throw isa::AssemblyError(a.file, 0, 0, why);
  }
  double loosest_atol = 0, loosest_rtol = 0;
  const uint32_t cores = std::max<uint32_t>(1, a.cores);
  for (const auto& e : a.expectations) {
    const isa::DramTensor* out = k.program.find_dram_tensor(e.output);
    std::vector<const isa::DramTensor*> in;
    for (const auto& n : e.inputs) in.push_back(k.program.find_dram_tensor(n));
    double accumulation = 1.0;
    if (e.function == "matmul") {
      const int64_t kk = in[0]->shape[0], m = in[0]->shape[1], n = in[1]->shape[1];
      // Unsigned: K x M x N of tensors of up to 2^44 bytes each may wrap (signed would be UB).
      k.model_flops +=
          2ULL * static_cast<uint64_t>(kk) * static_cast<uint64_t>(m) * static_cast<uint64_t>(n);
      accumulation = std::sqrt(static_cast<double>(kk));
    } else if (e.function == "rmsnorm") {
      k.model_flops +=
          static_cast<uint64_t>(in[0]->shape[0]) * (4 * static_cast<uint64_t>(in[0]->shape[1]) + 2);
    } else if (isa::is_collective_reference(e.function)) {
      const uint32_t ranks = e.group != 0 ? e.group : cores;
      if (cores % ranks != 0) {
        throw isa::AssemblyError(
            a.file, e.line, 1,
            fmt::format("{}: group={} does not divide the {} cores", e.function, ranks, cores));
      }
      accumulation = ranks;
      const std::string why =
          collective_reference_size_error(e.function, in[0]->elements(), out->elements(), ranks);
      if (!why.empty()) throw isa::AssemblyError(a.file, e.line, 1, why);
    }
    const Tolerance t = tolerance_for(out->dtype, accumulation);
    loosest_atol = std::max(loosest_atol, t.atol);
    loosest_rtol = std::max(loosest_rtol, t.rtol);
  }
  k.tolerance = Tolerance{loosest_atol, loosest_rtol};
  if (!functional) return k;
  // Core c's value of an input: its init drawn with seed + c (docs/isa.md, `.cores`).
  auto input = [&](const isa::DramTensor& t, uint32_t c) {
    const isa::TensorInit* i = init_of(t.name);
    if (i == nullptr || c == 0) return make_tensor(t, i);
    isa::TensorInit shifted = *i;
    shifted.seed += c;
    return make_tensor(t, &shifted);
  };
  for (uint32_t c = 0; c < cores; ++c) {
    std::vector<HostTensor> expected_here;
    for (const auto& e : a.expectations) {
      const isa::DramTensor* out = k.program.find_dram_tensor(e.output);
      std::vector<const isa::DramTensor*> in;
      for (const auto& n : e.inputs) in.push_back(k.program.find_dram_tensor(n));
      HostTensor expected{out->name, out->dtype, out->shape, {}};
      if (e.function == "recv") {
        // What the partner core c + peer sent: its input.
        const auto n = static_cast<int64_t>(cores);
        const auto from = static_cast<uint32_t>(((static_cast<int64_t>(c) + e.peer) % n + n) % n);
        expected.values = input(*in[0], from).values;
        for (float& v : expected.values)
          v = isa::round_to(out->dtype, v * static_cast<float>(e.scale));
        expected_here.push_back(std::move(expected));
        continue;
      }
      if (isa::is_collective_reference(e.function)) {
        // The cores of c's group, in order.
        const uint32_t ranks = e.group != 0 ? e.group : cores;
        const uint32_t first = c / ranks * ranks;
        std::vector<std::vector<float>> each;
        for (uint32_t r = 0; r < ranks; ++r) each.push_back(input(*in[0], first + r).values);
        expected.values = collective_reference(e.function, each, c - first);
        for (float& v : expected.values) v = isa::round_to(out->dtype, v);
        expected_here.push_back(std::move(expected));
        continue;
      }
      std::vector<HostTensor> values;
      for (const auto* t2 : in) values.push_back(input(*t2, c));
      if (e.function == "copy") {
        expected.values = values[0].values;
      } else if (e.function == "rmsnorm") {
        expected.values = rmsnorm_reference(values[0].values, values[1].values, in[0]->shape[0],
                                            in[0]->shape[1], e.eps);
      } else {  // matmul: out[m, n] = sum_k a_t[k, m] * b[k, n]
        const int64_t kk = in[0]->shape[0], m = in[0]->shape[1], n = in[1]->shape[1];
        expected.values.assign(static_cast<size_t>(m * n), 0.0f);
        std::vector<double> row(static_cast<size_t>(n));
        for (int64_t i = 0; i < m; ++i) {
          std::fill(row.begin(), row.end(), 0.0);
          for (int64_t x = 0; x < kk; ++x) {
            const double av = values[0].values[x * m + i];
            const float* b = &values[1].values[x * n];
            for (int64_t j = 0; j < n; ++j) row[j] += av * b[j];
          }
          for (int64_t j = 0; j < n; ++j) expected.values[i * n + j] = static_cast<float>(row[j]);
        }
      }
      expected_here.push_back(std::move(expected));
    }
    std::vector<HostTensor> inputs_here;
    for (const auto& [name, init] : a.inits) {
      if (init.kind == isa::TensorInit::Kind::zeros) continue;
      inputs_here.push_back(input(*k.program.find_dram_tensor(name), c));
    }
    if (c == 0) {
      k.expected = expected_here;
      k.inputs = inputs_here;
    }
    if (cores > 1) {
      k.core_expected.push_back(std::move(expected_here));
      k.core_inputs.push_back(std::move(inputs_here));
    }
  }
  return k;
}

}  // namespace trnsim::workloads
