#include <gtest/gtest.h>

#include "ir/printer.h"

namespace autosched {
namespace {

TEST(IrPrinter, ArithmeticAndCalls) {
  Expr i = VarNode::make("i"), j = VarNode::make("j");
  EXPECT_EQ(ToString(i + 1), "(i + 1)");
  EXPECT_EQ(ToString(i * j - 3), "((i*j) - 3)");
  EXPECT_EQ(ToString(i / j), "(i / j)");
  EXPECT_EQ(ToString(floordiv(i, 4)), "floordiv(i, 4)");
  EXPECT_EQ(ToString(floormod(i, 4)), "floormod(i, 4)");
  EXPECT_EQ(ToString(min(i, j)), "min(i, j)");
  EXPECT_EQ(ToString(max(i, j)), "max(i, j)");
  EXPECT_EQ(ToString((i < j) && !(i >= 2)), "((i < j) && !(i >= 2))");
  EXPECT_EQ(ToString(eq(i, j) || ne(i, j)), "((i == j) || (i != j))");
  EXPECT_EQ(ToString(cast(DataType::Float(32), i)), "float32(i)");
  Expr x = cast(DataType::Float(32), i);
  EXPECT_EQ(ToString(CallNode::make(Intrinsic::Exp, {x})), "exp(float32(i))");
  EXPECT_EQ(ToString(if_then_else(i < 2, x, Expr(0.0f))), "if_then_else((i < 2), float32(i), 0f)");
  EXPECT_EQ(ToString(select(i < 2, i, j)), "select((i < 2), i, j)");
}

TEST(IrPrinter, Immediates) {
  EXPECT_EQ(ToString(Expr(1.0f)), "1f");
  EXPECT_EQ(ToString(Expr(0.5f)), "0.5f");
  EXPECT_EQ(ToString(Expr(0.1f)), "0.1f");
  EXPECT_EQ(ToString(make_const(DataType::Float(16), 1.5)), "1.5h");
  EXPECT_EQ(ToString(make_const(DataType::Float(64), 0.1)), "0.1d");
  EXPECT_EQ(ToString(CombinerIdentity(Combiner::Max, DataType::Float(32))), "-inff");
  EXPECT_EQ(ToString(Expr(-7)), "-7");
  EXPECT_EQ(ToString(make_const(DataType::Int(64), 123456789012)), "123456789012");
  EXPECT_EQ(ToString(make_const(DataType::Bool(), 1)), "True");
}

TEST(IrPrinter, LoadsAndReductions) {
  Tensor a = placeholder({4, 5}, DataType::Float(32), "A");
  Expr i = VarNode::make("i");
  IterVar k = MakeReduceAxis(0, 4, "k");
  EXPECT_EQ(ToString(a({i, k.var + 1})), "A[i, (k + 1)]");
  Expr red = ReduceNode::make(Combiner::Sum, a({i, k.var}), {k});
  EXPECT_EQ(ToString(red), "sum(A[i, k], axis=[k])");
  Expr cond_red = ReduceNode::make(Combiner::Max, a({i, k.var}), {k}, k.var < 3);
  EXPECT_EQ(ToString(cond_red), "max(A[i, k], axis=[k], where=(k < 3))");
}

TEST(IrPrinter, LoweredNodes) {
  Buffer b = MakeBuffer("B", DataType::Float(32), {16});
  Expr i = VarNode::make("i");
  Expr ramp = RampNode::make(i * 4, 1, 4);
  EXPECT_EQ(ToString(ramp), "ramp((i*4), 1, 4)");
  EXPECT_EQ(ToString(BufferLoadNode::make(b, {ramp})), "B[ramp((i*4), 1, 4)]");
  EXPECT_EQ(ToString(BroadcastNode::make(Expr(2.0f), 8)), "broadcast(2f, 8)");
  Expr t = VarNode::make("t");
  EXPECT_EQ(ToString(LetNode::make(t, i + 1, t * t)), "(let t = (i + 1) in (t*t))");
}

TEST(IrPrinter, OpToString) {
  DataType f32 = DataType::Float(32);
  Tensor pad = placeholder({1, 9, 9, 3}, f32, "PaddedInput");
  Tensor w = placeholder({3, 3, 3, 8}, f32, "placeholder");
  EXPECT_EQ(OpToString(pad), "PaddedInput = PLACEHOLDER [1, 9, 9, 3]");
  auto spatial = [](const char* name, int64_t n) {
    return IterVar{VarNode::make(name), 0, n, IterKind::Spatial};
  };
  IterVar nn = spatial("nn", 1), yy = spatial("yy", 7), xx = spatial("xx", 7), ff = spatial("ff", 8);
  IterVar ry = MakeReduceAxis(0, 3, "ry"), rx = MakeReduceAxis(0, 3, "rx"), rc = MakeReduceAxis(0, 3, "rc");
  Expr body = ReduceNode::make(
      Combiner::Sum,
      pad({nn.var, yy.var + ry.var, xx.var + rx.var, rc.var}) * w({ry.var, rx.var, rc.var, ff.var}),
      {ry, rx, rc});
  Tensor conv = compute("Conv2dOutput", {nn, yy, xx, ff}, body);
  EXPECT_EQ(OpToString(conv),
            "Conv2dOutput(nn, yy, xx, ff) += (PaddedInput[nn, (yy + ry), (xx + rx), rc]*"
            "placeholder[ry, rx, rc, ff])");

  Tensor a = placeholder({4, 5}, f32, "A");
  IterVar i = spatial("i", 4);
  IterVar k = MakeReduceAxis(0, 5, "k");
  EXPECT_EQ(OpToString(compute("P", {i}, ReduceNode::make(Combiner::Prod, a({i.var, k.var}), {k}))),
            "P(i) *= A[i, k]");
  EXPECT_EQ(OpToString(compute("M", {i}, ReduceNode::make(Combiner::Min, a({i.var, k.var}), {k}, k.var < 2))),
            "M(i) min= A[i, k] where (k < 2)");
  EXPECT_EQ(OpToString(compute("out", {i}, a({i.var, Expr(0)}) + Expr(1.0f))), "out(i) = (A[i, 0] + 1f)");
}

}  // namespace
}  // namespace autosched
