// Graph workloads the tests use: the decomposed forms of RMSNorm, LayerNorm, softmax and a
// GELU MLP, written as a PyTorch user writes them, at a given shape and mode.
#pragma once

#include <string>

#include "workloads/workload.hpp"

namespace trnsim_test {

inline std::string graph_json(const std::string& mode, const std::string& inputs,
                              const std::string& ops, const std::string& outputs = "[\"y\"]") {
  return R"({"mode": ")" + mode + R"(", "dtype": "bf16", "seed": 3, "inputs": {)" + inputs +
         R"(}, "ops": [)" + ops + R"(], "outputs": )" + outputs + "}";
}

inline std::string rows_cols(int64_t rows, int64_t cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

inline std::string rmsnorm_graph(const std::string& mode, int64_t rows, int64_t h) {
  return graph_json(mode,
                    R"("x": {"shape": )" + rows_cols(rows, h) + R"(}, "gamma": {"shape": [)" +
                        std::to_string(h) + R"(], "init": "uniform", "low": 0.5, "high": 1.5})",
                    R"({"op": "pow", "args": ["x", 2], "out": "x2"},
         {"op": "mean", "args": ["x2"], "dim": -1, "keepdim": true, "out": "ms"},
         {"op": "add", "args": ["ms", 1e-6], "out": "mse"},
         {"op": "rsqrt", "args": ["mse"], "out": "r"},
         {"op": "mul", "args": ["x", "r"], "out": "xn"},
         {"op": "mul", "args": ["xn", "gamma"], "out": "y"})");
}

inline std::string layernorm_graph(const std::string& mode, int64_t rows, int64_t h) {
  const std::string hs = std::to_string(h);
  return graph_json(mode,
                    R"("x": {"shape": )" + rows_cols(rows, h) + R"(}, "gamma": {"shape": [)" + hs +
                        R"(], "init": "uniform", "low": 0.5, "high": 1.5}, "beta": {"shape": [)" +
                        hs + R"(], "std": 0.1})",
                    R"({"op": "mean", "args": ["x"], "dim": -1, "keepdim": true, "out": "mu"},
         {"op": "sub", "args": ["x", "mu"], "out": "xc"},
         {"op": "pow", "args": ["xc", 2], "out": "sq"},
         {"op": "mean", "args": ["sq"], "dim": -1, "keepdim": true, "out": "var"},
         {"op": "add", "args": ["var", 1e-5], "out": "ve"},
         {"op": "rsqrt", "args": ["ve"], "out": "inv"},
         {"op": "mul", "args": ["xc", "inv"], "out": "xn"},
         {"op": "mul", "args": ["xn", "gamma"], "out": "xg"},
         {"op": "add", "args": ["xg", "beta"], "out": "y"})");
}

inline std::string softmax_graph(const std::string& mode, int64_t rows, int64_t h) {
  return graph_json(mode, R"("x": {"shape": )" + rows_cols(rows, h) + "}",
                    R"({"op": "max", "args": ["x"], "dim": -1, "keepdim": true, "out": "m"},
         {"op": "sub", "args": ["x", "m"], "out": "s"},
         {"op": "exp", "args": ["s"], "out": "e"},
         {"op": "sum", "args": ["e"], "dim": -1, "keepdim": true, "out": "z"},
         {"op": "div", "args": ["e", "z"], "out": "y"})");
}

// GELU (tanh form) written out: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
inline std::string gelu_ops(const std::string& x, const std::string& y) {
  return R"({"op": "pow", "args": [")" + x + R"(", 3], "out": "g_cube"},
         {"op": "mul", "args": ["g_cube", 0.044715], "out": "g_c"},
         {"op": "add", "args": [")" +
         x + R"(", "g_c"], "out": "g_in"},
         {"op": "mul", "args": ["g_in", 0.7978845608], "out": "g_s"},
         {"op": "tanh", "args": ["g_s"], "out": "g_t"},
         {"op": "add", "args": ["g_t", 1.0], "out": "g_1"},
         {"op": "mul", "args": [")" +
         x + R"(", "g_1"], "out": "g_x"},
         {"op": "mul", "args": ["g_x", 0.5], "out": ")" +
         y + R"("})";
}

inline std::string mlp_graph(const std::string& mode, int64_t m, int64_t d, int64_t f) {
  return graph_json(mode,
                    R"("x": {"shape": )" + rows_cols(m, d) + R"(}, "w1": {"shape": )" +
                        rows_cols(d, f) + R"(, "std": 0.05}, "w2": {"shape": )" + rows_cols(f, d) +
                        R"(, "std": 0.05})",
                    R"({"op": "matmul", "args": ["x", "w1"], "out": "h"}, )" + gelu_ops("h", "a") +
                        R"(, {"op": "matmul", "args": ["a", "w2"], "out": "y"})");
}

inline trnsim::workloads::Workload parse(const std::string& text) {
  return trnsim::workloads::parse_workload(text, "graph.json");
}

}  // namespace trnsim_test
