// Strong time types. Simulated time is kept in integer picoseconds; instruction costs are
// kept in cycles of the engine that runs them. Conversions round up so that a non-zero cost
// never becomes zero time.
#pragma once

#include <cstdint>

namespace trnsim {

struct Picoseconds {
  int64_t value = 0;
  constexpr Picoseconds() = default;
  constexpr explicit Picoseconds(int64_t v) : value(v) {}
  constexpr double ns() const { return static_cast<double>(value) / 1e3; }
  constexpr double us() const { return static_cast<double>(value) / 1e6; }
  friend constexpr Picoseconds operator+(Picoseconds a, Picoseconds b) {
    return Picoseconds(a.value + b.value);
  }
  friend constexpr Picoseconds operator-(Picoseconds a, Picoseconds b) {
    return Picoseconds(a.value - b.value);
  }
  friend constexpr bool operator<(Picoseconds a, Picoseconds b) { return a.value < b.value; }
  friend constexpr bool operator>(Picoseconds a, Picoseconds b) { return a.value > b.value; }
  friend constexpr bool operator<=(Picoseconds a, Picoseconds b) { return a.value <= b.value; }
  friend constexpr bool operator>=(Picoseconds a, Picoseconds b) { return a.value >= b.value; }
  friend constexpr bool operator==(Picoseconds a, Picoseconds b) { return a.value == b.value; }
  friend constexpr bool operator!=(Picoseconds a, Picoseconds b) { return a.value != b.value; }
};

constexpr Picoseconds max(Picoseconds a, Picoseconds b) {
  return a < b ? b : a;
}

struct Cycles {
  uint64_t value = 0;
  constexpr Cycles() = default;
  constexpr explicit Cycles(uint64_t v) : value(v) {}
  friend constexpr bool operator==(Cycles a, Cycles b) { return a.value == b.value; }
  friend constexpr bool operator!=(Cycles a, Cycles b) { return a.value != b.value; }
};

// Cycles of a clock of `mhz` megahertz, in picoseconds, rounded up.
constexpr Picoseconds to_picoseconds(Cycles c, uint32_t mhz) {
  return Picoseconds(static_cast<int64_t>((c.value * 1'000'000ULL + mhz - 1) / mhz));
}

// Picoseconds as whole cycles of a clock of `mhz` megahertz, rounded down.
constexpr uint64_t to_cycles(Picoseconds t, uint32_t mhz) {
  return static_cast<uint64_t>(t.value) * mhz / 1'000'000ULL;
}

// Nanoseconds (possibly fractional) as picoseconds, rounded up.
inline Picoseconds from_ns(double ns) {
  const double ps = ns * 1e3;
  auto whole = static_cast<int64_t>(ps);
  return Picoseconds(static_cast<double>(whole) < ps ? whole + 1 : whole);
}

}  // namespace trnsim
