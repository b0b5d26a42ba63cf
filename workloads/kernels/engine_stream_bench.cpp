#include "workloads/kernels/engine_stream_bench.hpp"

#include <fmt/format.h>

#include "workloads/kernels/instruction_builder.hpp"
#include "workloads/kernels/thread_feed.hpp"

namespace trnsim::workloads {

using isa::DType;
using isa::Instruction;

EngineStreamChoices parse_engine_stream_choices(const Workload& w, const config::ArchConfig& arch) {
  EngineStreamChoices c;
  if (w.options.contains("engine")) {
    const auto& v = w.options["engine"];
    const auto e = v.is_string() ? parse_engine(v.get<std::string>()) : std::nullopt;
    if (!e || (*e != Engine::vector && *e != Engine::scalar && *e != Engine::gpsimd)) {
      throw WorkloadError(
          w.file, "/engine",
          fmt::format(R"(expected "vector", "scalar" or "gpsimd", got {})", v.dump()));
    }
    c.engine = *e;
  }
  if (w.options.contains("instructions")) {
    const auto& v = w.options["instructions"];
    if (!v.is_number_unsigned() || v.get<uint64_t>() < 1 ||
        v.get<uint64_t>() > arch.max_instructions) {
      throw WorkloadError(w.file, "/instructions",
                          fmt::format("expected an integer in [1, {}] (max_instructions), got {}",
                                      arch.max_instructions, v.dump()));
    }
    c.instructions = v.get<uint64_t>();
  }
  if (!w.params.empty()) {
    throw WorkloadError(w.file, "/params/" + w.params.items().begin().key(),
                        "engine_stream takes no params");
  }
  return c;
}

LoweredKernel lower_engine_stream(const Workload& w, const config::ArchConfig& arch,
                                  bool functional) {
  const EngineStreamChoices c = parse_engine_stream_choices(w, arch);
  const int64_t partitions = w.shape[0];
  const int64_t elements = w.shape[1];
  const DType dt = w.dtype;
  const uint64_t es = isa::size_of(dt);
  if (partitions > static_cast<int64_t>(arch.partitions)) {
    throw WorkloadError(
        w.file, "/shape/0",
        fmt::format("expected at most {} partitions, got {}", arch.partitions, partitions));
  }
  // x and y tiles side by side in one SBUF partition.
  if (static_cast<uint64_t>(elements) > arch.sbuf_free_elements_max ||
      2 * static_cast<uint64_t>(elements) * es > arch.sbuf_partition_bytes) {
    throw WorkloadError(
        w.file, "/shape/1",
        fmt::format("{} elements per partition: x and y tiles must fit one SBUF partition ({} "
                    "bytes) and an instruction reads at most {} elements",
                    elements, arch.sbuf_partition_bytes, arch.sbuf_free_elements_max));
  }
  const auto parts = static_cast<uint32_t>(partitions);
  const auto n = static_cast<uint32_t>(elements);

  LoweredKernel k;
  isa::Program& p = k.program;
  p.name = w.name;
  const uint64_t x_addr = p.add_dram_tensor("x", dt, {partitions, elements}).address;
  const uint64_t y_addr = p.add_dram_tensor("y", dt, {partitions, elements}).address;
  const uint16_t q_in = p.add_queue("qSyncIn");
  const uint16_t q_out = p.add_queue("qSyncOut");
  const uint16_t done = p.add_semaphore("stream_done");
  const uint64_t x_sbuf = 0;
  const uint64_t y_sbuf = (n * es + 63) / 64 * 64;
  const isa::AccessPattern x_tile = isa::sbuf_ap(dt, 0, parts, x_sbuf, {{1, n}});
  const isa::AccessPattern y_tile = isa::sbuf_ap(dt, 0, parts, y_sbuf, {{1, n}});

  Instruction load =
      dma_copy(q_in, x_tile, isa::hbm_ap(dt, x_addr, parts, elements, {{1, n}}), "load x");
  Instruction store =
      dma_copy(q_out, isa::hbm_ap(dt, y_addr, parts, elements, {{1, n}}), y_tile, "store y");
  store.waits.push_back(isa::SemaphoreWait{done, 1});

  // y = 2x - 1, unlabelled.
  const Instruction step = c.engine == Engine::scalar
                               ? activation(Engine::scalar, isa::ActivationFunction::identity,
                                            y_tile, x_tile, 2.0f, -1.0f, "")
                               : tensor_scalar(c.engine, y_tile, x_tile, isa::AluOp::multiply, 2.0f,
                                               isa::AluOp::add, -1.0f, "");
  const int64_t loaded = arch.dma_engines_for(parts);
  const uint16_t loaded_semaphore = p.queues[q_in].semaphore;
  // Every instruction is whole when it is appended (a streamed run may read it at once).
  auto lower = [=, engine = c.engine, instructions = c.instructions](auto&& append, auto&& end_of) {
    for (Engine e : kAllEngines) {
      if (e != engine && e != Engine::sync) end_of(e);
    }
    append(load);
    append(store);
    end_of(Engine::sync);
    for (uint64_t i = 0; i < instructions; ++i) {
      if (i == 0 || i + 1 == instructions) {
        Instruction in = step;
        if (i == 0) in.waits.push_back(isa::SemaphoreWait{loaded_semaphore, loaded});
        if (i + 1 == instructions) in.updates.push_back(isa::SemaphoreUpdate{done});
        append(std::move(in));
      } else {
        append(step);
      }
    }
  };
  const uint64_t total = c.instructions + 2;  // with the load and the store
  if (total >= w.stream_from) {
    p.feed = std::make_shared<ThreadFeed>([lower](ThreadFeed& feed) {
      lower([&](Instruction in) { feed.append(std::move(in)); }, [&](Engine e) { feed.end_of(e); });
    });
    p.feed->expected_instructions = total;
  } else {
    lower([&](const Instruction& in) { p.stream(in.engine).push_back(in); }, [](Engine) {});
  }

  k.choices = {{"engine", std::string(key_of(c.engine))},
               {"instructions", c.instructions},
               {"opcode", std::string(isa::name_of(step.opcode))}};
  // A multiply and an add per element per instruction.
  k.model_flops = 2 * c.instructions * static_cast<uint64_t>(partitions * elements);
  // The engine computes in fp32 and rounds once to dtype, as the reference does.
  k.tolerance = Tolerance{1e-6, 1e-6};
  if (functional) {
    SeededRandom rng(w.seed);
    HostTensor x{"x", dt, {partitions, elements}, std::vector<float>(partitions * elements)};
    for (float& v : x.values) v = isa::round_to(dt, static_cast<float>(rng.normal()));
    HostTensor y{"y", dt, {partitions, elements}, std::vector<float>(x.values.size())};
    for (size_t i = 0; i < x.values.size(); ++i) {
      y.values[i] = isa::round_to(dt, x.values[i] * 2.0f - 1.0f);
    }
    k.inputs.push_back(std::move(x));
    k.expected.push_back(std::move(y));
  }
  return k;
}

}  // namespace trnsim::workloads
