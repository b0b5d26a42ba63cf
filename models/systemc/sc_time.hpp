// Simulated time at the SystemC boundary: the models keep integer picoseconds
// (base/units.hpp) and convert to sc_time only here.
#pragma once

#include <systemc>

#include "base/units.hpp"

namespace trnsim::models {

inline sc_core::sc_time to_sc_time(Picoseconds t) {
  return sc_core::sc_time::from_value(static_cast<sc_dt::uint64>(t.value));
}
inline Picoseconds now() {
  return Picoseconds(static_cast<int64_t>(sc_core::sc_time_stamp().value()));
}

}  // namespace trnsim::models
