// Lets Catch print Picoseconds and Cycles in failed assertions instead of "{?}".
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "base/units.hpp"

namespace Catch {
template <>
struct StringMaker<trnsim::Picoseconds> {
  static std::string convert(const trnsim::Picoseconds& t) {
    return std::to_string(t.value) + " ps";
  }
};
template <>
struct StringMaker<trnsim::Cycles> {
  static std::string convert(const trnsim::Cycles& c) {
    return std::to_string(c.value) + " cycles";
  }
};
}  // namespace Catch
