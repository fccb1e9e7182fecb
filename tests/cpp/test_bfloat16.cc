// bfloat16 through the core: the type (name, text, JSON, accumulation type),
// its rounding against PyTorch's bits and against a plain nearest-even
// reference over a sweep of float32 bit patterns, the reference evaluator,
// LLVM code (scalar and vector loops, no library call), the lowered form of a
// bfloat16 dot product, and OpenCL's refusal.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/build.h"
#include "codegen/opencl/codegen_opencl.h"
#include "dag/compute_dag.h"
#include "dag/evaluator.h"
#include "ir/printer.h"
#include "ir/serialize.h"
#include "lower/lower_state.h"
#include "lower/stmt_printer.h"
#include "support/error.h"
#include "test_util.h"

namespace autosched {
namespace {

const DataType kBF16 = DataType::BFloat16();
const DataType kF32 = DataType::Float(32);
const DataType kF16 = DataType::Float(16);

IterVar Axis(const std::string& name, int64_t extent) {
  return IterVar{VarNode::make(name), 0, extent, IterKind::Spatial};
}

// float32 bits -> the bits torch 2.13 gives for tensor.to(torch.bfloat16),
// scalar and vector paths alike (NaN aside: see NanStaysAQuietNanOfItsSign).
struct Case {
  const char* what;
  uint32_t f32;
  uint16_t bf16;
};
const Case kTorchCases[] = {
    {"one", 0x3f800000, 0x3f80},
    {"tie to even (down)", 0x3f808000, 0x3f80},
    {"tie to even (up)", 0x3f818000, 0x3f82},
    {"above the tie", 0x3f808001, 0x3f81},
    {"below the tie", 0x3f807fff, 0x3f80},
    {"negative tie", 0xbf808000, 0xbf80},
    {"-0", 0x80000000, 0x8000},
    {"inf", 0x7f800000, 0x7f80},
    {"-inf", 0xff800000, 0xff80},
    {"largest float32 overflows", 0x7f7fffff, 0x7f80},
    {"largest bfloat16", 0x7f7f0000, 0x7f7f},
    {"tie past the largest bfloat16", 0x7f7f8000, 0x7f80},
    {"just below that tie", 0x7f7f7fff, 0x7f7f},
    {"smallest subnormal", 0x00000001, 0x0000},
    {"subnormal tie to even (down)", 0x00008000, 0x0000},
    {"subnormal tie to even (up)", 0x00018000, 0x0002},
    {"subnormal", 0x00012345, 0x0001},
    {"largest subnormal rounds to normal", 0x007fffff, 0x0080},
    {"smallest normal", 0x00800000, 0x0080},
    {"negative subnormal tie", 0x80408000, 0x8040},
    {"pi", 0x40490fdb, 0x4049},
    {"carry into the exponent", 0x3fffffff, 0x4000},
};

// Nearest bfloat16 to a finite float32 by comparing distances in double (ties
// to the even significand): the rounding written out, no bit tricks.
uint16_t NearestBFloat16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t down = static_cast<uint16_t>(bits >> 16), up = static_cast<uint16_t>(down + 1);
  // Past the largest bfloat16 the next step up is 2^128, which rounding treats as a value.
  auto magnitude = [](uint16_t b) {
    return (b & 0x7f80) == 0x7f80 ? std::ldexp(1.0, 128)
                                  : std::fabs(static_cast<double>(BFloat16BitsToFloat(b)));
  };
  const double x = std::fabs(static_cast<double>(f)), below = magnitude(down), above = magnitude(up);
  if (x - below < above - x) return down;
  if (x - below > above - x) return up;
  return (down & 1) ? up : down;
}

TEST(BFloat16, TypeNameTextAndAccumulation) {
  EXPECT_EQ(DataType::Parse("bfloat16"), kBF16);
  EXPECT_EQ(kBF16.str(), "bfloat16");
  EXPECT_EQ(kBF16.with_lanes(16).str(), "bfloat16x16");
  EXPECT_EQ(kBF16.bytes(), 2);
  EXPECT_TRUE(kBF16.is_float() && kBF16.is_bfloat16() && kBF16.is_16bit_float() && !kBF16.is_float16());
  EXPECT_NE(kBF16, kF16);
  EXPECT_TRUE(IsSupportedScalar(kBF16));
  EXPECT_TRUE(test::Contains(test::ErrorOf([] { DataType::Parse("bfloat32"); }), "bfloat16"));
  EXPECT_EQ(DefaultAccumulationType(kBF16), kF32);
  EXPECT_TRUE(FloatFitsIn(kBF16, kF32) && !FloatFitsIn(kBF16, kF16) && !FloatFitsIn(kF16, kBF16));
  EXPECT_EQ(ToString(make_const(kBF16, 1.5)), "1.5bf");
  // A bfloat16 reduction cannot accumulate in float16 (neither holds the other's values).
  Tensor a = placeholder({4}, kBF16, "A");
  IterVar k = MakeReduceAxis(0, 4, "k");
  EXPECT_THROW(ReduceNode::make(Combiner::Sum, a({k.var}), {k}, Expr(), kF16, kBF16), TypeError);
  Tensor s = compute("S", {Axis("i", 1)}, ReduceNode::make(Combiner::Sum, a({k.var}), {k}));
  ComputeDAG dag({a, s});
  ComputeDAG again = ComputeDAG::FromJson(dag.ToJson());
  EXPECT_EQ(again.tensors()[0]->dtype, kBF16);
  EXPECT_EQ(again.workload_key(), dag.workload_key());
  Tensor h = placeholder({4}, kF16, "A");
  IterVar k2 = MakeReduceAxis(0, 4, "k");
  Tensor hs = compute("S", {Axis("i", 1)}, ReduceNode::make(Combiner::Sum, h({k2.var}), {k2}));
  EXPECT_NE(ComputeDAG({h, hs}).workload_key(), dag.workload_key());
}

TEST(BFloat16, RoundsAsTorchDoes) {
  for (const Case& c : kTorchCases) {
    EXPECT_EQ(FloatToBFloat16Bits(std::bit_cast<float>(c.f32)), c.bf16) << c.what;
  }
}

TEST(BFloat16, NanStaysAQuietNanOfItsSign) {
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xffc00001u, 0x7fffffffu, 0xff800100u}) {
    const uint16_t b = FloatToBFloat16Bits(std::bit_cast<float>(nan));
    EXPECT_TRUE(std::isnan(BFloat16BitsToFloat(b))) << std::hex << nan;
    EXPECT_EQ(b & 0x8000, (nan >> 16) & 0x8000) << std::hex << nan;
    EXPECT_EQ(b & 0x40, 0x40) << std::hex << nan;  // quiet
  }
}

TEST(BFloat16, RoundingMatchesNearestEvenOverASweep) {
  int mismatches = 0;
  for (uint32_t i = 0; i < (1u << 20); ++i) {
    const uint32_t bits = i * 4099u + (i & 1 ? 0x8000u : 0u);  // all exponents, ties included
    const float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) continue;
    const uint16_t want = std::isinf(f) ? static_cast<uint16_t>(bits >> 16) : NearestBFloat16(f);
    if (FloatToBFloat16Bits(f) != want && mismatches++ < 5) {
      ADD_FAILURE() << std::hex << "0x" << bits << ": got 0x" << FloatToBFloat16Bits(f) << ", expected 0x"
                    << want;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

// y = bfloat16(x) over every case, and z = float32(y): the evaluator's bits.
TEST(BFloat16, EvaluatorCastsReadsAndWrites) {
  const int64_t n = std::size(kTorchCases);
  Tensor x = placeholder({n}, kF32, "x");
  IterVar i = Axis("i", n);
  Tensor y = compute("y", {i}, cast(kBF16, x({i.var})));
  IterVar j = Axis("j", n);
  Tensor z = compute("z", {j}, cast(kF32, y({j.var})) * Expr(2.0f));
  ComputeDAG dag({x, y, z});
  std::vector<float> xv;
  for (const Case& c : kTorchCases) xv.push_back(std::bit_cast<float>(c.f32));
  std::vector<uint16_t> yv(n);
  std::vector<float> zv(n);
  EvaluateReference(dag, {{xv.data(), {n}, kF32}, {yv.data(), {n}, kBF16}, {zv.data(), {n}, kF32}});
  for (int64_t k = 0; k < n; ++k) {
    EXPECT_EQ(yv[k], kTorchCases[k].bf16) << kTorchCases[k].what;
    EXPECT_EQ(zv[k], 2.0f * BFloat16BitsToFloat(kTorchCases[k].bf16)) << kTorchCases[k].what;
  }
  // float64 and integers convert through float32, as PyTorch does: 1 + 2^-8 + 2^-30 is a tie in float32.
  Tensor d = placeholder({2}, DataType::Float(64), "d");
  IterVar a = Axis("a", 2);
  Tensor r = compute("r", {a}, cast(kBF16, d({a.var})));
  std::vector<double> dv = {1 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30), 259};
  std::vector<uint16_t> rv(2);
  EvaluateReference(ComputeDAG({d, r}), {{dv.data(), {2}, DataType::Float(64)}, {rv.data(), {2}, kBF16}});
  EXPECT_EQ(rv, (std::vector<uint16_t>{0x3f80, 0x4382}));  // 1.0 and 260 (259 is a tie: to even)
}

// x * c - x with c = 1 + 2^-8 + 2^-12, which bfloat16 would round to
// 1 + 2^-7: the immediate keeps float32 precision, the result is rounded once
// where it is stored (2^-8 + 2^-12 is a bfloat16), in the evaluator and in
// generated code alike.
TEST(BFloat16, ImmediatesKeepFloat32Precision) {
  Tensor x = placeholder({2}, kBF16, "x");
  IterVar i = Axis("i", 2);
  const double c = 1 + std::ldexp(1.0, -8) + std::ldexp(1.0, -12);
  Tensor y = compute("y", {i}, x({i.var}) * make_const(kBF16, c) - x({i.var}));
  ComputeDAG dag({x, y});
  std::vector<uint16_t> xv = {0x3f80, 0xbf80}, yv(2);  // 1, -1
  EvaluateReference(dag, {{xv.data(), {2}, kBF16}, {yv.data(), {2}, kBF16}});
  const float want = static_cast<float>(std::ldexp(1.0, -8) + std::ldexp(1.0, -12));
  EXPECT_EQ(BFloat16BitsToFloat(yv[0]), want);
  EXPECT_EQ(BFloat16BitsToFloat(yv[1]), -want);
  if (!HasLLVMBackend()) return;
  Module m = BuildCandidate(State(dag), Target::Parse("llvm"));
  std::vector<uint16_t> generated(2);
  m.Call({CallArg{xv.data(), kBF16, {2}, true}, CallArg{generated.data(), kBF16, {2}, true}});
  EXPECT_EQ(generated, yv);
}

// Sums of 512 ones: the default float32 accumulator counts them all, a
// bfloat16 one stalls at 256 (256 + 1 is a tie, rounded to even).
TEST(BFloat16, ReductionsAccumulateInFloat32ByDefault) {
  constexpr int64_t n = 512;
  Tensor a = placeholder({n}, kBF16, "A");
  std::vector<uint16_t> ones(n, 0x3f80);
  for (DataType acc : {kF32, kBF16}) {
    IterVar k = MakeReduceAxis(0, n, "k");
    Tensor s =
        compute("S", {Axis("i", 1)}, ReduceNode::make(Combiner::Sum, a({k.var}), {k}, Expr(), acc, kBF16));
    std::vector<uint16_t> out(1);
    EvaluateReference(ComputeDAG({a, s}), {{ones.data(), {n}, kBF16}, {out.data(), {1}, kBF16}});
    EXPECT_EQ(BFloat16BitsToFloat(out[0]), acc == kF32 ? 512.0f : 256.0f);
  }
}

// The lowered update of a bfloat16 matmul multiplies float32 operands: the
// form a dot-product instruction pattern looks for.
TEST(BFloat16, DotProductLowersToFloat32Operands) {
  Tensor a = placeholder({3, 5}, kBF16, "A"), b = placeholder({5, 7}, kBF16, "B");
  IterVar k = MakeReduceAxis(0, 5, "k");
  IterVar i = Axis("i", 3), j = Axis("j", 7);
  Tensor c =
      compute("C", {i, j}, ReduceNode::make(Combiner::Sum, a({i.var, k.var}) * b({k.var, j.var}), {k}));
  const std::string lowered = ToString(LowerStateToStmt(State(ComputeDAG({a, b, c}))));
  EXPECT_TRUE(test::Contains(lowered, "C.acc[") && test::Contains(lowered, "float32(A[") &&
              test::Contains(lowered, ")*float32(B["))
      << lowered;
  EXPECT_TRUE(test::Contains(lowered, "bfloat16(C.acc[")) << lowered;
}

class BFloat16Codegen : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  }
};

// out = bfloat16(x) and back = float32(out) + 0, in a scalar loop and in
// vectors of 8 and 16 lanes: every case's bits, and no call in the code.
TEST_F(BFloat16Codegen, CastsMatchTorchInScalarAndVectorLoops) {
  const int64_t n = 32;  // the cases, then the first ones again
  std::vector<float> xv(n);
  for (int64_t k = 0; k < n; ++k) xv[k] = std::bit_cast<float>(kTorchCases[k % std::size(kTorchCases)].f32);
  for (int lanes : {1, 8, 16}) {
    Buffer x = MakeBuffer("x", kF32, {n}), y = MakeBuffer("y", kBF16, {n}), z = MakeBuffer("z", kF32, {n});
    Expr i = VarNode::make("i"), v = VarNode::make("v");
    Expr idx = lanes == 1 ? i : RampNode::make(i * Expr(lanes), 1, lanes);
    DataType bf = kBF16.with_lanes(lanes), f = kF32.with_lanes(lanes);
    Stmt store_y = BufferStoreNode::make(y, cast(bf, BufferLoadNode::make(x, {idx})), {idx});
    Stmt store_z = BufferStoreNode::make(z, cast(f, BufferLoadNode::make(y, {idx})), {idx});
    Stmt body =
        ForNode::make(i, 0, static_cast<int>(n / lanes), ForKind::Serial, SeqNode::make({store_y, store_z}));
    Module m = Build({"bf16_cast", {x, y, z}, body}, Target::Parse("llvm"));
    std::vector<uint16_t> yv(n);
    std::vector<float> zv(n);
    m.Call({CallArg{xv.data(), kF32, {n}, true}, CallArg{yv.data(), kBF16, {n}, true},
            CallArg{zv.data(), kF32, {n}, true}});
    for (int64_t k = 0; k < n; ++k) {
      const Case& c = kTorchCases[k % std::size(kTorchCases)];
      EXPECT_EQ(yv[k], c.bf16) << c.what << " (" << lanes << " lanes)";
      EXPECT_EQ(std::bit_cast<uint32_t>(zv[k]), static_cast<uint32_t>(c.bf16) << 16) << c.what;
    }
    const std::string ll = m.GetSource("ll");
    EXPECT_FALSE(test::Contains(ll, "bfloat")) << ll;  // integer code only: no __truncsfbf2
    EXPECT_FALSE(test::Contains(m.GetSource("asm"), "call")) << lanes;
    if (lanes > 1) EXPECT_TRUE(test::Contains(ll, "<" + std::to_string(lanes) + " x i16>")) << ll;
  }
}

TEST(BFloat16, OpenCLRefusesIt) {
  Buffer in = MakeBuffer("in", kBF16, {4}), out = MakeBuffer("out", kF32, {4});
  Expr t = VarNode::make("t");
  Stmt body = ForNode::make(t, 0, 4, ForKind::ThreadIdxX,
                            BufferStoreNode::make(out, cast(kF32, BufferLoadNode::make(in, {t})), {t}));
  const std::string error = test::ErrorOf([&] { GenerateOpenCL({"f", {in, out}, body}); });
  EXPECT_TRUE(test::Contains(error, "buffer 'in' of 'f' is bfloat16, which OpenCL targets do not support"))
      << error;
}

}  // namespace
}  // namespace autosched
