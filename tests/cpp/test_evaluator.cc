#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "dag/evaluator.h"
#include "support/error.h"
#include "test_util.h"

namespace autosched {
namespace {

const DataType kF32 = DataType::Float(32);
const DataType kF16 = DataType::Float(16);
const DataType kI32 = DataType::Int(32);
const DataType kI8 = DataType::Int(8);

IterVar Axis(const std::string& name, int64_t extent) {
  return IterVar{VarNode::make(name), 0, extent, IterKind::Spatial};
}

template <typename T>
HostTensor View(std::vector<T>& data, std::vector<int64_t> shape, DataType dtype) {
  return HostTensor{data.data(), std::move(shape), dtype};
}

std::vector<float> RandomFloats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Error message of f(), or "" when it does not throw.
using test::ErrorOf;

struct Matmul {
  Tensor a, b, c;
  Matmul(int64_t n, int64_t m, int64_t k) {
    a = placeholder({n, k}, kF32, "A");
    b = placeholder({k, m}, kF32, "B");
    IterVar i = Axis("i", n), j = Axis("j", m);
    IterVar r = MakeReduceAxis(0, k, "k");
    c = compute("C", {i, j}, ReduceNode::make(Combiner::Sum, a({i.var, r.var}) * b({r.var, j.var}), {r}));
  }
};

TEST(Evaluator, Matmul) {
  const int64_t n = 5, m = 3, k = 7;
  Matmul mm(n, m, k);
  ComputeDAG dag({mm.a, mm.b, mm.c});
  std::vector<float> a = RandomFloats(n * k, 1), b = RandomFloats(k * m, 2), c(n * m, -1.0f);
  EvaluateReference(dag, {View(a, {n, k}, kF32), View(b, {k, m}, kF32), View(c, {n, m}, kF32)});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      double expect = 0;
      for (int64_t r = 0; r < k; ++r) expect += static_cast<double>(a[i * k + r]) * b[r * m + j];
      EXPECT_EQ(c[i * m + j], static_cast<float>(expect)) << i << "," << j;
    }
  }
  // Points computed on demand agree with the full evaluation; outputs may be null.
  std::vector<double> points = EvaluateReferencePoints(
      dag, {View(a, {n, k}, kF32), View(b, {k, m}, kF32), HostTensor{nullptr, {n, m}, kF32}}, 2,
      {{0, 0}, {4, 2}, {2, 1}});
  EXPECT_EQ(points[0], c[0]);
  EXPECT_EQ(points[1], c[4 * m + 2]);
  EXPECT_EQ(points[2], c[2 * m + 1]);
  EXPECT_NE(ErrorOf([&] {
              EvaluateReferencePoints(
                  dag, {View(a, {n, k}, kF32), View(b, {k, m}, kF32), HostTensor{nullptr, {n, m}, kF32}}, 2,
                  {{5, 0}});
            }).find("outside tensor 'C'"),
            std::string::npos);
}

// out[i] = sum_r pad[i + r] * W[r], pad = A padded by one zero on each side.
TEST(Evaluator, PaddedConvolution) {
  const int64_t n = 6, taps = 3;
  Tensor a = placeholder({n}, kF32, "A");
  Tensor w = placeholder({taps}, kF32, "W");
  IterVar p = Axis("p", n + 2);
  Tensor pad = compute(
      "pad", {p}, if_then_else(p.var >= 1 && p.var < static_cast<int>(n + 1), a({p.var - 1}), Expr(0.0f)));
  IterVar i = Axis("i", n);
  IterVar r = MakeReduceAxis(0, taps, "r");
  Tensor out = compute("out", {i}, ReduceNode::make(Combiner::Sum, pad({i.var + r.var}) * w({r.var}), {r}));
  ComputeDAG dag({a, w, out});
  std::vector<float> av = {1, 2, 3, 4, 5, 6}, wv = {1, 10, 100}, ov(n);
  EvaluateReference(dag, {View(av, {n}, kF32), View(wv, {taps}, kF32), View(ov, {n}, kF32)});
  std::vector<float> expect = {
      0 * 1 + 1 * 10 + 2 * 100, 1 + 20 + 300, 2 + 30 + 400, 3 + 40 + 500, 4 + 50 + 600, 5 + 60 + 0};
  EXPECT_EQ(ov, expect);
  std::vector<double> last = EvaluateReferencePoints(
      dag, {View(av, {n}, kF32), View(wv, {taps}, kF32), HostTensor{nullptr, {n}, kF32}}, 2, {{5}});
  EXPECT_EQ(last[0], 65.0);
}

TEST(Evaluator, ProdAndTinyReductions) {
  Tensor a = placeholder({2, 3}, kF32, "A");
  IterVar i = Axis("i", 2);
  IterVar k = MakeReduceAxis(0, 3, "k");
  Tensor prod = compute("prod", {i}, ReduceNode::make(Combiner::Prod, a({i.var, k.var}), {k}));
  // A rank-0 result reducing a 2-element tensor.
  Tensor v = placeholder({2}, kF32, "V");
  IterVar r = MakeReduceAxis(0, 2, "r");
  Tensor vmax = compute("vmax", {}, ReduceNode::make(Combiner::Max, v({r.var}), {r}));
  IterVar r2 = MakeReduceAxis(0, 2, "r2");
  Tensor vsum = compute("vsum", {}, ReduceNode::make(Combiner::Sum, v({r2.var}), {r2}));
  ComputeDAG dag({a, v, prod, vmax, vsum});
  std::vector<float> av = {1, 2, 3, -1, 0.5f, 4}, vv = {-3, -2}, pv(2), mv(1), sv(1);
  EvaluateReference(dag, {View(av, {2, 3}, kF32), View(vv, {2}, kF32), View(pv, {2}, kF32),
                          View(mv, {}, kF32), View(sv, {}, kF32)});
  EXPECT_EQ(pv, (std::vector<float>{6, -2}));
  EXPECT_EQ(mv[0], -2);
  EXPECT_EQ(sv[0], -5);
}

TEST(Evaluator, ConditionalReduction) {
  Tensor a = placeholder({5}, kI32, "A");
  IterVar k = MakeReduceAxis(0, 5, "k");
  Tensor s =
      compute("s", {}, ReduceNode::make(Combiner::Sum, a({k.var}), {k}, eq(floormod(k.var, 2), Expr(0))));
  ComputeDAG dag({a, s});
  std::vector<int32_t> av = {1, 10, 100, 1000, 10000}, sv(1);
  EvaluateReference(dag, {View(av, {5}, kI32), View(sv, {}, kI32)});
  EXPECT_EQ(sv[0], 10101);
}

TEST(Evaluator, Int8Wraps) {
  Tensor a = placeholder({3}, kI8, "A");
  IterVar i = Axis("i", 3);
  Tensor doubled = compute("doubled", {i}, a({i.var}) + a({i.var}));
  IterVar k = MakeReduceAxis(0, 3, "k");
  Tensor total = compute("total", {}, ReduceNode::make(Combiner::Sum, a({k.var}), {k}));
  ComputeDAG dag({a, doubled, total});
  std::vector<int8_t> av = {100, -100, 127}, dv(3), tv(1);
  EvaluateReference(dag, {View(av, {3}, kI8), View(dv, {3}, kI8), View(tv, {}, kI8)});
  EXPECT_EQ(dv, (std::vector<int8_t>{-56, 56, -2}));
  EXPECT_EQ(tv[0], 127);  // 100 - 100 + 127
  std::vector<int8_t> bv = {100, 100, 100};
  EvaluateReference(dag, {View(bv, {3}, kI8), View(dv, {3}, kI8), View(tv, {}, kI8)});
  EXPECT_EQ(tv[0], 44);  // 300 wraps to 44
}

TEST(Evaluator, IntegerDivisionSemantics) {
  Tensor a = placeholder({4}, kI32, "A");
  IterVar i = Axis("i", 4);
  Expr x = a({i.var});
  Expr three = Expr(3);
  Tensor div = compute("div", {i}, x / three);
  Tensor mod = compute("mod", {i}, BinaryNode::make(BinOp::Mod, x, three));
  Tensor fdiv = compute("fdiv", {i}, floordiv(x, three));
  Tensor fmod = compute("fmod", {i}, floormod(x, three));
  ComputeDAG dag({a, div, mod, fdiv, fmod});
  std::vector<int32_t> av = {-7, 7, -6, 0}, dv(4), mv(4), fdv(4), fmv(4);
  EvaluateReference(dag, {View(av, {4}, kI32), View(dv, {4}, kI32), View(mv, {4}, kI32), View(fdv, {4}, kI32),
                          View(fmv, {4}, kI32)});
  EXPECT_EQ(dv, (std::vector<int32_t>{-2, 2, -2, 0}));
  EXPECT_EQ(mv, (std::vector<int32_t>{-1, 1, 0, 0}));
  EXPECT_EQ(fdv, (std::vector<int32_t>{-3, 2, -2, 0}));
  EXPECT_EQ(fmv, (std::vector<int32_t>{2, 1, 0, 0}));
}

TEST(Evaluator, IntegerDivisionByZeroGivesZero) {
  Tensor a = placeholder({2}, kI32, "A");
  Tensor b = placeholder({2}, kI32, "B");
  IterVar i = Axis("i", 2);
  Tensor q = compute("q", {i}, a({i.var}) / b({i.var}));
  ComputeDAG dag({a, b, q});
  std::vector<int32_t> av = {7, 2}, bv = {1, 0}, qv(2);
  EvaluateReference(dag, {View(av, {2}, kI32), View(bv, {2}, kI32), View(qv, {2}, kI32)});
  EXPECT_EQ(qv, (std::vector<int32_t>{7, 0}));
}

TEST(Evaluator, Float16RoundsToNearestEven) {
  Tensor a = placeholder({8}, DataType::Float(64), "A");
  IterVar i = Axis("i", 8);
  Tensor h = compute("h", {i}, cast(kF16, a({i.var})));
  ComputeDAG dag({a, h});
  std::vector<double> av = {1 + std::ldexp(1.0, -11),      // tie: down to even 1.0
                            1 + 3 * std::ldexp(1.0, -11),  // tie: up to even
                            65519,
                            65520,                     // largest half / overflow to inf
                            std::ldexp(1.0, -25),      // half the smallest subnormal: to 0
                            3 * std::ldexp(1.0, -25),  // to 2 subnormal units
                            -2.5,
                            1.0 / 3};
  std::vector<uint16_t> hv(8);
  EvaluateReference(dag, {View(av, {8}, DataType::Float(64)), View(hv, {8}, kF16)});
  EXPECT_EQ(hv, (std::vector<uint16_t>{0x3c00, 0x3c02, 0x7bff, 0x7c00, 0x0000, 0x0002, 0xc100, 0x3555}));

  // Reading float16 data back: 0x3555 is 0.333251953125.
  Tensor g = placeholder({1}, kF16, "G");
  IterVar j = Axis("j", 1);
  Tensor wide = compute("wide", {j}, cast(kF32, g({j.var})) * Expr(3.0f));
  ComputeDAG dag2({g, wide});
  std::vector<uint16_t> gv = {0x3555};
  std::vector<float> wv(1);
  EvaluateReference(dag2, {View(gv, {1}, kF16), View(wv, {1}, kF32)});
  EXPECT_EQ(wv[0], 0.999755859375f);
}

TEST(Evaluator, CastsAndRounding) {
  Tensor a = placeholder({4}, kF32, "A");
  IterVar i = Axis("i", 4);
  Tensor rounded = compute("rounded", {i}, CallNode::make(Intrinsic::Round, {a({i.var})}));
  Tensor truncated = compute("truncated", {i}, cast(kI32, a({i.var})));
  ComputeDAG dag({a, rounded, truncated});
  std::vector<float> av = {2.5f, -2.5f, -2.7f, 0.4f}, rv(4);
  std::vector<int32_t> tv(4);
  EvaluateReference(dag, {View(av, {4}, kF32), View(rv, {4}, kF32), View(tv, {4}, kI32)});
  EXPECT_EQ(rv, (std::vector<float>{3, -3, -3, 0}));
  EXPECT_EQ(tv, (std::vector<int32_t>{2, -2, -2, 0}));
}

// round_even rounds halves to the even neighbour (numpy.round, ONNX's
// quantization), where round takes them away from zero.
TEST(Evaluator, RoundEvenRoundsHalvesToEven) {
  std::vector<float> av = {0.5f,       1.5f,        2.5f,       -0.5f,  -1.5f, -2.5f,
                           2.4999998f, -3.5000002f, 8388607.5f, -1e10f, 0.0f,  7.0f};
  const int64_t n = static_cast<int64_t>(av.size());
  Tensor a = placeholder({n}, kF32, "A");
  IterVar i = Axis("i", n);
  Tensor even = compute("even", {i}, CallNode::make(Intrinsic::RoundEven, {a({i.var})}));
  ComputeDAG dag({a, even});
  std::vector<float> ev(av.size());
  EvaluateReference(dag, {View(av, {n}, kF32), View(ev, {n}, kF32)});
  EXPECT_EQ(ev, (std::vector<float>{0, 2, 2, -0.0f, -2, -2, 2, -4, 8388608.0f, -1e10f, 0, 7}));
  EXPECT_TRUE(std::signbit(ev[3]));  // -0.5 rounds to -0
}

TEST(Evaluator, OutOfBoundsLoadIsAnError) {
  Tensor a = placeholder({4}, kF32, "A");
  IterVar i = Axis("i", 4);
  Tensor shifted = compute("shifted", {i}, a({i.var + 1}));
  ComputeDAG dag({a, shifted});
  std::vector<float> av(4), sv(4);
  std::string msg = ErrorOf([&] { EvaluateReference(dag, {View(av, {4}, kF32), View(sv, {4}, kF32)}); });
  EXPECT_NE(msg.find("tensor 'A'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4]"), std::string::npos) << msg;
}

TEST(Evaluator, SelectIsEagerIfThenElseIsLazy) {
  Tensor a = placeholder({4}, kF32, "A");
  IterVar i = Axis("i", 4);
  Tensor guarded = compute("guarded", {i}, if_then_else(i.var < 3, a({i.var + 1}), Expr(0.0f)));
  IterVar j = Axis("j", 4);
  Tensor selected = compute("selected", {j}, select(j.var < 3, a({j.var + 1}), Expr(0.0f)));
  std::vector<float> av = {1, 2, 3, 4}, gv(4), sv(4);
  ComputeDAG lazy({a, guarded});
  EvaluateReference(lazy, {View(av, {4}, kF32), View(gv, {4}, kF32)});
  EXPECT_EQ(gv, (std::vector<float>{2, 3, 4, 0}));
  ComputeDAG eager({a, selected});
  EXPECT_THROW(EvaluateReference(eager, {View(av, {4}, kF32), View(sv, {4}, kF32)}), Error);
}

TEST(Evaluator, ArgumentChecks) {
  Matmul mm(2, 2, 2);
  ComputeDAG dag({mm.a, mm.b, mm.c});
  std::vector<float> x(4), y(4), z(4);
  std::string shape_msg = ErrorOf([&] {
    EvaluateReference(dag, {View(x, {2, 2}, kF32), View(y, {4}, kF32), View(z, {2, 2}, kF32)});
  });
  EXPECT_NE(shape_msg.find("argument 1 ('B')"), std::string::npos) << shape_msg;
  std::string dtype_msg = ErrorOf([&] {
    EvaluateReference(dag, {View(x, {2, 2}, kF32), View(y, {2, 2}, kF32), View(z, {2, 2}, kI32)});
  });
  EXPECT_NE(dtype_msg.find("argument 2 ('C')"), std::string::npos) << dtype_msg;
  EXPECT_THROW(EvaluateReference(dag, {View(x, {2, 2}, kF32)}), Error);
  EXPECT_THROW(EvaluateReference(
                   dag, {HostTensor{nullptr, {2, 2}, kF32}, View(y, {2, 2}, kF32), View(z, {2, 2}, kF32)}),
               Error);
}

TEST(Evaluator, TranscendentalsAndIntermediates) {
  Tensor a = placeholder({3}, kF32, "A");
  IterVar i = Axis("i", 3);
  Tensor e = compute("e", {i}, CallNode::make(Intrinsic::Exp, {a({i.var})}));
  IterVar j = Axis("j", 3);
  Tensor s = compute("s", {j}, CallNode::make(Intrinsic::Sigmoid, {e({j.var})}) + Expr(1.0f));
  ComputeDAG dag({a, s});  // e is an intermediate held by the evaluator
  std::vector<float> av = {0, 1, -1}, sv(3);
  EvaluateReference(dag, {View(av, {3}, kF32), View(sv, {3}, kF32)});
  for (int k = 0; k < 3; ++k) {
    double ex = static_cast<float>(std::exp(static_cast<double>(av[k])));
    EXPECT_EQ(sv[k], static_cast<float>(1.0 / (1.0 + std::exp(-ex)) + 1.0));
  }
}

}  // namespace
}  // namespace autosched

namespace autosched {
namespace {

// Points are computed on demand: an intermediate element nobody needs (here
// one that would read out of bounds) is never computed.
TEST(Evaluator, PointsComputeOnlyWhatIsNeeded) {
  Tensor a = placeholder({4}, kF32, "A");
  IterVar i = Axis("i", 4);
  Tensor shifted = compute("shifted", {i}, a({i.var + 1}));  // element 3 is out of bounds
  IterVar j = Axis("j", 3);
  Tensor out = compute("out", {j}, shifted({j.var}) * Expr(2.0f));
  ComputeDAG dag({a, out});
  std::vector<float> av = {1, 2, 3, 4}, ov(3);
  EXPECT_THROW(EvaluateReference(dag, {View(av, {4}, kF32), View(ov, {3}, kF32)}), Error);
  std::vector<double> values =
      EvaluateReferencePoints(dag, {View(av, {4}, kF32), HostTensor{nullptr, {3}, kF32}}, 1, {{2}, {0}, {2}});
  EXPECT_EQ(values, (std::vector<double>{8, 4, 8}));
  EXPECT_THROW(EvaluateReferencePoints(dag, {View(av, {4}, kF32), HostTensor{nullptr, {3}, kF32}}, 2, {{0}}),
               Error);
}

#ifdef __FLT16_MAX__
// Sweeps float32 bit patterns (all exponents, many mantissas) and compares the
// evaluator's float16 rounding with the compiler's own conversion.
TEST(Evaluator, Float16MatchesCompilerConversion) {
  const int64_t count = 1 << 16;
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits = static_cast<uint32_t>(i) * 65537u + 12345u;  // spreads over the whole range
    std::memcpy(&values[i], &bits, sizeof(bits));
  }
  Tensor a = placeholder({count}, kF32, "A");
  IterVar i = Axis("i", count);
  Tensor h = compute("h", {i}, cast(kF16, a({i.var})));
  ComputeDAG dag({a, h});
  std::vector<uint16_t> hv(count);
  EvaluateReference(dag, {View(values, {count}, kF32), View(hv, {count}, kF16)});
  int mismatches = 0;
  for (int64_t k = 0; k < count; ++k) {
    _Float16 expect = static_cast<_Float16>(values[k]);
    uint16_t expect_bits;
    std::memcpy(&expect_bits, &expect, sizeof(expect_bits));
    bool both_nan = std::isnan(values[k]) && (hv[k] & 0x7c00) == 0x7c00 && (hv[k] & 0x3ff) != 0;
    if (hv[k] != expect_bits && !both_nan && mismatches++ < 5) {
      ADD_FAILURE() << "value " << values[k] << ": got 0x" << std::hex << hv[k] << ", expected 0x"
                    << expect_bits;
    }
  }
  EXPECT_EQ(mismatches, 0);
}
#endif

}  // namespace
}  // namespace autosched
