// Physical quantities as distinct types, so a bandwidth can never be added to a
// time and a bare double never carries a unit in a comment. All values are SI
// base units (bytes, FLOPs, seconds) held in a double.
#pragma once
#include <compare>

namespace shardwise {

template <class Tag>
struct Quantity {
  double v = 0.0;
  constexpr Quantity() = default;
  constexpr explicit Quantity(double value) : v(value) {}
  [[nodiscard]] constexpr double value() const { return v; }

  constexpr Quantity& operator+=(Quantity o) { v += o.v; return *this; }
  constexpr Quantity& operator-=(Quantity o) { v -= o.v; return *this; }
  constexpr Quantity& operator*=(double s) { v *= s; return *this; }
  constexpr Quantity& operator/=(double s) { v /= s; return *this; }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.v + b.v); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.v - b.v); }
  friend constexpr Quantity operator*(Quantity a, double s) { return Quantity(a.v * s); }
  friend constexpr Quantity operator*(double s, Quantity a) { return Quantity(a.v * s); }
  friend constexpr Quantity operator/(Quantity a, double s) { return Quantity(a.v / s); }
  // The ratio of two quantities of one kind is a plain number.
  friend constexpr double operator/(Quantity a, Quantity b) { return a.v / b.v; }
  friend constexpr auto operator<=>(Quantity, Quantity) = default;
};

struct BytesTag {};
struct FlopsTag {};
struct SecondsTag {};
struct BytesPerSecondTag {};
struct FlopsPerSecondTag {};

using Bytes = Quantity<BytesTag>;
using Flops = Quantity<FlopsTag>;
using Seconds = Quantity<SecondsTag>;
using BytesPerSecond = Quantity<BytesPerSecondTag>;
using FlopsPerSecond = Quantity<FlopsPerSecondTag>;

// Cross-unit arithmetic: the only ways units combine in the cost model.
constexpr Seconds operator/(Bytes b, BytesPerSecond r) { return Seconds(b.v / r.v); }
constexpr Seconds operator/(Flops f, FlopsPerSecond r) { return Seconds(f.v / r.v); }
constexpr Bytes operator*(BytesPerSecond r, Seconds t) { return Bytes(r.v * t.v); }
constexpr Bytes operator*(Seconds t, BytesPerSecond r) { return Bytes(r.v * t.v); }
constexpr Flops operator*(FlopsPerSecond r, Seconds t) { return Flops(r.v * t.v); }
constexpr BytesPerSecond operator/(Bytes b, Seconds t) { return BytesPerSecond(b.v / t.v); }
constexpr FlopsPerSecond operator/(Flops f, Seconds t) { return FlopsPerSecond(f.v / t.v); }

namespace units {
constexpr double kKilo = 1e3, kMega = 1e6, kGiga = 1e9, kTera = 1e12, kPeta = 1e15;
constexpr double kKi = 1024.0, kMi = kKi * 1024.0, kGi = kMi * 1024.0, kTi = kGi * 1024.0;
constexpr Bytes gigabytes(double x) { return Bytes(x * kGiga); }
constexpr Bytes gibibytes(double x) { return Bytes(x * kGi); }
constexpr BytesPerSecond gigabytes_per_s(double x) { return BytesPerSecond(x * kGiga); }
constexpr BytesPerSecond terabytes_per_s(double x) { return BytesPerSecond(x * kTera); }
constexpr FlopsPerSecond teraflops(double x) { return FlopsPerSecond(x * kTera); }
constexpr Seconds microseconds(double x) { return Seconds(x * 1e-6); }
constexpr Seconds milliseconds(double x) { return Seconds(x * 1e-3); }
}  // namespace units

}  // namespace shardwise
