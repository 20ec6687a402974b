#include "core/units.hpp"

#include <gtest/gtest.h>

#include "core/int_math.hpp"

namespace shardwise {
namespace {

TEST(Units, BytesOverBandwidthIsTime) {
  // 1.5 GB at 3 GB/s = 0.5 s
  const Seconds t = Bytes(1.5e9) / BytesPerSecond(3e9);
  EXPECT_DOUBLE_EQ(t.value(), 0.5);
}

TEST(Units, FlopsOverRateIsTime) {
  // 989.4e12 FLOP at 989.4 TFLOP/s = 1 s
  EXPECT_DOUBLE_EQ((Flops(989.4e12) / units::teraflops(989.4)).value(), 1.0);
}

TEST(Units, SameKindArithmeticAndRatio) {
  Bytes a(100);
  a += Bytes(50);
  EXPECT_DOUBLE_EQ(a.value(), 150);
  EXPECT_DOUBLE_EQ((a * 2.0).value(), 300);
  EXPECT_DOUBLE_EQ(a / Bytes(75), 2.0);  // a plain ratio
  EXPECT_LT(Bytes(1), Bytes(2));
  // rate x time = amount
  EXPECT_DOUBLE_EQ((BytesPerSecond(10) * Seconds(3)).value(), 30);
}

TEST(Units, Helpers) {
  EXPECT_DOUBLE_EQ(units::gibibytes(1).value(), 1073741824.0);
  EXPECT_DOUBLE_EQ(units::microseconds(2.5).value(), 2.5e-6);
  EXPECT_DOUBLE_EQ(units::terabytes_per_s(3.35).value(), 3.35e12);
}

TEST(IntMath, ShiftsAndMasksAgreeWithDivision) {
  // every dividend 0..4096 by every divisor 1..130 (powers of two by shift and mask, the
  // others by / and %): the same quotient, remainder and divisibility
  for (std::int64_t b = 1; b <= 130; ++b) {
    for (std::int64_t a = 0; a <= 4096; ++a) {
      ASSERT_EQ(div_nn(a, b), a / b) << a << " / " << b;
      ASSERT_EQ(mod_nn(a, b), a % b) << a << " % " << b;
      ASSERT_EQ(divides(b, a), a % b == 0) << b << " | " << a;
    }
  }
  EXPECT_TRUE(is_pow2(1) && is_pow2(64) && !is_pow2(0) && !is_pow2(96));
  EXPECT_EQ(div_nn(std::int64_t{1} << 40, 1024), std::int64_t{1} << 30);
}

}  // namespace
}  // namespace shardwise
