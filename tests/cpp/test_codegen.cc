// LLVM backend on hand-built loop nests, compared against plain C++ loops.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "codegen/build.h"
#include "lower/stmt_printer.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "test_util.h"

namespace autosched {
namespace {

DataType f32 = DataType::Float(32);
DataType i32 = DataType::Int(32);

template <typename T>
CallArg ArgOf(std::vector<T>& v, DataType t, std::vector<int64_t> shape) {
  return CallArg{v.data(), t, std::move(shape), true};
}

Stmt For(const Expr& v, int64_t extent, ForKind kind, Stmt body) {
  return ForNode::make(v, 0, static_cast<int>(extent), kind, std::move(body));
}

Module BuildOrSkip(const LoweredFunc& f, const std::string& target = "llvm") {
  return Build(f, Target::Parse(target));
}

class CodegenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  }
};

TEST_F(CodegenTest, SerialAddMatchesLoop) {
  const int n = 37;
  Buffer a = MakeBuffer("A", f32, {n}), b = MakeBuffer("B", f32, {n}), c = MakeBuffer("C", f32, {n});
  Expr i = VarNode::make("i");
  Stmt body = BufferStoreNode::make(c, BufferLoadNode::make(a, {i}) + BufferLoadNode::make(b, {i}), {i});
  Module m = BuildOrSkip({"add", {a, b, c}, For(i, n, ForKind::Serial, body)});
  std::vector<float> av(n), bv(n), cv(n, 0);
  for (int k = 0; k < n; ++k) av[k] = k * 0.5f, bv[k] = 3.0f - k;
  m.Call({ArgOf(av, f32, {n}), ArgOf(bv, f32, {n}), ArgOf(cv, f32, {n})});
  for (int k = 0; k < n; ++k) EXPECT_FLOAT_EQ(cv[k], av[k] + bv[k]);
  EXPECT_NE(m.GetSource("ll").find("define"), std::string::npos);
  EXPECT_NE(m.GetSource("asm").find("add"), std::string::npos);
  EXPECT_NE(m.GetSource("lowered").find("for (i, 0, 37)"), std::string::npos);
}

TEST_F(CodegenTest, ParallelOuterLoopCoversEveryRow) {
  const int rows = 13, cols = 20;
  Buffer a = MakeBuffer("A", f32, {rows, cols}), c = MakeBuffer("C", f32, {rows, cols});
  Expr i = VarNode::make("i"), j = VarNode::make("j");
  Expr idx = i * cols + j;
  Expr scale = VarNode::make("scale", f32);
  Stmt store = BufferStoreNode::make(c, BufferLoadNode::make(a, {idx}) * scale + cast(f32, i), {idx});
  Stmt nest = LetStmtNode::make(scale, Expr(2.0f),
                                For(i, rows, ForKind::Parallel, For(j, cols, ForKind::Serial, store)));
  Module m = BuildOrSkip({"par", {a, c}, nest}, "llvm -num-cores=2");
  std::vector<float> av(rows * cols), cv(rows * cols, -1);
  std::iota(av.begin(), av.end(), 0.0f);
  m.Call({ArgOf(av, f32, {rows, cols}), ArgOf(cv, f32, {rows, cols})});
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < cols; ++k) EXPECT_FLOAT_EQ(cv[r * cols + k], av[r * cols + k] * 2 + r);
}

TEST_F(CodegenTest, VectorRampLoadsAndGathers) {
  const int n = 64;
  Buffer a = MakeBuffer("A", f32, {2 * n}), c = MakeBuffer("C", f32, {n}), d = MakeBuffer("D", f32, {n});
  Expr io = VarNode::make("io");
  Expr base = io * 16;
  // C[16 io + l] = A[16 io + l] + 1 ; D[16 io + l] = A[2 (16 io + l)] (a gather)
  Stmt s1 = BufferStoreNode::make(
      c, BufferLoadNode::make(a, {RampNode::make(base, 1, 16)}) + BroadcastNode::make(Expr(1.0f), 16),
      {RampNode::make(base, 1, 16)});
  Stmt s2 = BufferStoreNode::make(d, BufferLoadNode::make(a, {RampNode::make(base * 2, 2, 16)}),
                                  {RampNode::make(base, 1, 16)});
  Module m = BuildOrSkip({"vec", {a, c, d}, For(io, n / 16, ForKind::Serial, SeqNode::make({s1, s2}))});
  std::vector<float> av(2 * n), cv(n), dv(n);
  std::iota(av.begin(), av.end(), 0.0f);
  m.Call({ArgOf(av, f32, {2 * n}), ArgOf(cv, f32, {n}), ArgOf(dv, f32, {n})});
  for (int k = 0; k < n; ++k) {
    EXPECT_FLOAT_EQ(cv[k], av[k] + 1);
    EXPECT_FLOAT_EQ(dv[k], av[2 * k]);
  }
}

TEST_F(CodegenTest, UnrolledReductionIntoLocalBuffer) {
  const int n = 10, k = 4;
  Buffer a = MakeBuffer("A", i32, {n, k}), c = MakeBuffer("C", i32, {n});
  Buffer acc = MakeBuffer("acc", i32, {1}, MemScope::Local);
  Expr i = VarNode::make("i"), r = VarNode::make("r");
  Stmt init = BufferStoreNode::make(acc, Expr(0), {Expr(0)});
  Stmt update = BufferStoreNode::make(
      acc, BufferLoadNode::make(acc, {Expr(0)}) + BufferLoadNode::make(a, {i * k + r}), {Expr(0)});
  Stmt out = BufferStoreNode::make(c, BufferLoadNode::make(acc, {Expr(0)}), {i});
  Stmt body = AllocateNode::make(acc, SeqNode::make({init, For(r, k, ForKind::Unrolled, update), out}));
  Module m = BuildOrSkip({"unroll", {a, c}, For(i, n, ForKind::Serial, body)});
  std::vector<int32_t> av(n * k), cv(n);
  std::iota(av.begin(), av.end(), -7);
  m.Call({ArgOf(av, i32, {n, k}), ArgOf(cv, i32, {n})});
  for (int x = 0; x < n; ++x) EXPECT_EQ(cv[x], av[x * k] + av[x * k + 1] + av[x * k + 2] + av[x * k + 3]);
}

TEST_F(CodegenTest, Float16StoredAsHalfComputedInFloat) {
  DataType f16 = DataType::Float(16);
  Buffer a = MakeBuffer("A", f16, {3}), b = MakeBuffer("B", f16, {3});
  Expr i = VarNode::make("i");
  Expr half_two = make_const(f16, 2.0), half_one = make_const(f16, 1.0);
  Stmt body = BufferStoreNode::make(b, BufferLoadNode::make(a, {i}) * half_two + half_one, {i});
  Module m = BuildOrSkip({"half", {a, b}, For(i, 3, ForKind::Serial, body)});
  std::vector<uint16_t> av = {0x3C00, 0x3800, 0x3E00}, bv(3);  // 1.0, 0.5, 1.5
  m.Call({ArgOf(av, f16, {3}), ArgOf(bv, f16, {3})});
  EXPECT_EQ(bv, (std::vector<uint16_t>{0x4200, 0x4000, 0x4400}));  // 3.0, 2.0, 4.0
}

TEST_F(CodegenTest, Int8WrapsAndFloorDivision) {
  DataType i8 = DataType::Int(8);
  const int n = 6;
  Buffer a = MakeBuffer("A", i8, {n}), s = MakeBuffer("S", i8, {n}), q = MakeBuffer("Q", i32, {n}),
         r = MakeBuffer("R", i32, {n});
  Expr i = VarNode::make("i");
  Expr x = BufferLoadNode::make(a, {i});
  Expr wide = cast(i32, x);
  Stmt body = SeqNode::make({BufferStoreNode::make(s, x + x, {i}),
                             BufferStoreNode::make(q, floordiv(wide, Expr(3)), {i}),
                             BufferStoreNode::make(r, floormod(wide, Expr(-4)), {i})});
  Module m = BuildOrSkip({"ints", {a, s, q, r}, For(i, n, ForKind::Serial, body)});
  std::vector<int8_t> av = {100, -100, 7, -7, 0, 127}, sv(n);
  std::vector<int32_t> qv(n), rv(n);
  m.Call({ArgOf(av, i8, {n}), ArgOf(sv, i8, {n}), ArgOf(qv, i32, {n}), ArgOf(rv, i32, {n})});
  for (int k = 0; k < n; ++k) {
    EXPECT_EQ(sv[k], static_cast<int8_t>(av[k] * 2));
    EXPECT_EQ(qv[k], static_cast<int>(std::floor(av[k] / 3.0)));
    int expect_r = av[k] - static_cast<int>(std::floor(av[k] / -4.0)) * -4;
    EXPECT_EQ(rv[k], expect_r);
  }
}

TEST_F(CodegenTest, IntrinsicsMatchLibm) {
  const int n = 8;
  Buffer a = MakeBuffer("A", f32, {n});
  std::vector<Intrinsic> ops = {Intrinsic::Exp, Intrinsic::Log,     Intrinsic::Sqrt,  Intrinsic::Tanh,
                                Intrinsic::Erf, Intrinsic::Sigmoid, Intrinsic::Floor, Intrinsic::Round};
  std::vector<Buffer> outs;
  std::vector<Stmt> stores;
  Expr i = VarNode::make("i");
  for (Intrinsic op : ops) {
    outs.push_back(MakeBuffer(std::string("out_") + IntrinsicName(op), f32, {n}));
    stores.push_back(
        BufferStoreNode::make(outs.back(), CallNode::make(op, {BufferLoadNode::make(a, {i})}), {i}));
  }
  std::vector<Buffer> args = {a};
  args.insert(args.end(), outs.begin(), outs.end());
  Module m = BuildOrSkip({"intrin", args, For(i, n, ForKind::Serial, SeqNode::make(stores))});
  std::vector<float> av = {0.1f, 0.5f, 1.0f, 1.5f, 2.5f, 3.7f, 0.25f, 4.0f};
  std::vector<std::vector<float>> res(ops.size(), std::vector<float>(n));
  std::vector<CallArg> call = {ArgOf(av, f32, {n})};
  for (auto& r : res) call.push_back(ArgOf(r, f32, {n}));
  m.Call(call);
  for (int k = 0; k < n; ++k) {
    float x = av[k];
    EXPECT_NEAR(res[0][k], std::exp(x), 1e-5 * std::exp(x));
    EXPECT_NEAR(res[1][k], std::log(x), 1e-6);
    EXPECT_NEAR(res[2][k], std::sqrt(x), 1e-6);
    EXPECT_NEAR(res[3][k], std::tanh(x), 1e-6);
    EXPECT_NEAR(res[4][k], std::erf(x), 1e-6);
    EXPECT_NEAR(res[5][k], 1 / (1 + std::exp(-x)), 1e-6);
    EXPECT_EQ(res[6][k], std::floor(x));
    EXPECT_EQ(res[7][k], std::round(x));
  }
}

// round_even in scalar and 8-lane vector code: halves to the even neighbour,
// as std::nearbyint in the default rounding mode.
TEST_F(CodegenTest, RoundEvenRoundsHalvesToEvenInScalarAndVectorCode) {
  const int n = 16;
  Buffer a = MakeBuffer("A", f32, {n}), scalar = MakeBuffer("scalar", f32, {n});
  Buffer vector = MakeBuffer("vector", f32, {n});
  Expr i = VarNode::make("i"), j = VarNode::make("j");
  auto round_even = [](Expr x) { return CallNode::make(Intrinsic::RoundEven, {std::move(x)}); };
  Expr lanes = RampNode::make(j * 8, 1, 8);
  Stmt body = SeqNode::make(
      {For(i, n, ForKind::Serial,
           BufferStoreNode::make(scalar, round_even(BufferLoadNode::make(a, {i})), {i})),
       For(j, n / 8, ForKind::Serial,
           BufferStoreNode::make(vector, round_even(BufferLoadNode::make(a, {lanes})), {lanes}))});
  Module m = BuildOrSkip({"round_even", {a, scalar, vector}, body});
  std::vector<float> av = {0.5f,       1.5f,   2.5f,       -0.5f, -1.5f,       -2.5f, 2.4999998f, -3.5000002f,
                           8388607.5f, -1e10f, 1048576.5f, 3.5f,  -1048577.5f, 0.0f,  -7.25f,     1e30f};
  std::vector<float> sv(n), vv(n);
  m.Call({ArgOf(av, f32, {n}), ArgOf(sv, f32, {n}), ArgOf(vv, f32, {n})});
  for (int k = 0; k < n; ++k) {
    EXPECT_EQ(sv[k], std::nearbyint(av[k])) << av[k];
    EXPECT_EQ(vv[k], std::nearbyint(av[k])) << av[k];
  }
  EXPECT_EQ(sv[2], 2.0f);
  EXPECT_EQ(vv[4], -2.0f);
  EXPECT_EQ(vv[10], 1048576.0f);
  EXPECT_NE(m.GetSource("ll").find("llvm.roundeven.v8f32"), std::string::npos);
}

TEST_F(CodegenTest, LargeBufferOnHeapInsideParallelLoop) {
  const int rows = 4, n = 100000;  // 400 KB per temporary: heap, per thread
  Buffer c = MakeBuffer("C", f32, {rows});
  Buffer tmp = MakeBuffer("tmp", f32, {n});
  Expr i = VarNode::make("i"), j = VarNode::make("j");
  Stmt fill = For(j, n, ForKind::Serial, BufferStoreNode::make(tmp, cast(f32, i), {j}));
  Stmt out = BufferStoreNode::make(c, BufferLoadNode::make(tmp, {Expr(n - 1)}) + 1.0f, {i});
  Module m = BuildOrSkip(
      {"heap", {c}, For(i, rows, ForKind::Parallel, AllocateNode::make(tmp, SeqNode::make({fill, out})))});
  std::vector<float> cv(rows);
  m.Call({ArgOf(cv, f32, {rows})});
  for (int r = 0; r < rows; ++r) EXPECT_FLOAT_EQ(cv[r], r + 1.0f);
}

TEST_F(CodegenTest, CallChecksNameTheWrongArgument) {
  Buffer a = MakeBuffer("A", f32, {4}), b = MakeBuffer("B", f32, {4});
  Expr i = VarNode::make("i");
  Module m =
      BuildOrSkip({"copy",
                   {a, b},
                   For(i, 4, ForKind::Serial, BufferStoreNode::make(b, BufferLoadNode::make(a, {i}), {i}))});
  std::vector<float> v(4), w(4);
  std::vector<int32_t> iv(4);
  auto expect_error = [&](const std::vector<CallArg>& args, const std::string& needle) {
    const std::string message = test::ErrorOf([&] { m.Call(args); });
    EXPECT_TRUE(test::Contains(message, needle)) << needle << ": " << message;
  };
  expect_error({ArgOf(v, f32, {4})}, "takes 2 arguments, got 1");
  expect_error({ArgOf(v, f32, {4}), ArgOf(w, f32, {5})}, "argument 1 ('B') must have shape (4,)");
  expect_error({ArgOf(iv, i32, {4}), ArgOf(w, f32, {4})}, "argument 0 ('A') must have dtype float32");
  CallArg strided = ArgOf(w, f32, {4});
  strided.c_contiguous = false;
  expect_error({ArgOf(v, f32, {4}), strided}, "C-contiguous");
  std::vector<double> times = m.TimeEvaluate({ArgOf(v, f32, {4}), ArgOf(w, f32, {4})}, {3, 2, 0.5, true});
  ASSERT_EQ(times.size(), 2u);
  for (double t : times) EXPECT_GT(t, 0);
}

TEST_F(CodegenTest, UnsupportedInputIsAnError) {
  Buffer a = MakeBuffer("A", f32, {4, 4});
  Expr i = VarNode::make("i");
  Stmt gpu = For(i, 4, ForKind::ThreadIdxX, BufferStoreNode::make(a, Expr(1.0f), {i}));
  EXPECT_THROW(BuildOrSkip({"gpu", {a}, gpu}), Error);
  Stmt unflat = For(i, 4, ForKind::Serial, BufferStoreNode::make(a, Expr(1.0f), {i, i}));
  EXPECT_THROW(BuildOrSkip({"unflat", {a}, unflat}), Error);
  EXPECT_THROW(Target::Parse("llvm -bogus"), Error);
  EXPECT_THROW(Target::Parse("cuda"), Error);
  EXPECT_THROW(BuildOrSkip({"cpu", {a}, unflat}, "llvm -mcpu=notacpu"), Error);
}

TEST(ThreadPoolTest, ChunksCoverRangeAndNestedRunsSerially) {
  std::vector<int> hits(1000, 0);
  ThreadPool::Global().ParallelFor(1000, 0, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) hits[k]++;
    ThreadPool::Global().ParallelFor(3, 0, [&](int64_t, int64_t) {});  // nested: serial, no deadlock
  });
  for (int h : hits) EXPECT_EQ(h, 1);
}

// A task held up on its first piece (a slowed core) does not hold up the
// job's other pieces: the free worker runs the rest of its share. With one
// piece per task the split is static and the held-up task runs its share.
TEST(ThreadPoolTest, FreeThreadTakesTheSharePiecesASlowTaskHasNotStarted) {
  ThreadPool pool(1);  // two tasks: the caller and one worker
  const std::thread::id caller = std::this_thread::get_id();
  constexpr int64_t kN = 64;
  auto run = [&](std::vector<std::thread::id>* ran_by) {
    pool.ParallelFor(kN, 2, [&](int64_t b, int64_t e) {
      if (b == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
      for (int64_t k = b; k < e; ++k) (*ran_by)[k] = std::this_thread::get_id();
    });
  };
  const int saved = ThreadPool::PiecesPerTask();
  std::vector<std::thread::id> ran_by(kN);
  run(&ran_by);
  // The caller's share is [0, 32); it slept in its first piece [0, 4).
  for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(ran_by[k], caller) << k;
  for (int64_t k = 4; k < kN; ++k) EXPECT_NE(ran_by[k], caller) << k;

  ThreadPool::SetPiecesPerTask(1);
  std::vector<std::thread::id> static_ran_by(kN);
  run(&static_ran_by);
  ThreadPool::SetPiecesPerTask(saved);
  for (int64_t k = 0; k < kN; ++k) EXPECT_EQ(static_ran_by[k] == caller, k < kN / 2) << k;
}

// The pool's workers spin for a while after a job and then sleep: jobs that
// follow each other at once (spinning workers), after a pause longer than the
// spin (sleeping workers), and from several calling threads at once (one job
// at a time) all run every chunk exactly once.
TEST(ThreadPoolTest, BackToBackPausedAndConcurrentJobsRunEveryChunkOnce) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  auto job = [&](int64_t n) {
    pool.ParallelFor(n, 0, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) sum += k;
    });
  };
  int64_t expected = 0;
  for (int round = 0; round < 2000; ++round) {  // back to back: workers still spinning
    job(round % 7 + 1);
    expected += (round % 7 + 1) * (round % 7) / 2;
  }
  for (int round = 0; round < 3; ++round) {  // after the spin: workers asleep
    std::this_thread::sleep_for(std::chrono::microseconds(3 * ThreadPool::kSpinMicroseconds));
    job(100);
    expected += 100 * 99 / 2;
  }
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int round = 0; round < 200; ++round) job(50);
    });
  }
  for (std::thread& t : callers) t.join();
  expected += 4 * 200 * (50 * 49 / 2);
  EXPECT_EQ(sum.load(), expected);
}

}  // namespace
}  // namespace autosched

namespace autosched {
namespace {

TEST_F(CodegenTest, LargeUnrolledNestsStayLoopsAndZeroExtentsVanish) {
  const int n = 40;  // 40 * 40 copies: over the emitter's budget
  Buffer c = MakeBuffer("C", i32, {n, n});
  Expr i = VarNode::make("i"), j = VarNode::make("j"), z = VarNode::make("z");
  Stmt store = BufferStoreNode::make(c, i * j, {i * n + j});
  Stmt empty = For(z, 0, ForKind::Unrolled, BufferStoreNode::make(c, Expr(-1), {z}));
  Stmt nest = SeqNode::make({For(i, n, ForKind::Unrolled, For(j, n, ForKind::Unrolled, store)), empty});
  Module m = BuildOrSkip({"big_unroll", {c}, nest});
  std::vector<int32_t> cv(n * n);
  m.Call({ArgOf(cv, i32, {n, n})});
  for (int x = 0; x < n; ++x)
    for (int y = 0; y < n; ++y) EXPECT_EQ(cv[x * n + y], x * y);
}

}  // namespace
}  // namespace autosched
