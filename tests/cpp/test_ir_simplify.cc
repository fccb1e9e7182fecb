#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <random>
#include <unordered_map>

#include "ir/printer.h"
#include "ir/simplify.h"

namespace autosched {
namespace {

Expr Var(const char* name) { return VarNode::make(name); }
const VarNode* V(const Expr& e) { return e.as<VarNode>(); }

TEST(IrSimplify, ConstantFolding) {
  EXPECT_EQ(ToString(Simplify(Expr(3) + Expr(4) * Expr(2))), "11");
  EXPECT_EQ(ToString(Simplify(floordiv(Expr(-7), Expr(2)))), "-4");
  EXPECT_EQ(ToString(Simplify(floormod(Expr(-7), Expr(2)))), "1");
  EXPECT_EQ(ToString(Simplify(Expr(-7) / Expr(2))), "-3");
  EXPECT_EQ(ToString(Simplify(BinaryNode::make(BinOp::Mod, Expr(-7), Expr(2)))), "-1");
  EXPECT_EQ(ToString(Simplify(floormod(Expr(7), Expr(-2)))), "-1");
  // Wraparound at the dtype's width.
  DataType i8 = DataType::Int(8);
  EXPECT_EQ(ToString(Simplify(make_const(i8, 100) + make_const(i8, 100))), "-56");
  EXPECT_EQ(ToString(Simplify(make_const(DataType::UInt(8), 3) - make_const(DataType::UInt(8), 5))), "254");
  Expr int_max = Expr(std::numeric_limits<int32_t>::max());
  EXPECT_EQ(ToString(Simplify(int_max + 1)), "-2147483648");
  // Division by zero is left for the evaluator to report.
  EXPECT_EQ(ToString(Simplify(floordiv(Expr(1), Expr(0)))), "floordiv(1, 0)");
  // Floats: immediates only, rounded to float32.
  EXPECT_EQ(ToString(Simplify(Expr(0.5f) + Expr(0.25f))), "0.75f");
  EXPECT_EQ(ToString(Simplify(Expr(0.1f) * Expr(3.0f))), "0.3f");
  Expr x = cast(DataType::Float(32), Var("i"));
  EXPECT_EQ(ToString(Simplify(x * Expr(1.0f))), "(float32(i)*1f)");
  EXPECT_EQ(ToString(Simplify(cast(DataType::Int(32), Expr(-2.7f)))), "-2");
  EXPECT_EQ(ToString(Simplify(cast(DataType::UInt(8), Expr(300)))), "44");
  EXPECT_EQ(ToString(Simplify(Expr(2) < Expr(3))), "True");
}

TEST(IrSimplify, CanonicalLinearForm) {
  Expr i = Var("i"), j = Var("j");
  EXPECT_EQ(ToString(Simplify((i * 4 + j) - (j + i * 4))), "0");
  EXPECT_EQ(ToString(Simplify((i + 1) + 2)), "(i + 3)");
  EXPECT_EQ(ToString(Simplify((j + 1) * 4 + i - 4)), "(i + (j*4))");
  EXPECT_EQ(ToString(Simplify(j * 1 + 0 + i * 0)), "j");
  EXPECT_EQ(ToString(Simplify(Expr(5) - i)), "(5 - i)");
  EXPECT_EQ(ToString(Simplify(i - j * 3 - 2)), "((i - (j*3)) - 2)");
  EXPECT_EQ(ToString(Simplify(Expr(0) - i)), "(i*-1)");
  // Same result whatever the order of the input.
  EXPECT_EQ(ToString(Simplify(j + i)), ToString(Simplify(i + j)));
  // Distinct variables with one name stay distinct.
  Expr i2 = Var("i");
  EXPECT_EQ(ToString(Simplify(i - i2)), "(i - i)");
  EXPECT_EQ(ToString(Simplify(i - i)), "0");
}

TEST(IrSimplify, Identities) {
  Expr i = Var("i"), j = Var("j");
  EXPECT_EQ(ToString(Simplify(min(i + 1, 1 + i))), "(i + 1)");
  EXPECT_EQ(ToString(Simplify(max(j, j))), "j");
  EXPECT_EQ(ToString(Simplify(select(Expr(1) < Expr(2), i, j))), "i");
  EXPECT_EQ(ToString(Simplify(select(i < j, i + 0, i))), "i");
  EXPECT_EQ(ToString(Simplify(floordiv(i, 1))), "i");
  EXPECT_EQ(ToString(Simplify(floormod(i, 1))), "0");
  EXPECT_EQ(ToString(Simplify((i < j) && (Expr(1) < Expr(2)))), "(i < j)");
  EXPECT_EQ(ToString(Simplify(!!(i < j))), "(i < j)");
  EXPECT_EQ(ToString(Simplify(if_then_else(Expr(3) < Expr(2), i, j))), "j");
}

TEST(IrSimplify, DivModWithRanges) {
  Expr i = Var("i"), j = Var("j");
  VarRanges r{{V(i), Interval::FromExtent(0, 16)}, {V(j), Interval::FromExtent(0, 4)}};
  EXPECT_EQ(ToString(Simplify(floordiv(i * 4 + j, 4), r)), "i");
  EXPECT_EQ(ToString(Simplify(floormod(i * 4 + j, 4), r)), "j");
  EXPECT_EQ(ToString(Simplify(floordiv(i * 8 + j + 4, 4), r)), "((i*2) + 1)");
  EXPECT_EQ(ToString(Simplify(floormod(i * 8 + j + 5, 4), r)), "floormod((j + 1), 4)");
  EXPECT_EQ(ToString(Simplify(floordiv(i * 8 + j + 5, 4), r)), "(((i*2) + 1) + floordiv((j + 1), 4))");
  EXPECT_EQ(ToString(Simplify(floordiv(j, 4), r)), "0");
  EXPECT_EQ(ToString(Simplify((i * 4 + j) / 4, r)), "i");
  EXPECT_EQ(ToString(Simplify(floordiv(floordiv(i, 2), 4), r)), "floordiv(i, 8)");
  // Without ranges i*4 may wrap, so nothing is claimed.
  EXPECT_EQ(ToString(Simplify(floordiv(i * 4 + j, 4))), "floordiv(((i*4) + j), 4)");
  // Comparisons and min / max decided by ranges.
  EXPECT_EQ(ToString(Simplify(i < 16, r)), "True");
  EXPECT_EQ(ToString(Simplify(i * 4 + j < 64, r)), "True");
  EXPECT_EQ(ToString(Simplify(min(i, 20), r)), "i");
  EXPECT_EQ(ToString(Simplify(max(j - 4, i), r)), "i");
  EXPECT_EQ(ToString(Simplify(i < 8, r)), "(i < 8)");
  // A variable with a one-point range is that constant.
  VarRanges point{{V(i), Interval::FromExtent(3, 1)}};
  EXPECT_EQ(ToString(Simplify(i * 2 + j, point)), "(j + 6)");
}

TEST(IrSimplify, DivModOfAReshapedIndex) {
  // The flattened index of [116, 28, 28] divided by a multiple of the row block 784: the rows (28*h + w <
  // 784) never reach the next block, so the division is of the channel alone.
  Expr c = Var("c"), h = Var("h"), w = Var("w");
  VarRanges r{{V(c), Interval::FromExtent(0, 116)},
              {V(h), Interval::FromExtent(0, 28)},
              {V(w), Interval::FromExtent(0, 28)}};
  Expr flat = c * 784 + h * 28 + w;
  EXPECT_EQ(ToString(Simplify(floordiv(flat, 1568), r)), "floordiv(c, 2)");
  EXPECT_EQ(ToString(Simplify(floormod(floordiv(flat, 784), 116), r)), "c");
  EXPECT_EQ(ToString(Simplify(floordiv(flat, 784 * 58), r)), "floordiv(c, 58)");
  EXPECT_EQ(ToString(Simplify(floormod(flat, 1568), r)), "((floormod(c, 2)*784) + ((h*28) + w))");
  // An offset that keeps the rows within one block moves into the channel's part.
  EXPECT_EQ(ToString(Simplify(floordiv(flat + 784 * 3, 1568), r)), "(1 + floordiv((c + 1), 2))");
  // Rows that may cross a block boundary are left alone.
  EXPECT_EQ(ToString(Simplify(floordiv(flat + 5, 1568), r)),
            "floordiv(((((c*784) + (h*28)) + w) + 5), 1568)");
  // Every claimed value is the true one, over the whole range.
  for (int64_t cv : {0, 1, 57, 58, 115}) {
    for (int64_t hv : {0, 13, 27}) {
      for (int64_t wv : {0, 27}) {
        int64_t x = cv * 784 + hv * 28 + wv;
        VarRanges at{{V(c), Interval::FromExtent(cv, 1)},
                     {V(h), Interval::FromExtent(hv, 1)},
                     {V(w), Interval::FromExtent(wv, 1)}};
        Expr div = Simplify(Simplify(floordiv(flat, 1568), r), at);
        Expr mod = Simplify(Simplify(floormod(flat, 1568), r), at);
        EXPECT_EQ(ToString(div), std::to_string(x / 1568));
        EXPECT_EQ(ToString(mod), std::to_string(x % 1568));
      }
    }
  }
}

TEST(IrSimplify, CanProve) {
  Expr i = Var("i"), j = Var("j");
  VarRanges r{{V(i), Interval::FromExtent(0, 16)}, {V(j), Interval::FromExtent(0, 4)}};
  EXPECT_TRUE(CanProve(i * 4 + j < 64, r));
  EXPECT_TRUE(CanProve(i + j >= 0, r));
  EXPECT_FALSE(CanProve(i * 4 + j < 63, r));
  EXPECT_FALSE(CanProve(i < 16));
  EXPECT_TRUE(CanProve(eq(i - i, Expr(0))));
}

TEST(IrSimplify, ReduceAxesHaveRanges) {
  Tensor a = placeholder({8}, DataType::Float(32), "A");
  IterVar k = MakeReduceAxis(0, 8, "k");
  Expr red = ReduceNode::make(Combiner::Sum, a({floordiv(k.var, 8) + k.var}), {k});
  EXPECT_EQ(ToString(Simplify(red)), "sum(A[k], axis=[k])");
}

// ---- Randomized check: Simplify never changes a value ----

// A tiny independent integer evaluator (scalar ints and bools, wrap at width).
class TestEval {
 public:
  std::unordered_map<const VarNode*, int64_t> env;

  std::optional<int64_t> Eval(const Expr& e) {
    DataType t = e.dtype();
    if (const auto* n = e.as<IntImmNode>()) return n->value;
    if (const auto* n = e.as<VarNode>()) return env.at(n);
    if (const auto* n = e.as<NotNode>()) {
      auto a = Eval(n->a);
      if (!a) return std::nullopt;
      return *a == 0;
    }
    if (const auto* n = e.as<SelectNode>()) {
      auto c = Eval(n->condition), x = Eval(n->true_value), y = Eval(n->false_value);
      if (!c || !x || !y) return std::nullopt;
      return *c ? *x : *y;
    }
    if (const auto* n = e.as<CastNode>()) {
      auto a = Eval(n->value);
      if (!a) return std::nullopt;
      return WrapToType(t, *a);
    }
    const auto* n = e.as<BinaryNode>();
    if (!n) ADD_FAILURE() << "unexpected node in " << e;
    auto oa = Eval(n->a), ob = Eval(n->b);
    if (!oa || !ob) return std::nullopt;
    __int128 a = *oa, b = *ob;
    auto wrap = [&](__int128 v) { return WrapToType(t, static_cast<int64_t>(static_cast<uint64_t>(v))); };
    auto fdiv = [](__int128 x, __int128 y) {
      __int128 q = x / y;
      return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
    };
    switch (n->op) {
      case BinOp::Add: return wrap(a + b);
      case BinOp::Sub: return wrap(a - b);
      case BinOp::Mul: return wrap(a * b);
      case BinOp::Div:
        if (b == 0) return std::nullopt;
        return wrap(a / b);
      case BinOp::Mod:
        if (b == 0) return std::nullopt;
        return wrap(a % b);
      case BinOp::FloorDiv:
        if (b == 0) return std::nullopt;
        return wrap(fdiv(a, b));
      case BinOp::FloorMod:
        if (b == 0) return std::nullopt;
        return wrap(a - fdiv(a, b) * b);
      case BinOp::Min: return static_cast<int64_t>(std::min(a, b));
      case BinOp::Max: return static_cast<int64_t>(std::max(a, b));
      case BinOp::EQ: return a == b;
      case BinOp::NE: return a != b;
      case BinOp::LT: return a < b;
      case BinOp::LE: return a <= b;
      case BinOp::GT: return a > b;
      case BinOp::GE: return a >= b;
      case BinOp::And: return a && b;
      case BinOp::Or: return a || b;
    }
    return std::nullopt;
  }
};

class RandomExprs {
 public:
  RandomExprs(uint32_t seed, DataType t, std::vector<Expr> vars)
      : rng_(seed), t_(t), vars_(std::move(vars)) {}

  Expr Int(int depth) {
    int pick = Uniform(0, depth <= 0 ? 1 : 15);
    switch (pick) {
      case 0: return vars_[Uniform(0, vars_.size() - 1)];
      case 1: return Const();
      case 2:
      case 3: return Int(depth - 1) + Int(depth - 1);
      case 4: return Int(depth - 1) - Int(depth - 1);
      case 5: return Int(depth - 1) * Const();
      case 6: return Int(depth - 1) * Int(depth - 1);
      case 7: return floordiv(Int(depth - 1), SmallConst());
      case 8: return floormod(Int(depth - 1), SmallConst());
      case 9: return BinaryNode::make(Uniform(0, 1) ? BinOp::Div : BinOp::Mod, Int(depth - 1), SmallConst());
      case 10: return min(Int(depth - 1), Int(depth - 1));
      case 11: return max(Int(depth - 1), Int(depth - 1));
      case 12: return select(Bool(depth - 1), Int(depth - 1), Int(depth - 1));
      case 13: return floordiv(Int(depth - 1), Int(depth - 1));
      default: return cast(t_, cast(DataType::Int(Uniform(0, 1) ? 8 : 64), Int(depth - 1)));
    }
  }

  Expr Bool(int depth) {
    static const BinOp kCmp[] = {BinOp::EQ, BinOp::NE, BinOp::LT, BinOp::LE, BinOp::GT, BinOp::GE};
    switch (Uniform(0, 3)) {
      case 0: return (Bool(depth - 1) && Bool(depth - 1));
      case 1: return !Bool(depth - 1);
      default: return BinaryNode::make(kCmp[Uniform(0, 5)], Int(depth - 1), Int(depth - 1));
    }
  }

  int64_t Uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }

 private:
  Expr Const() {
    static const int64_t kEdge[] = {0,
                                    1,
                                    -1,
                                    2,
                                    127,
                                    -128,
                                    255,
                                    std::numeric_limits<int32_t>::max(),
                                    std::numeric_limits<int32_t>::min()};
    if (Uniform(0, 3) == 0) return IntImmNode::make(t_, kEdge[Uniform(0, 8)]);
    return IntImmNode::make(t_, Uniform(-20, 20));
  }
  Expr SmallConst() { return IntImmNode::make(t_, Uniform(0, 4) == 0 ? Uniform(-5, 5) : Uniform(1, 9)); }

  std::mt19937 rng_;
  DataType t_;
  std::vector<Expr> vars_;
};

void CheckRandomExpressions(DataType t, uint32_t seed) {
  std::vector<Expr> vars = {VarNode::make("x", t), VarNode::make("y", t), VarNode::make("z", t)};
  RandomExprs gen(seed, t, vars);
  int compared = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    // Half of the trials give ranges (which enable the range-based rules), some of them one-point.
    VarRanges ranges;
    bool ranged = trial % 2 == 0;
    std::vector<Interval> iv;
    for (const Expr& v : vars) {
      int64_t lo = gen.Uniform(t.is_uint() ? 0 : -20, 10), extent = gen.Uniform(1, 30);
      Interval full = t.is_uint()   ? Interval{0, 255}
                      : t.bits == 8 ? Interval{-128, 127}
                                    : Interval{-1000000, 1000000};
      iv.push_back(ranged ? Interval::FromExtent(lo, extent) : full);
      if (ranged) ranges[v.as<VarNode>()] = iv.back();
    }
    Expr e = gen.Int(4);
    Expr s = Simplify(e, ranges);
    ASSERT_EQ(s.dtype(), e.dtype());
    for (int sample = 0; sample < 8; ++sample) {
      TestEval ev;
      for (size_t n = 0; n < vars.size(); ++n)
        ev.env[vars[n].as<VarNode>()] = gen.Uniform(iv[n].min, iv[n].max);
      std::optional<int64_t> before = ev.Eval(e);
      if (!before) continue;  // division by zero in the original
      std::optional<int64_t> after = ev.Eval(s);
      ASSERT_TRUE(after.has_value()) << e << "\n  simplified to " << s;
      ASSERT_EQ(*before, *after) << e << "\n  simplified to " << s;
      ++compared;
    }
  }
  EXPECT_GT(compared, 5000);
}

TEST(IrSimplify, RandomizedInt32NeverChangesValues) { CheckRandomExpressions(DataType::Int(32), 7); }
TEST(IrSimplify, RandomizedInt8NeverChangesValues) { CheckRandomExpressions(DataType::Int(8), 11); }
TEST(IrSimplify, RandomizedUInt8NeverChangesValues) { CheckRandomExpressions(DataType::UInt(8), 13); }
TEST(IrSimplify, RandomizedInt64NeverChangesValues) { CheckRandomExpressions(DataType::Int(64), 17); }

}  // namespace
}  // namespace autosched
