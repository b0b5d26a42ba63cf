// `--set NAME=VALUE` (config::set_parameter; the same parser reads sweep files' and arch files'
// values): any bytes give a changed ArchConfig or std::invalid_argument (never another
// exception, a crash or a hang), and what is accepted
// - is written in decimal, or true/false for a flag (issue 18: 0x40 read as 64, " 64", inf
//   and nan were accepted);
// - is finite, within the parameter's range, and what the parameter then holds;
// - reads back the same from what `trnsim params` prints for it.
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "config/arch.hpp"
#include "config/parameters.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace config = trnsim::config;
  const std::string text = trnsim_fuzz::text_of(data, size);
  config::ArchConfig arch = config::trn2();
  try {
    config::set_parameter(arch, text);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  double v = 0;
  const config::Parameter& p = config::parse_assignment(text, v);
  const std::string value = text.substr(text.find('=') + 1);
  const bool words = value == "true" || value == "false";
  for (const char c : value) {
    const bool decimal =
        (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
    if (!decimal && !words) std::abort();
  }
  if (!std::isfinite(v) || p.get(arch) != v) std::abort();
  if (!config::check_parameter_value(p, v, value).empty()) std::abort();
  config::ArchConfig back = config::trn2();
  config::set_parameter(
      back, text.substr(0, text.find('=')) + "=" + config::parameter_value_text(p, arch));
  if (p.get(back) != p.get(arch)) std::abort();
  return 0;
}
