// Flash attention: O = softmax(Q K^T / sqrt(head_dim)) V per head, optionally causal, with an
// online softmax over blocks of keys so that no seq x seq matrix is ever held.
#pragma once

#include <string>

#include "workloads/kernels/kernel.hpp"
#include "workloads/kernels/param_space.hpp"

namespace trnsim::workloads {

// The lowering's choices (reported in stats.json under "choices").
struct AttentionChoices {
  bool causal = false;    // the "causal" option: query i sees keys 0..i
  uint32_t kv_block = 0;  // keys per block: a multiple of 128, 128..2048 (0: the default)
  uint32_t bufs = 2;      // blocks in flight: scores, probabilities, P^T and P V (2..3)
  // The engine that copies P^T from PSUM to SBUF for the P V matmul: "scalar", "vector", or
  // "split" (ScalarE five eighths of the 128-key sub-blocks, VectorE the rest; the default
  // except on trn1, where it is "scalar").
  std::string pt_copy = "split";
};

// Its parameters: kv_block, bufs, pt_copy.
ParamSpace attention_space(const Workload& w, const config::ArchConfig& arch);
AttentionChoices parse_attention_choices(const Workload& w, const config::ArchConfig& arch);
LoweredKernel lower_attention(const Workload& w, const config::ArchConfig& arch, bool functional);

// The reference from the same (dtype-rounded) inputs, each [heads, seq, d]: in double precision
// for an fp32 output, in fp32 for bf16 and fp16 ones (attention.cpp says why that is enough).
std::vector<float> attention_reference(const std::vector<float>& q, const std::vector<float>& k,
                                       const std::vector<float>& v, int64_t heads, int64_t seq,
                                       int64_t head_dim, bool causal,
                                       isa::DType out = isa::DType::fp32);

}  // namespace trnsim::workloads
