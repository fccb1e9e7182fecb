#include <gtest/gtest.h>

#include <limits>

#include "ir/interval.h"
#include "ir/tensor.h"

namespace autosched {
namespace {

void ExpectInterval(const Interval& got, int64_t lo, int64_t hi) {
  EXPECT_EQ(got.min, lo);
  EXPECT_EQ(got.max, hi);
}

TEST(IrInterval, Arithmetic) {
  Expr i = VarNode::make("i"), j = VarNode::make("j");
  VarRanges r{{i.as<VarNode>(), Interval::FromExtent(0, 8)}, {j.as<VarNode>(), Interval{-3, 5}}};
  ExpectInterval(EvalInterval(i * 4 + j, r), -3, 33);
  ExpectInterval(EvalInterval(i - j, r), -5, 10);
  ExpectInterval(EvalInterval(i * j, r), -21, 35);
  ExpectInterval(EvalInterval(floordiv(j, 2), r), -2, 2);
  ExpectInterval(EvalInterval(j / 2, r), -1, 2);
  ExpectInterval(EvalInterval(floormod(j, 4), r), 0, 3);
  ExpectInterval(EvalInterval(floormod(i, 16), r), 0, 7);
  ExpectInterval(EvalInterval(floormod(i + 8, 16), r), 8, 15);
  ExpectInterval(EvalInterval(BinaryNode::make(BinOp::Mod, j, Expr(4)), r), -3, 3);
  ExpectInterval(EvalInterval(min(i, j), r), -3, 5);
  ExpectInterval(EvalInterval(max(i, j), r), 0, 7);
  ExpectInterval(EvalInterval(select(i < 2, j, Expr(100)), r), -3, 100);
  ExpectInterval(EvalInterval(Expr(42), r), 42, 42);
  ExpectInterval(EvalInterval(floordiv(Expr(7), i), r), std::numeric_limits<int32_t>::min(),
                 std::numeric_limits<int32_t>::max());  // divisor may be zero
  ExpectInterval(EvalInterval(floordiv(Expr(7), i + 1), r), 0, 7);
}

TEST(IrInterval, BoolsAndCasts) {
  Expr i = VarNode::make("i");
  VarRanges r{{i.as<VarNode>(), Interval::FromExtent(0, 8)}};
  ExpectInterval(EvalInterval(i < 8, r), 1, 1);
  ExpectInterval(EvalInterval(i < 4, r), 0, 1);
  ExpectInterval(EvalInterval(i > 9, r), 0, 0);
  ExpectInterval(EvalInterval(!(i < 8), r), 0, 0);
  ExpectInterval(EvalInterval((i < 8) && (i < 4), r), 0, 1);
  ExpectInterval(EvalInterval(cast(DataType::Int(8), i * 100), r), -128, 127);  // wraps in int8
  ExpectInterval(EvalInterval(cast(DataType::Int(64), i) * make_const(DataType::Int(64), 3), r), 0, 21);
  ExpectInterval(EvalInterval(cast(DataType::UInt(8), i - 1), r), 0, 255);
}

TEST(IrInterval, UnknownAndOverflow) {
  Expr i = VarNode::make("i");
  Expr big = VarNode::make("n", DataType::Int(64));
  // Unknown variables take their dtype's range; int64 is unbounded.
  ExpectInterval(EvalInterval(i, {}), std::numeric_limits<int32_t>::min(),
                 std::numeric_limits<int32_t>::max());
  EXPECT_FALSE(EvalInterval(big, {}).has_lower());
  EXPECT_FALSE(EvalInterval(big + make_const(DataType::Int(64), 1), {}).bounded());
  // int32 arithmetic that may wrap gives the whole int32 range, not a wrong bound.
  VarRanges r{{i.as<VarNode>(), Interval{0, std::numeric_limits<int32_t>::max()}}};
  ExpectInterval(EvalInterval(i + 1, r), std::numeric_limits<int32_t>::min(),
                 std::numeric_limits<int32_t>::max());
  // int64 saturates instead of overflowing.
  VarRanges r64{{big.as<VarNode>(), Interval{0, int64_t{1} << 62}}};
  Interval prod = EvalInterval(big * make_const(DataType::Int(64), 4), r64);
  EXPECT_FALSE(prod.has_lower());
  EXPECT_FALSE(prod.has_upper());
  // Loads and floats are unknown.
  Tensor a = placeholder({4}, DataType::Int(32), "A");
  ExpectInterval(EvalInterval(a({Expr(0)}), {}), std::numeric_limits<int32_t>::min(),
                 std::numeric_limits<int32_t>::max());
  EXPECT_FALSE(EvalInterval(Expr(1.0f), {}).bounded());
}

TEST(IrInterval, LetAndVectors) {
  Expr i = VarNode::make("i"), t = VarNode::make("t");
  VarRanges r{{i.as<VarNode>(), Interval::FromExtent(0, 4)}};
  ExpectInterval(EvalInterval(LetNode::make(t, i * 2, t + 1), r), 1, 7);
  ExpectInterval(EvalInterval(RampNode::make(i * 4, 1, 4), r), 0, 15);
  ExpectInterval(EvalInterval(BroadcastNode::make(i, 4), r), 0, 3);
}

}  // namespace
}  // namespace autosched
