// The IR rules that lowering and the evaluator share: reduce axes start at 0
// once an op is made, reductions accumulate in their accumulation type, load
// indices of any integer type lower to int32, and depth is bounded (nodes,
// compute ops, JSON).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dag/compute_dag.h"
#include "dag/evaluator.h"
#include "ir/printer.h"
#include "ir/serialize.h"
#include "ir/simplify.h"
#include "ir/structural.h"
#include "lower/lower.h"
#include "lower/lower_state.h"
#include "lower/stmt_printer.h"
#include "support/error.h"
#include "test_util.h"

namespace autosched {
namespace {

const DataType kF32 = DataType::Float(32);
const DataType kF16 = DataType::Float(16);

IterVar Axis(const std::string& name, int64_t extent) {
  return IterVar{VarNode::make(name), 0, extent, IterKind::Spatial};
}

using test::ErrorOf;

// ---- reduce axes ----

TEST(IrSemantics, ReduceAxesAreMovedToStartAtZero) {
  Tensor a = placeholder({3, 8}, kF32, "A");
  IterVar i = Axis("i", 3);
  IterVar k = MakeReduceAxis(2, 4, "k");
  Tensor b = compute("B", {i}, ReduceNode::make(Combiner::Sum, a({i.var, k.var}), {k}));
  ASSERT_EQ(b->reduce_axis.size(), 1u);
  EXPECT_EQ(b->reduce_axis[0].min, 0);
  EXPECT_EQ(b->reduce_axis[0].extent, 4);
  EXPECT_EQ(OpToString(b), "B(i) += A[i, (k + 2)]");
  // The body's Reduce holds the same axes as the op.
  EXPECT_EQ(b->body.as<ReduceNode>()->axis[0].var_node(), b->reduce_axis[0].var_node());

  std::vector<float> in(24), out(3, 0.f);
  for (int x = 0; x < 24; ++x) in[x] = static_cast<float>(x);
  ComputeDAG dag({a, b});
  EvaluateReference(dag, {HostTensor{in.data(), {3, 8}, kF32}, HostTensor{out.data(), {3}, kF32}});
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(out[r], in[r * 8 + 2] + in[r * 8 + 3] + in[r * 8 + 4] + in[r * 8 + 5]);
  EXPECT_NE(ToString(LowerStateToStmt(State(dag))).find("for (k, 0, 4)"), std::string::npos);
}

// ---- accumulation type ----

TEST(IrSemantics, AccumulationTypeDefaultsAndChecks) {
  EXPECT_EQ(DefaultAccumulationType(kF16), kF32);
  EXPECT_EQ(DefaultAccumulationType(kF32), kF32);
  EXPECT_EQ(DefaultAccumulationType(DataType::Int(8)), DataType::Int(8));
  Tensor a = placeholder({4}, kF16, "A");
  IterVar k = MakeReduceAxis(0, 4, "k");
  Expr sum = ReduceNode::make(Combiner::Sum, a({k.var}), {k});
  EXPECT_EQ(sum.dtype(), kF16);
  EXPECT_EQ(sum.as<ReduceNode>()->acc_dtype, kF32);
  EXPECT_EQ(sum.as<ReduceNode>()->identity().dtype(), kF32);
  // float16 itself and wider floats are allowed; narrower or integer ones are not.
  EXPECT_NO_THROW(ReduceNode::make(Combiner::Sum, a({k.var}), {k}, Expr(), kF16, kF16));
  EXPECT_NO_THROW(ReduceNode::make(Combiner::Max, a({k.var}), {k}, Expr(), DataType::Float(64), kF16));
  Tensor b = placeholder({4}, kF32, "B");
  EXPECT_THROW(ReduceNode::make(Combiner::Sum, b({k.var}), {k}, Expr(), kF16, kF32), TypeError);
  Tensor c = placeholder({4}, DataType::Int(32), "C");
  EXPECT_THROW(ReduceNode::make(Combiner::Sum, c({k.var}), {k}, Expr(), kF32, DataType::Int(32)), TypeError);
  // A float32 source can give a float16 result through a float32 accumulator (rfactor's final stage).
  EXPECT_NO_THROW(ReduceNode::make(Combiner::Sum, b({k.var}), {k}, Expr(), kF32, kF16));
  EXPECT_THROW(ReduceNode::make(Combiner::Sum, b({k.var}), {k}, Expr(), kF16, kF16), TypeError);
}

Tensor HalfSum(const Tensor& a, int64_t n, DataType acc) {
  IterVar k = MakeReduceAxis(0, n, "k");
  return compute("S", {Axis("i", 1)},
                 ReduceNode::make(Combiner::Sum, a({Expr(0), k.var}), {k}, Expr(), acc, kF16));
}

TEST(IrSemantics, EvaluatorAndLoweringFollowTheAccumulationType) {
  constexpr int64_t n = 4096;
  Tensor a = placeholder({1, n}, kF16, "A");
  std::vector<uint16_t> ones(n, 0x3c00);  // float16 1.0
  for (DataType acc : {kF32, kF16}) {
    Tensor s = HalfSum(a, n, acc);
    ComputeDAG dag({a, s});
    std::vector<uint16_t> out(1, 0);
    EvaluateReference(dag, {HostTensor{ones.data(), {1, n}, kF16}, HostTensor{out.data(), {1}, kF16}});
    // 4096 is 0x6c00; a float16 accumulator stalls at 2048 (0x6800).
    EXPECT_EQ(out[0], acc == kF32 ? 0x6c00 : 0x6800);
    std::string lowered = ToString(LowerStateToStmt(State(dag)));
    if (acc == kF32) {
      EXPECT_NE(lowered.find("S.acc"), std::string::npos) << lowered;
      EXPECT_NE(lowered.find("float16(S.acc"), std::string::npos) << lowered;
    } else {
      EXPECT_EQ(lowered.find("S.acc"), std::string::npos) << lowered;
    }
    EXPECT_NO_THROW(Lower(State(dag)));
  }
}

TEST(IrSemantics, AccumulationTypeInTextHashAndJson) {
  Tensor a = placeholder({1, 8}, kF16, "A");
  Tensor by_default = HalfSum(a, 8, kF32);
  Tensor in_half = HalfSum(a, 8, kF16);
  EXPECT_EQ(OpToString(by_default), "S(i) += A[0, k]");
  EXPECT_EQ(OpToString(in_half), "S(i) += A[0, k] (accumulates in float16)");
  EXPECT_NE(ToString(in_half->body).find("acc_dtype=float16"), std::string::npos);
  EXPECT_NE(StructuralHashOp(by_default, {}), StructuralHashOp(in_half, {}));
  // The default written out equals the default left implicit.
  IterVar k = MakeReduceAxis(0, 8, "k");
  Tensor implicit = compute("S", {Axis("i", 1)}, ReduceNode::make(Combiner::Sum, a({Expr(0), k.var}), {k}));
  EXPECT_EQ(StructuralHashOp(implicit, {}), StructuralHashOp(by_default, {}));
  for (const Tensor& t : {by_default, in_half}) {
    std::vector<Tensor> back = TensorsFromJson(nlohmann::json::parse(TensorsToJson({a, t}).dump()));
    const auto* red = back[1]->body.as<ReduceNode>();
    EXPECT_EQ(red->acc_dtype, t->body.as<ReduceNode>()->acc_dtype);
    EXPECT_EQ(StructuralHashOp(back[1], {}), StructuralHashOp(t, {}));
  }
  // A result type other than the source's survives JSON too.
  Tensor f = placeholder({8}, kF32, "F");
  IterVar r = MakeReduceAxis(0, 8, "r");
  Tensor narrow = compute("N", {}, ReduceNode::make(Combiner::Sum, f({r.var}), {r}, Expr(), kF32, kF16));
  std::vector<Tensor> back = TensorsFromJson(TensorsToJson({f, narrow}));
  EXPECT_EQ(back[1]->dtype, kF16);
  EXPECT_EQ(back[1]->body.as<ReduceNode>()->source.dtype(), kF32);
}

// ---- index types ----

TEST(IrSemantics, LoadIndicesOfAnyIntegerTypeLower) {
  Tensor a = placeholder({5, 4}, kF32, "A");
  Tensor idx = placeholder({3}, DataType::Int(64), "I");
  IterVar r = Axis("r", 3), j = Axis("j", 4);
  Tensor g = compute("G", {r, j}, a({idx({r.var}), cast(DataType::Int(64), j.var)}));
  ComputeDAG dag({a, idx, g});
  LoweredFunc f;
  ASSERT_NO_THROW(f = Lower(State(dag)));
  EXPECT_NE(ToString(f).find("int32(I["), std::string::npos) << ToString(f);
}

TEST(IrSemantics, NarrowingIntegerCastsMoveDownAndCancel) {
  const DataType i64 = DataType::Int(64), i32 = DataType::Int(32);
  Expr i = VarNode::make("i"), j = VarNode::make("j");
  Expr wide = cast(i64, i) * IntImmNode::make(i64, 4) + cast(i64, j) - IntImmNode::make(i64, 1);
  EXPECT_EQ(ToString(Simplify(cast(i32, wide))), ToString(Simplify(i * Expr(4) + j - Expr(1))));
  // Not when the middle type loses values, nor through division.
  Expr u8 = VarNode::make("u", DataType::UInt(8));
  EXPECT_EQ(ToString(Simplify(cast(i32, cast(DataType::Int(8), u8)))), "int32(int8(u))");
  EXPECT_EQ(ToString(Simplify(cast(i32, cast(i32, u8)))), "int32(u)");
  Expr q = floordiv(cast(i64, i), IntImmNode::make(i64, 3));
  EXPECT_EQ(Simplify(cast(i32, q)).as<CastNode>()->value.dtype(), i64);
}

// ---- depth ----

TEST(IrSemantics, NodesDeeperThanTheLimitAreRefused) {
  Expr x = VarNode::make("x");
  for (int d = 1; d < kMaxNodeDepth; ++d) x = x + Expr(1);
  EXPECT_EQ(x.depth(), kMaxNodeDepth);
  std::string error = ErrorOf([&] { x = x + Expr(1); });
  EXPECT_NE(error.find(std::to_string(kMaxNodeDepth + 1) + " levels deep"), std::string::npos) << error;
  EXPECT_EQ(x.depth(), kMaxNodeDepth);
  // Every kind of node counts.
  Expr c = VarNode::make("c", kF32);
  for (int d = 1; d < kMaxNodeDepth; ++d) c = CallNode::make(Intrinsic::Exp, {c});
  EXPECT_THROW(cast(DataType::Int(32), c), Error);
  EXPECT_THROW(BroadcastNode::make(c, 4), Error);
}

TEST(IrSemantics, ComputeOpsAreHeldToTheExpressionDepthLimit) {
  Tensor a = placeholder({2}, kF32, "A");
  IterVar i = Axis("i", 2);
  auto chain = [&](int depth) {  // a body exactly `depth` levels deep
    Expr x = a({i.var});
    for (int d = 2; d < depth; ++d) x = x * Expr(0.5f);
    return x;
  };
  Tensor ok = compute("B", {i}, chain(kMaxExprDepth));
  EXPECT_EQ(ok->depth, kMaxExprDepth);
  std::string error = ErrorOf([&] { compute("B", {i}, chain(kMaxExprDepth + 1)); });
  EXPECT_NE(error.find("limit of " + std::to_string(kMaxExprDepth)), std::string::npos) << error;
  // Depth counts through the computed tensors an op reads.
  Tensor half = compute("H", {i}, chain(kMaxExprDepth / 2 + 1));
  IterVar i2 = Axis("i", 2);
  Expr y = half({i2.var});
  for (int d = 2; d < kMaxExprDepth / 2 + 1; ++d) y = y + Expr(1.0f);
  error = ErrorOf([&] { compute("C", {i2}, y); });
  EXPECT_NE(error.find("compute 'C'"), std::string::npos) << error;
}

TEST(IrSemantics, UserJsonDepthIsBoundedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string error = ErrorOf([&] { ParseJsonText(deep, "test document"); });
  EXPECT_NE(error.find("test document"), std::string::npos) << error;
  EXPECT_NE(error.find(std::to_string(kMaxJsonDepth)), std::string::npos) << error;
  const std::string at_limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_NO_THROW(ParseJsonText(at_limit, "test document"));
  // Brackets in strings (escaped quotes included) are text.
  EXPECT_NO_THROW(ParseJsonText("{\"s\": \"\\\"" + std::string(5000, '[') + "\"}", "test document"));
  EXPECT_THROW(ParseJsonText("{", "test document"), Error);
}

TEST(IrSemantics, TensorGraphJsonDeeperThanAnExpressionIsRefused) {
  // An expression nested past the limit, written by hand (no writer makes one).
  nlohmann::json e = {{"kind", "var"}, {"id", 0}, {"name", "i"}};
  for (int d = 0; d < kMaxExprDepth + 5; ++d) e = {{"kind", "not"}, {"a", e}};
  nlohmann::json doc = {{"version", 1},
                        {"tensors",
                         {{{"name", "B"},
                           {"op", "compute"},
                           {"shape", {2}},
                           {"dtype", "bool"},
                           {"axis", {{{"name", "i"}, {"min", 0}, {"extent", 2}}}},
                           {"reduce_axis", nlohmann::json::array()},
                           {"body", e},
                           {"tag", ""},
                           {"attrs", nlohmann::json::object()}}}},
                        {"outputs", {0}}};
  std::string error = ErrorOf([&] { TensorsFromJson(doc); });
  EXPECT_NE(error.find("nested more than " + std::to_string(kMaxExprDepth)), std::string::npos) << error;
}

}  // namespace
}  // namespace autosched
