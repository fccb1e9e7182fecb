// Code generation at its edges, on hand-built loop nests: NaN in float max /
// min, integer division at INT_MIN / -1 and by zero (scalar and vector),
// the unroll budget, the stack budget, the thread pool in a forked child and
// the CPU features a foreign -mcpu loses.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "codegen/build.h"
#include "codegen/unroll_budget.h"
#include "runtime/thread_pool.h"
#include "support/error.h"

namespace autosched {
namespace {

DataType f32 = DataType::Float(32);
DataType i32 = DataType::Int(32);

template <typename T>
CallArg ArgOf(std::vector<T>& v, DataType t) {
  return CallArg{v.data(), t, {static_cast<int64_t>(v.size())}, true};
}

Stmt For(const Expr& v, int64_t extent, ForKind kind, Stmt body) {
  return ForNode::make(v, 0, static_cast<int>(extent), kind, std::move(body));
}

class CodegenSemanticsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  }
};

// out_k[i] = op_k(A[i], B[i]) for every op, over n elements: scalar, or in
// vectors of `lanes` (ramps) when lanes > 1.
Module BuildBinaryOps(const std::vector<BinOp>& binops, DataType t, int n, int lanes,
                      std::vector<Buffer>* args) {
  Buffer a = MakeBuffer("A", t, {n}), b = MakeBuffer("B", t, {n});
  *args = {a, b};
  Expr i = VarNode::make("i");
  Expr index = lanes > 1 ? RampNode::make(i * lanes, 1, lanes) : i;
  std::vector<Stmt> stores;
  for (BinOp op : binops) {
    args->push_back(MakeBuffer(std::string("out_") + BinOpName(op), t, {n}));
    Expr value = BinaryNode::make(op, BufferLoadNode::make(a, {index}), BufferLoadNode::make(b, {index}));
    stores.push_back(BufferStoreNode::make(args->back(), value, {index}));
  }
  return Build({"binops", *args, For(i, n / lanes, ForKind::Serial, SeqNode::make(stores))},
               Target::Parse("llvm"));
}

TEST_F(CodegenSemanticsTest, FloatMaxMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> av = {nan, 1, nan, -2, 3, 0.5f, -1, nan}, bv = {1, nan, nan, 5, -3, 0.25f, nan, 2};
  for (int lanes : {1, 8}) {
    std::vector<Buffer> args;
    Module m = BuildBinaryOps({BinOp::Max, BinOp::Min}, f32, 8, lanes, &args);
    std::vector<float> mx(8), mn(8);
    m.Call({ArgOf(av, f32), ArgOf(bv, f32), ArgOf(mx, f32), ArgOf(mn, f32)});
    for (int k = 0; k < 8; ++k) {
      bool any_nan = std::isnan(av[k]) || std::isnan(bv[k]);
      EXPECT_EQ(std::isnan(mx[k]), any_nan) << k << " lanes " << lanes;
      EXPECT_EQ(std::isnan(mn[k]), any_nan) << k << " lanes " << lanes;
      if (!any_nan) EXPECT_EQ(mx[k], std::max(av[k], bv[k]));
      if (!any_nan) EXPECT_EQ(mn[k], std::min(av[k], bv[k]));
    }
  }
}

TEST_F(CodegenSemanticsTest, IntMinDividedByMinusOneWraps) {
  const int32_t lo = std::numeric_limits<int32_t>::min();
  std::vector<int32_t> av = {lo, lo, 7, -7, lo, 9, -9, 0}, bv = {-1, 1, -1, 2, lo, -2, 4, -1};
  // Div truncates, Mod takes the dividend's sign; FloorDiv / FloorMod round down.
  std::vector<int32_t> div = {lo, lo, -7, -3, 1, -4, -2, 0}, mod = {0, 0, 0, -1, 0, 1, -1, 0};
  std::vector<int32_t> fdiv = {lo, lo, -7, -4, 1, -5, -3, 0}, fmod = {0, 0, 0, 1, 0, -1, 3, 0};
  for (int lanes : {1, 8}) {
    std::vector<Buffer> args;
    Module m =
        BuildBinaryOps({BinOp::Div, BinOp::Mod, BinOp::FloorDiv, BinOp::FloorMod}, i32, 8, lanes, &args);
    std::vector<std::vector<int32_t>> out(4, std::vector<int32_t>(8));
    m.Call({ArgOf(av, i32), ArgOf(bv, i32), ArgOf(out[0], i32), ArgOf(out[1], i32), ArgOf(out[2], i32),
            ArgOf(out[3], i32)});
    EXPECT_EQ(out[0], div) << "lanes " << lanes;
    EXPECT_EQ(out[1], mod) << "lanes " << lanes;
    EXPECT_EQ(out[2], fdiv) << "lanes " << lanes;
    EXPECT_EQ(out[3], fmod) << "lanes " << lanes;
  }
}

TEST_F(CodegenSemanticsTest, DivisionByZeroGivesZero) {
  for (int lanes : {1, 8}) {
    for (BinOp op : {BinOp::Div, BinOp::Mod, BinOp::FloorDiv, BinOp::FloorMod}) {
      std::vector<Buffer> args;
      Module m = BuildBinaryOps({op}, i32, 8, lanes, &args);
      std::vector<int32_t> av(8, 5), bv(8, 2), out(8);
      bv[6] = 0;
      m.Call({ArgOf(av, i32), ArgOf(bv, i32), ArgOf(out, i32)});
      const int32_t by_two = op == BinOp::Div || op == BinOp::FloorDiv ? 2 : 1;
      for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(out[i], i == 6 ? 0 : by_two) << BinOpName(op) << " lanes " << lanes << " element " << i;
      }
    }
  }
}

TEST_F(CodegenSemanticsTest, ManyLargeBuffersShareTheStackBudget) {
  // 40 chained temporaries of 240 KiB: all on the stack, they took 9.6 MiB.
  const int n = 240 * 1024 / 4, stages = 40;
  Buffer in = MakeBuffer("in", f32, {n}), out = MakeBuffer("out", f32, {n});
  std::vector<Buffer> tmp;
  for (int s = 0; s < stages; ++s) tmp.push_back(MakeBuffer("t" + std::to_string(s), f32, {n}));
  std::vector<Stmt> steps;
  for (int s = 0; s <= stages; ++s) {
    Expr i = VarNode::make("i");
    const Buffer& src = s == 0 ? in : tmp[s - 1];
    const Buffer& dst = s == stages ? out : tmp[s];
    steps.push_back(
        For(i, n, ForKind::Serial, BufferStoreNode::make(dst, BufferLoadNode::make(src, {i}) + 1.0f, {i})));
  }
  Stmt body = SeqNode::make(steps);
  for (int s = stages - 1; s >= 0; --s) body = AllocateNode::make(tmp[s], body);
  Module m = Build({"chain", {in, out}, body}, Target::Parse("llvm"));
  std::vector<float> iv(n, 0.5f), ov(n);
  m.Call({ArgOf(iv, f32), ArgOf(ov, f32)});
  for (float v : ov) ASSERT_EQ(v, 0.5f + stages + 1);
}

TEST(UnrollBudgetTest, InnerLoopsFirstWithinTheBudget) {
  Buffer c = MakeBuffer("C", i32, {1 << 20});
  Expr i = VarNode::make("i"), j = VarNode::make("j");
  auto nest = [&](int64_t outer, int64_t inner) {
    Stmt store = BufferStoreNode::make(c, i + j, {i * static_cast<int>(inner) + j});
    return For(i, outer, ForKind::Unrolled, For(j, inner, ForKind::Unrolled, store));
  };
  Stmt small = nest(4, 4);
  EXPECT_EQ(LoopsToUnroll(small).size(), 2u);  // 16 small copies

  Stmt big = nest(256, 256);
  auto chosen = LoopsToUnroll(big);
  ASSERT_EQ(chosen.size(), 1u);  // the inner loop only
  EXPECT_TRUE(chosen.count(big.as<ForNode>()->body.as<ForNode>()));

  Stmt huge = nest(1024, 1024);
  EXPECT_TRUE(LoopsToUnroll(huge).empty());

  // Loops after the budget is spent stay loops; so does one of unknown extent.
  Stmt first = nest(4, 4), second = nest(4, 4);
  auto some = LoopsToUnroll(SeqNode::make({first, second}), 40);
  EXPECT_TRUE(some.count(first.as<ForNode>()->body.as<ForNode>()));
  EXPECT_FALSE(some.count(second.as<ForNode>()));
  Expr n = VarNode::make("n");
  Stmt unknown = ForNode::make(i, 0, n, ForKind::Unrolled, BufferStoreNode::make(c, i, {i}));
  EXPECT_TRUE(LoopsToUnroll(unknown).empty());
}

// A select chain of the unrolled loops' variables (a constant matrix read at
// constant indices) folds to one constant per copy, so it weighs as one, and
// so do the addresses of the loops that read it: a transform whose
// coefficients are such chains fits the budget.
TEST(UnrollBudgetTest, ExpressionsOfUnrolledVariablesWeighAsOneConstant) {
  Buffer a = MakeBuffer("A", f32, {64}), c = MakeBuffer("C", f32, {64});
  Expr i = VarNode::make("i"), j = VarNode::make("j"), outside = VarNode::make("k");
  auto transform = [&](const Expr& row) {
    Expr coef = FloatImmNode::make(f32, 0.0);
    for (int r = 0; r < 8; ++r) {
      for (int col = 0; col < 8; ++col) {
        Expr at = BinaryNode::make(BinOp::EQ, row, make_const(i32, r)) &&
                  BinaryNode::make(BinOp::EQ, j, make_const(i32, col));
        coef = SelectNode::make(at, FloatImmNode::make(f32, r - col), coef);
      }
    }
    Stmt store = BufferStoreNode::make(c, BufferLoadNode::make(a, {j}) * coef, {row * 8 + j});
    return For(j, 8, ForKind::Unrolled, store);
  };
  Stmt constant = For(i, 8, ForKind::Unrolled, transform(i));
  EXPECT_EQ(LoopsToUnroll(constant, 600, 600).size(), 2u);
  // The same chain of a variable no unrolled loop binds weighs in full.
  Stmt varying = For(i, 8, ForKind::Unrolled, transform(outside));
  EXPECT_TRUE(LoopsToUnroll(varying, 600, 600).empty());
  // A loop nest that reads no constant matrix counts its addresses in full:
  // its inner loop fits, the outer one's copies do not.
  Expr address = (((i * 8 + j) * 3 + outside) * 5 + outside * 7) * 2 + outside;
  Stmt plain = For(i, 8, ForKind::Unrolled,
                   For(j, 8, ForKind::Unrolled,
                       BufferStoreNode::make(c, BufferLoadNode::make(a, {address}) * 2.0f, {address})));
  auto chosen = LoopsToUnroll(plain, 600, 600);
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_TRUE(chosen.count(plain.as<ForNode>()->body.as<ForNode>()));
}

// The loops that read a constant matrix draw on a budget of their own: a
// kernel whose other loops spent theirs (Winograd's products, fused into the
// same kernel as its transforms) still copies its transforms out.
TEST(UnrollBudgetTest, ConstantMatrixLoopsHaveTheirOwnBudget) {
  Buffer a = MakeBuffer("A", f32, {64}), c = MakeBuffer("C", f32, {64});
  Expr i = VarNode::make("i"), j = VarNode::make("j"), k = VarNode::make("k");
  Stmt plain =
      For(k, 64, ForKind::Unrolled, BufferStoreNode::make(c, BufferLoadNode::make(a, {k}) * 2.0f, {k}));
  Expr coef = FloatImmNode::make(f32, 0.0);
  for (int r = 0; r < 8; ++r) {
    for (int col = 0; col < 8; ++col) {
      Expr at = BinaryNode::make(BinOp::EQ, i, make_const(i32, r)) &&
                BinaryNode::make(BinOp::EQ, j, make_const(i32, col));
      coef = SelectNode::make(at, FloatImmNode::make(f32, r + col + 1), coef);
    }
  }
  Stmt transform = For(i, 8, ForKind::Unrolled,
                       For(j, 8, ForKind::Unrolled,
                           BufferStoreNode::make(c, BufferLoadNode::make(a, {j}) * coef, {i * 8 + j})));
  Stmt kernel = SeqNode::make({plain, transform});
  // The plain loop's 63 copies do not fit 100; the transform's still fit its own 600.
  auto chosen = LoopsToUnroll(kernel, 100, 600);
  EXPECT_FALSE(chosen.count(plain.as<ForNode>()));
  EXPECT_TRUE(chosen.count(transform.as<ForNode>()));
  EXPECT_TRUE(chosen.count(transform.as<ForNode>()->body.as<ForNode>()));
  // And the other way round: a spent matrix budget leaves the plain loop its own.
  auto other = LoopsToUnroll(kernel, 1000, 0);
  EXPECT_TRUE(other.count(plain.as<ForNode>()));
  EXPECT_FALSE(other.count(transform.as<ForNode>()));
}

TEST_F(CodegenSemanticsTest, LoopsPastTheUnrollBudgetStayCorrect) {
  const int n = 300;
  Buffer c = MakeBuffer("C", i32, {n * n});
  Expr i = VarNode::make("i"), j = VarNode::make("j");
  Stmt store = BufferStoreNode::make(c, i - j, {i * n + j});
  Module m = Build({"big", {c}, For(i, n, ForKind::Unrolled, For(j, n, ForKind::Unrolled, store))},
                   Target::Parse("llvm"));
  std::vector<int32_t> cv(n * n);
  m.Call({ArgOf(cv, i32)});
  for (int x = 0; x < n; ++x)
    for (int y = 0; y < n; ++y) ASSERT_EQ(cv[x * n + y], x - y);
}

TEST(ThreadPoolForkTest, ForkedChildRunsParallelLoops) {
  std::vector<int> hits(100, 0);
  ThreadPool::Global().ParallelFor(100, 0, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) hits[k]++;
  });
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);  // a deadlock ends the child by SIGALRM instead of hanging the test
    std::vector<int> child_hits(100, 0);
    ThreadPool::Global().ParallelFor(100, 0, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) child_hits[k]++;
    });
    bool ok = true;
    for (int h : child_hits) ok &= h == 1;
    _exit(ok ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  for (int h : hits) EXPECT_EQ(h, 1);
}

TEST_F(CodegenSemanticsTest, DroppedCpuFeatures) {
  EXPECT_TRUE(Target::Parse("llvm").cpu.dropped.empty());
  // Whatever this host lacks of a Sapphire Rapids is named in LLVM's terms; a host with all of it loses
  // nothing.
  for (const std::string& f : Target::Parse("llvm -mcpu=sapphirerapids").cpu.dropped) {
    ASSERT_FALSE(f.empty());
    EXPECT_TRUE(f[0] != '+' && f[0] != '-' && f.find_first_of(", ") == std::string::npos) << f;
  }
  EXPECT_THROW(Target::Parse("llvm -mcpu=notacpu"), Error);
}

}  // namespace
}  // namespace autosched
