#include "workloads/program.hpp"

#include <cmath>

#include "compiler/synchronize.hpp"
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

}  // namespace

Workload describe_assembly(const isa::Assembly& a) {
  Workload w;
  w.file = a.file;
  std::string stem = a.file.substr(a.file.find_last_of('/') + 1);
  w.name = stem.substr(0, stem.find_last_of('.'));
  w.kernel = "program";
  w.variant = a.sequence.empty() ? "streams" : a.auto_sync ? "auto-sync" : "hand-synchronized";
  return w;
}

LoweredKernel lower_assembly(const isa::Assembly& a, const config::ArchConfig& arch,
                             bool functional) {
  LoweredKernel k;
  if (a.sequence.empty()) {
    k.program = a.program;  // the JSON form: streams as given
  } else if (a.auto_sync) {
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
    }
    const Tolerance t = tolerance_for(out->dtype, accumulation);
    loosest_atol = std::max(loosest_atol, t.atol);
    loosest_rtol = std::max(loosest_rtol, t.rtol);
    if (!functional) continue;
    std::vector<HostTensor> values;
    for (const auto* t2 : in) values.push_back(make_tensor(*t2, init_of(t2->name)));
    HostTensor expected{out->name, out->dtype, out->shape, {}};
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
    k.expected.push_back(std::move(expected));
  }
  k.tolerance = Tolerance{loosest_atol, loosest_rtol};
  if (functional) {
    for (const auto& [name, init] : a.inits) {
      if (init.kind == isa::TensorInit::Kind::zeros) continue;
      k.inputs.push_back(make_tensor(*k.program.find_dram_tensor(name), &init));
    }
  }
  return k;
}

}  // namespace trnsim::workloads
