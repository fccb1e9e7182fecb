#include <gtest/gtest.h>

#include "ir/expr.h"
#include "ir/tensor.h"
#include "support/error.h"

namespace autosched {
namespace {

TEST(Expr, TypeCheckedConstruction) {
  Expr i = VarNode::make("i");
  Expr f = make_const(DataType::Float(32), 1.5);
  EXPECT_EQ((i + 1).dtype(), DataType::Int(32));
  EXPECT_THROW(i + f, TypeError);
  EXPECT_EQ((i < 3).dtype(), DataType::Bool());
}

TEST(Expr, WrapToType) {
  EXPECT_EQ(WrapToType(DataType::Int(8), 200), -56);
  EXPECT_EQ(WrapToType(DataType::UInt(8), -1), 255);
  EXPECT_EQ(IntImmNode::make(DataType::Int(16), 70000).as<IntImmNode>()->value, 4464);
}

// round_even: named in records and Python, float-only, cheap (a vector
// instruction: no library call per lane, not worth computing once).
TEST(Expr, RoundEvenIntrinsic) {
  EXPECT_STREQ(IntrinsicName(Intrinsic::RoundEven), "round_even");
  EXPECT_EQ(ParseIntrinsic("round_even"), Intrinsic::RoundEven);
  EXPECT_FALSE(FactsOf(Intrinsic::RoundEven).expensive);
  EXPECT_FALSE(FactsOf(Intrinsic::RoundEven).library_call_per_lane);
  Expr x = make_const(DataType::Float(32), 2.5);
  EXPECT_EQ(CallNode::make(Intrinsic::RoundEven, {x}).dtype(), DataType::Float(32));
  EXPECT_THROW(CallNode::make(Intrinsic::RoundEven, {Expr(3)}), TypeError);
}

TEST(Tensor, RankAndReduceChecks) {
  Tensor a = placeholder({4, 5}, DataType::Float(32), "A");
  Expr i = VarNode::make("i");
  EXPECT_THROW(a({i}), Error);
  IterVar k = MakeReduceAxis(0, 5, "k");
  IterVar iv{i, 0, 4, IterKind::Spatial};
  EXPECT_THROW(ReduceNode::make(Combiner::Sum, a({i, Expr(0)}), {k}), Error);
  Tensor s = compute("S", {iv}, ReduceNode::make(Combiner::Sum, a({i, k.var}), {k}));
  EXPECT_EQ(s->reduce_axis.size(), 1u);
  EXPECT_THROW(placeholder({4}, DataType::UInt(16), "bad"), TypeError);
}

}  // namespace
}  // namespace autosched
