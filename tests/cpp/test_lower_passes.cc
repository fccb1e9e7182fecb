// Lowering passes on hand-built loop nests: structure of the result, and the
// built code compared against plain C++ loops.
#include <gtest/gtest.h>

#include <numeric>
#include <sstream>

#include "codegen/build.h"
#include "lower/lower.h"
#include "lower/passes/auto_unroll.h"
#include "lower/passes/eliminate_guards.h"
#include "lower/passes/simplify_stmt.h"
#include "lower/stmt_functor.h"
#include "lower/stmt_printer.h"

namespace autosched {
namespace {

DataType f32 = DataType::Float(32);

Stmt Loop(const Expr& v, int extent, ForKind kind, Stmt body) {
  return ForNode::make(v, 0, extent, kind, body);
}

int CountLoops(const Stmt& s, ForKind kind) {
  int n = 0;
  PostOrderVisitStmt(s, [&](const Stmt& x) {
    if (const auto* f = x.as<ForNode>(); f && f->for_kind == kind) ++n;
  });
  return n;
}

int CountRamps(const Stmt& s) {
  int n = 0;
  VisitStmtExprs(
      s, [&](const Expr& e) { PostOrderVisit(e, [&](const Expr& x) { n += x.as<RampNode>() != nullptr; }); });
  return n;
}

CallArg Arg(std::vector<float>& v, std::vector<int64_t> shape) { return CallArg{v.data(), f32, shape, true}; }

TEST(LowerPassesTest, VectorizedLoopBecomesRampCode) {
  const int rows = 5, cols = 32;
  Buffer a = MakeBuffer("A", f32, {rows, cols}), b = MakeBuffer("B", f32, {cols}),
         c = MakeBuffer("C", f32, {rows, cols});
  Expr i = VarNode::make("i"), jo = VarNode::make("j.o"), ji = VarNode::make("j.i");
  Expr j = jo * 16 + ji;
  Stmt store =
      BufferStoreNode::make(c, BufferLoadNode::make(a, {i, j}) * BufferLoadNode::make(b, {j}) + 1.0f, {i, j});
  LoweredFunc f{"vec",
                {a, b, c},
                Loop(i, rows, ForKind::Parallel,
                     Loop(jo, 2, ForKind::Serial, Loop(ji, 16, ForKind::Vectorized, store)))};
  LoweredFunc lowered = RunLoweringPasses(f);
  EXPECT_EQ(CountLoops(lowered.body, ForKind::Vectorized), 0) << ToString(lowered);
  EXPECT_GE(CountRamps(lowered.body), 3) << ToString(lowered);
  if (!HasLLVMBackend()) return;
  Module m = Build(lowered, Target::Parse("llvm"));
  std::vector<float> av(rows * cols), bv(cols), cv(rows * cols);
  std::iota(av.begin(), av.end(), 1.0f);
  std::iota(bv.begin(), bv.end(), -3.0f);
  m.Call({Arg(av, {rows, cols}), Arg(bv, {cols}), Arg(cv, {rows, cols})});
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < cols; ++k) EXPECT_FLOAT_EQ(cv[r * cols + k], av[r * cols + k] * bv[k] + 1.0f);
}

TEST(LowerPassesTest, ReductionOverVectorizedLoopFallsBack) {
  const int rows = 3, red = 8;
  Buffer a = MakeBuffer("A", f32, {rows, red}), c = MakeBuffer("C", f32, {rows});
  Expr i = VarNode::make("i"), k = VarNode::make("k");
  Stmt init = BufferStoreNode::make(c, Expr(0.0f), {i});
  Stmt update = BufferStoreNode::make(c, BufferLoadNode::make(c, {i}) + BufferLoadNode::make(a, {i, k}), {i});
  LoweredFunc f{
      "red",
      {a, c},
      Loop(i, rows, ForKind::Serial, SeqNode::make({init, Loop(k, red, ForKind::Vectorized, update)}))};
  LoweredFunc lowered = RunLoweringPasses(f);
  EXPECT_EQ(CountLoops(lowered.body, ForKind::Vectorized), 0);
  EXPECT_EQ(CountLoops(lowered.body, ForKind::Unrolled), 1) << ToString(lowered);
  EXPECT_EQ(CountRamps(lowered.body), 0);
  if (!HasLLVMBackend()) return;
  std::vector<float> av(rows * red), cv(rows, -1);
  std::iota(av.begin(), av.end(), 0.5f);
  Build(lowered, Target::Parse("llvm")).Call({Arg(av, {rows, red}), Arg(cv, {rows})});
  for (int r = 0; r < rows; ++r) {
    float sum = 0;
    for (int x = 0; x < red; ++x) sum += av[r * red + x];
    EXPECT_FLOAT_EQ(cv[r], sum);
  }
}

TEST(LowerPassesTest, LaneDependenceIsNotVectorized) {
  Buffer a = MakeBuffer("A", f32, {17});
  Expr i = VarNode::make("i");
  // A[i + 1] = A[i] * 2: each lane reads what the previous one wrote.
  Stmt body = BufferStoreNode::make(a, BufferLoadNode::make(a, {i}) * 2.0f, {i + 1});
  LoweredFunc lowered = RunLoweringPasses({"dep", {a}, Loop(i, 16, ForKind::Vectorized, body)});
  EXPECT_EQ(CountRamps(lowered.body), 0) << ToString(lowered);
  if (!HasLLVMBackend()) return;
  std::vector<float> av(17, 1.0f);
  Build(lowered, Target::Parse("llvm")).Call({Arg(av, {17})});
  EXPECT_FLOAT_EQ(av[16], 65536.0f);
}

TEST(LowerPassesTest, GuardsGoWhereTheSplitDivides) {
  Buffer c = MakeBuffer("C", f32, {32});
  Expr io = VarNode::make("i.o"), ii = VarNode::make("i.i");
  auto nest = [&](int bound) {
    Stmt store = BufferStoreNode::make(c, Expr(1.0f), {io * 8 + ii});
    return Loop(io, 4, ForKind::Serial,
                Loop(ii, 8, ForKind::Serial, IfThenElseNode::make(io * 8 + ii < bound, store)));
  };
  auto count_ifs = [](const Stmt& s) {
    int n = 0;
    PostOrderVisitStmt(s, [&](const Stmt& x) { n += x.as<IfThenElseNode>() != nullptr; });
    return n;
  };
  EXPECT_EQ(count_ifs(EliminateGuards(nest(32))), 0);
  EXPECT_EQ(count_ifs(EliminateGuards(nest(30))), 1);
}

TEST(LowerPassesTest, AutoUnrollRespectsMaxStep) {
  Buffer c = MakeBuffer("C", f32, {4, 4});
  Expr i = VarNode::make("i"), j = VarNode::make("j");
  Stmt nest =
      Loop(i, 4, ForKind::Serial, Loop(j, 4, ForKind::Serial, BufferStoreNode::make(c, Expr(0.0f), {i, j})));
  Stmt all = AutoUnroll(PragmaNode::make("auto_unroll_max_step", 16, nest));
  EXPECT_EQ(CountLoops(all, ForKind::Unrolled), 2);
  EXPECT_EQ(all.as<PragmaNode>(), nullptr);
  Stmt inner = AutoUnroll(PragmaNode::make("auto_unroll_max_step", 8, nest));
  EXPECT_EQ(CountLoops(inner, ForKind::Unrolled), 1);
  EXPECT_EQ(inner.as<ForNode>()->for_kind, ForKind::Serial);
  EXPECT_EQ(CountLoops(AutoUnroll(nest), ForKind::Unrolled), 0);
}

TEST(LowerPassesTest, NestedUnitLoopsReadTheirValuesEverywhere) {
  // for i < 3: for u in [i + 1]: for v in [2u]: for k < v - u: C[i, k] = v + k.
  // Each unit loop's value reaches the inner loop's bounds and the store,
  // also where one unit loop's value depends on another's.
  const int rows = 3, cols = 4;
  Buffer c = MakeBuffer("C", f32, {rows, cols});
  Expr i = VarNode::make("i"), u = VarNode::make("u"), v = VarNode::make("v"), k = VarNode::make("k");
  Stmt store = BufferStoreNode::make(c, CastNode::make(f32, v + k), {i, k});
  Stmt nest = Loop(i, rows, ForKind::Serial,
                   ForNode::make(u, i + 1, 1, ForKind::Serial,
                                 ForNode::make(v, u * 2, 1, ForKind::Serial,
                                               ForNode::make(k, 0, v - u, ForKind::Serial, store))));
  Stmt simplified = SimplifyStmt(nest);
  EXPECT_FALSE(StmtUsesVar(simplified, u.as<VarNode>())) << ToString(simplified);
  EXPECT_FALSE(StmtUsesVar(simplified, v.as<VarNode>())) << ToString(simplified);
  EXPECT_EQ(CountLoops(simplified, ForKind::Serial), 2) << ToString(simplified);
  if (!HasLLVMBackend()) return;
  LoweredFunc lowered = RunLoweringPasses(LoweredFunc{"unit_loops", {c}, nest});
  std::vector<float> cv(rows * cols, -1);
  Build(lowered, Target::Parse("llvm")).Call({Arg(cv, {rows, cols})});
  for (int r = 0; r < rows; ++r) {
    for (int col = 0; col < cols; ++col) {
      const float want = col < r + 1 ? static_cast<float>(2 * (r + 1) + col) : -1.0f;
      EXPECT_FLOAT_EQ(cv[r * cols + col], want) << "C[" << r << ", " << col << "]";
    }
  }
}

TEST(LowerPassesTest, FlatteningHonoursStridesAndUnitLoopsVanish) {
  const int rows = 3, cols = 5, pitch = 8;
  Buffer a = MakeBuffer("A", f32, {rows, cols}),
         c = MakeBuffer("C", f32, {rows, cols}, MemScope::Global, {pitch, 1});
  Expr i = VarNode::make("i"), j = VarNode::make("j"), u = VarNode::make("u");
  Stmt store = BufferStoreNode::make(c, BufferLoadNode::make(a, {i, j + u}) * 2.0f, {i, j + u});
  LoweredFunc f{
      "strided",
      {a, c},
      Loop(i, rows, ForKind::Serial, Loop(j, cols, ForKind::Serial, Loop(u, 1, ForKind::Serial, store)))};
  std::ostringstream log;
  LoweredFunc lowered = RunLoweringPasses(f, {&log});
  EXPECT_NE(log.str().find("after storage flattening"), std::string::npos);
  EXPECT_EQ(CountLoops(lowered.body, ForKind::Serial), 2) << ToString(lowered);
  PostOrderVisitStmt(lowered.body, [](const Stmt& s) {
    if (const auto* st = s.as<BufferStoreNode>()) EXPECT_EQ(st->indices.size(), 1u);
  });
  if (!HasLLVMBackend()) return;
  // The kernel writes with the padded row pitch; the module's C argument is
  // the compact shape, so call the kernel through a pitch-sized buffer.
  std::vector<float> av(rows * cols), cv(rows * pitch, -1);
  std::iota(av.begin(), av.end(), 0.0f);
  Build(lowered, Target::Parse("llvm")).Call({Arg(av, {rows, cols}), Arg(cv, {rows, cols})});
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < cols; ++k) EXPECT_FLOAT_EQ(cv[r * pitch + k], av[r * cols + k] * 2);
  EXPECT_FLOAT_EQ(cv[cols], -1);  // padding untouched
}

}  // namespace
}  // namespace autosched

namespace autosched {
namespace {

TEST(LowerPassesTest, PackedLayoutIndexStaysContiguous) {
  // C[j] = A[floordiv(j, 32) * 40 + floormod(j, 32)] with j = jo * 16 + ji, ji vectorized.
  Buffer a = MakeBuffer("A", f32, {160}), c = MakeBuffer("C", f32, {128});
  Expr jo = VarNode::make("jo"), ji = VarNode::make("ji");
  Expr j = jo * 16 + ji;
  Expr src = floordiv(j, Expr(32)) * 40 + floormod(j, Expr(32));
  Stmt store = BufferStoreNode::make(c, BufferLoadNode::make(a, {src}), {j});
  LoweredFunc lowered = RunLoweringPasses(
      {"packed", {a, c}, Loop(jo, 8, ForKind::Serial, Loop(ji, 16, ForKind::Vectorized, store))});
  VisitStmtExprs(lowered.body, [&](const Expr& e) {
    PostOrderVisit(e, [&](const Expr& x) {
      if (const auto* load = x.as<BufferLoadNode>()) {
        EXPECT_NE(load->indices[0].as<RampNode>(), nullptr) << ToString(lowered);
      }
    });
  });
  if (!HasLLVMBackend()) return;
  std::vector<float> av(160), cv(128);
  std::iota(av.begin(), av.end(), 0.0f);
  Build(lowered, Target::Parse("llvm")).Call({Arg(av, {160}), Arg(cv, {128})});
  for (int x = 0; x < 128; ++x) EXPECT_FLOAT_EQ(cv[x], av[(x / 32) * 40 + x % 32]);
}

TEST(StmtFunctorTest, SubstituteRewriteAndVisit) {
  Buffer c = MakeBuffer("C", f32, {8});
  Expr i = VarNode::make("i"), n = VarNode::make("n");
  Stmt s = Loop(i, 8, ForKind::Serial, BufferStoreNode::make(c, cast(f32, n), {i}));
  EXPECT_TRUE(StmtUsesVar(s, n.as<VarNode>()));
  Stmt t = SubstituteStmt(s, {{n.as<VarNode>(), Expr(3)}});
  EXPECT_FALSE(StmtUsesVar(t, n.as<VarNode>()));
  EXPECT_TRUE(SubstituteStmt(s, {}).same_as(s));
  Stmt parallel = RewriteStmt(t, [](const Stmt& x) -> Stmt {
    const auto* f = x.as<ForNode>();
    return f ? ForNode::make(f->loop_var, f->min, f->extent, ForKind::Parallel, f->body) : Stmt();
  });
  EXPECT_EQ(CountLoops(parallel, ForKind::Parallel), 1);
  int stores = 0;
  PostOrderVisitStmt(parallel, [&](const Stmt& x) { stores += x.as<BufferStoreNode>() != nullptr; });
  EXPECT_EQ(stores, 1);
  EXPECT_NE(ToString(parallel).find("parallel for (i, 0, 8)"), std::string::npos) << ToString(parallel);
}

}  // namespace
}  // namespace autosched
