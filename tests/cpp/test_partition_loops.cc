// Loop partitioning: a guarded vectorized loop gets a guard-free SIMD main
// part and a guarded tail; other loops are left alone.
#include <gtest/gtest.h>

#include <numeric>

#include "codegen/build.h"
#include "lower/lower.h"
#include "lower/passes/flatten_storage.h"
#include "lower/passes/partition_loops.h"
#include "lower/passes/vectorize_loops.h"
#include "lower/stmt_functor.h"
#include "lower/stmt_printer.h"

namespace autosched {
namespace {

DataType f32 = DataType::Float(32);

Stmt Loop(const Expr& v, int min, int extent, ForKind kind, Stmt body) {
  return ForNode::make(v, min, extent, kind, body);
}

int CountGuards(const Stmt& s) {
  int n = 0;
  PostOrderVisitStmt(s, [&](const Stmt& x) { n += x.as<IfThenElseNode>() != nullptr; });
  return n;
}

int CountRamps(const Stmt& s) {
  int n = 0;
  VisitStmtExprs(
      s, [&](const Expr& e) { PostOrderVisit(e, [&](const Expr& x) { n += x.as<RampNode>() != nullptr; }); });
  return n;
}

// C[i, j.0*16 + j.1] = A[i, ...] * 2 for j < cols, j.1 vectorized: the nest
// lowering makes for a split of cols by 16 that does not divide.
struct GuardedNest {
  static constexpr int kRows = 3;
  int cols;
  Buffer a, c;
  Expr i = VarNode::make("i"), jo = VarNode::make("j.0"), ji = VarNode::make("j.1");

  explicit GuardedNest(int cols_)
      : cols(cols_), a(MakeBuffer("A", f32, {kRows, cols_})), c(MakeBuffer("C", f32, {kRows, cols_})) {}

  Stmt Make(ForKind outer, Expr guard) const {
    Expr j = jo * 16 + ji;
    Stmt store = BufferStoreNode::make(c, BufferLoadNode::make(a, {i, j}) * 2.0f, {i, j});
    int tiles = (cols + 15) / 16;
    return Loop(i, 0, kRows, outer,
                Loop(jo, 0, tiles, ForKind::Serial,
                     Loop(ji, 0, 16, ForKind::Vectorized, IfThenElseNode::make(guard, store))));
  }
  Stmt Make(ForKind outer = ForKind::Serial) const { return Make(outer, jo * 16 + ji < cols); }
};

TEST(PartitionLoopsTest, GuardedVectorLoopSplitsIntoSimdMainAndGuardedTail) {
  GuardedNest nest(41);
  Stmt partitioned = PartitionLoops(nest.Make());
  // for i { for (j.0, 0, 2) { vectorized, no guard }; for (j.0, 2, 1) { guarded } }
  const auto* outer = partitioned.as<ForNode>();
  ASSERT_NE(outer, nullptr) << partitioned;
  const auto* parts = outer->body.as<SeqNode>();
  ASSERT_NE(parts, nullptr) << partitioned;
  ASSERT_EQ(parts->seq.size(), 2u);
  const auto *main = parts->seq[0].as<ForNode>(), *tail = parts->seq[1].as<ForNode>();
  ASSERT_TRUE(main && tail);
  int64_t main_min = -1, main_extent = -1, tail_min = -1, tail_extent = -1;
  ASSERT_TRUE(GetConstInt(main->min, &main_min) && GetConstInt(main->extent, &main_extent));
  ASSERT_TRUE(GetConstInt(tail->min, &tail_min) && GetConstInt(tail->extent, &tail_extent));
  EXPECT_EQ(main_min, 0);
  EXPECT_EQ(main_extent, 2);
  EXPECT_EQ(tail_min, 2);
  EXPECT_EQ(tail_extent, 1);
  EXPECT_EQ(CountGuards(parts->seq[0]), 0) << partitioned;
  EXPECT_EQ(CountGuards(parts->seq[1]), 1) << partitioned;
  // Both become SIMD: the main part plainly, the tail under a lane mask.
  EXPECT_GT(CountRamps(VectorizeLoops(FlattenStorage(parts->seq[0]))), 0);
  Stmt tail_vector = VectorizeLoops(FlattenStorage(parts->seq[1]));
  EXPECT_GT(CountRamps(tail_vector), 0);
  int masked_stores = 0;
  PostOrderVisitStmt(tail_vector, [&](const Stmt& x) {
    const auto* branch = x.as<IfThenElseNode>();
    masked_stores += branch && branch->condition.dtype().lanes > 1;
  });
  EXPECT_EQ(masked_stores, 1) << tail_vector;
}

TEST(PartitionLoopsTest, PartitionedParallelNestComputesTheSameResult) {
  for (int cols : {41, 37, 16, 9}) {
    GuardedNest nest(cols);
    LoweredFunc lowered = RunLoweringPasses({"part", {nest.a, nest.c}, nest.Make(ForKind::Parallel)});
    if (cols > 16) EXPECT_GT(CountRamps(lowered.body), 0) << ToString(lowered);
    if (!HasLLVMBackend()) continue;
    int size = GuardedNest::kRows * cols;
    std::vector<float> av(size), cv(size, -1.0f);
    std::iota(av.begin(), av.end(), 1.0f);
    Module m = Build(lowered, Target::Parse("llvm"));
    m.Call({CallArg{av.data(), f32, {GuardedNest::kRows, cols}, true},
            CallArg{cv.data(), f32, {GuardedNest::kRows, cols}, true}});
    for (int x = 0; x < size; ++x) ASSERT_FLOAT_EQ(cv[x], av[x] * 2.0f) << "cols " << cols << " at " << x;
  }
}

TEST(PartitionLoopsTest, LoopWithoutGuardsIsUntouched) {
  GuardedNest nest(32);
  Expr j = nest.jo * 16 + nest.ji;
  Stmt store = BufferStoreNode::make(nest.c, BufferLoadNode::make(nest.a, {nest.i, j}), {nest.i, j});
  Stmt s = Loop(nest.jo, 0, 2, ForKind::Serial, Loop(nest.ji, 0, 16, ForKind::Vectorized, store));
  EXPECT_TRUE(PartitionLoops(s).same_as(s));
}

TEST(PartitionLoopsTest, LoopAllocatingASharedBufferIsUntouched) {
  // Its parts would each declare the group's __local buffer (OpenCL C
  // declares them once per kernel); a private buffer does not stop it.
  GuardedNest nest(41);
  Expr j = nest.jo * 16 + nest.ji;
  Stmt store = BufferStoreNode::make(nest.c, BufferLoadNode::make(nest.a, {nest.i, j}), {nest.i, j});
  Stmt inner = Loop(nest.ji, 0, 16, ForKind::Vectorized, IfThenElseNode::make(j < 41, store));
  for (MemScope scope : {MemScope::Shared, MemScope::Local}) {
    Stmt s =
        Loop(nest.jo, 0, 3, ForKind::Serial, AllocateNode::make(MakeBuffer("S", f32, {16}, scope), inner));
    EXPECT_EQ(PartitionLoops(s).same_as(s), scope == MemScope::Shared) << PartitionLoops(s);
  }
}

TEST(PartitionLoopsTest, GuardNotDependingOnTheLoopIsUntouched) {
  GuardedNest nest(48);
  Expr n = VarNode::make("n");
  // The guard depends on the vectorized variable and a free size only.
  Stmt on_free_size = nest.Make(ForKind::Serial, nest.ji < n);
  EXPECT_TRUE(PartitionLoops(on_free_size).same_as(on_free_size));
  // Unprovable on every tile: a guard on a free size through j.0 as well.
  Stmt unprovable = nest.Make(ForKind::Serial, nest.jo * 16 + nest.ji < n);
  EXPECT_TRUE(PartitionLoops(unprovable).same_as(unprovable));
}

TEST(PartitionLoopsTest, GuardOutsideAnyVectorLoopIsUntouched) {
  GuardedNest nest(41);
  Expr j = nest.jo * 16 + nest.ji;
  Stmt store = BufferStoreNode::make(nest.c, Expr(0.0f), {nest.i, j});
  Stmt s = Loop(nest.jo, 0, 3, ForKind::Serial,
                Loop(nest.ji, 0, 16, ForKind::Serial, IfThenElseNode::make(j < 41, store)));
  EXPECT_TRUE(PartitionLoops(s).same_as(s));
}

TEST(PartitionLoopsTest, OnlyProvenComparisonsAreRemoved) {
  GuardedNest nest(41);
  Expr n = VarNode::make("n");
  // Two comparisons: the one on the tile is proven in the main part, the one
  // on the free size n stays (it does not use j.0).
  Stmt s = nest.Make(ForKind::Serial, nest.jo * 16 + nest.ji < 41 && nest.i < n);
  Stmt partitioned = PartitionLoops(s);
  const auto* parts = partitioned.as<ForNode>()->body.as<SeqNode>();
  ASSERT_NE(parts, nullptr) << partitioned;
  std::string main = ToString(parts->seq[0]);
  EXPECT_EQ(CountGuards(parts->seq[0]), 1) << main;
  EXPECT_EQ(main.find("41"), std::string::npos) << main;
  EXPECT_NE(main.find("< n"), std::string::npos) << main;
}

// C[i.0*4 + i.1, j.0*16 + j.1] = A[...] * 2 with the row and column tiles
// fused into one parallel loop f = i.0*tiles_j + j.0 (as a fused parallel
// outer loop of a matmul): the guard-free tiles are not a prefix of f.
struct FusedTileNest {
  int rows, cols, tiles_i, tiles_j;
  Buffer a, c;
  Expr f = VarNode::make("f"), ii = VarNode::make("i.1"), ji = VarNode::make("j.1");

  FusedTileNest(int rows_, int cols_)
      : rows(rows_),
        cols(cols_),
        tiles_i((rows_ + 3) / 4),
        tiles_j((cols_ + 15) / 16),
        a(MakeBuffer("A", f32, {rows_, cols_})),
        c(MakeBuffer("C", f32, {rows_, cols_})) {}

  Stmt Make() const {
    Expr i = floordiv(f, tiles_j) * 4 + ii, j = floormod(f, tiles_j) * 16 + ji;
    Stmt store = BufferStoreNode::make(c, BufferLoadNode::make(a, {i, j}) * 2.0f, {i, j});
    Stmt guarded = IfThenElseNode::make(i < rows && j < cols, store);
    return Loop(f, 0, tiles_i * tiles_j, ForKind::Parallel,
                Loop(ii, 0, 4, ForKind::Unrolled, Loop(ji, 0, 16, ForKind::Vectorized, guarded)));
  }
};

TEST(PartitionLoopsTest, FusedTileLoopIsVersionedOnItsEdges) {
  FusedTileNest nest(7, 41);
  std::string text = ToString(PartitionLoops(nest.Make()));
  // Versions: both comparisons hoisted, then only the column one (the
  // vectorized variable's), then the original guarded body.
  int else_branches = 0;
  PostOrderVisitStmt(PartitionLoops(nest.Make()), [&](const Stmt& x) {
    const auto* branch = x.as<IfThenElseNode>();
    else_branches += branch && branch->else_case.defined();
  });
  EXPECT_EQ(else_branches, 2) << text;
  // Most of the work is SIMD: the lowered function has vector stores.
  LoweredFunc lowered = RunLoweringPasses({"fused", {nest.a, nest.c}, nest.Make()});
  EXPECT_GT(CountRamps(lowered.body), 0) << ToString(lowered);
}

TEST(PartitionLoopsTest, VersionedFusedTileLoopComputesTheSameResult) {
  for (auto [rows, cols] : std::vector<std::pair<int, int>>{{7, 41}, {8, 32}, {1, 17}, {13, 16}, {5, 3}}) {
    FusedTileNest nest(rows, cols);
    LoweredFunc lowered = RunLoweringPasses({"fused", {nest.a, nest.c}, nest.Make()});
    if (!HasLLVMBackend()) continue;
    int size = rows * cols;
    std::vector<float> av(size), cv(size, -1.0f);
    std::iota(av.begin(), av.end(), 1.0f);
    Module m = Build(lowered, Target::Parse("llvm"));
    m.Call({CallArg{av.data(), f32, {rows, cols}, true}, CallArg{cv.data(), f32, {rows, cols}, true}});
    for (int x = 0; x < size; ++x) {
      ASSERT_FLOAT_EQ(cv[x], av[x] * 2.0f) << rows << "x" << cols << " at " << x << "\n" << ToString(lowered);
    }
  }
}

TEST(PartitionLoopsTest, GuardOnAFreeSizeIsNotHoisted) {
  // A test on n at run time is not what the pass is for: the body stays.
  FusedTileNest nest(8, 32);
  Expr n = VarNode::make("n");
  Expr j = floormod(nest.f, nest.tiles_j) * 16 + nest.ji;
  Stmt store = BufferStoreNode::make(nest.c, Expr(0.0f), {nest.ii, j});
  Stmt s = Loop(nest.f, 0, 4, ForKind::Parallel,
                Loop(nest.ji, 0, 16, ForKind::Vectorized, IfThenElseNode::make(j < n, store)));
  EXPECT_TRUE(PartitionLoops(s).same_as(s)) << PartitionLoops(s);
}

TEST(PartitionLoopsTest, NoVersioningInGpuKernelsOrWhenOff) {
  // Work items of a group would branch apart on the versions; OpenCL code
  // asks for none (versioning=false).
  FusedTileNest nest(7, 41);
  auto versions = [](const Stmt& s) {
    int n = 0;
    PostOrderVisitStmt(s, [&](const Stmt& x) {
      const auto* branch = x.as<IfThenElseNode>();
      n += branch && branch->else_case.defined();
    });
    return n;
  };
  EXPECT_EQ(versions(PartitionLoops(nest.Make(), /*versioning=*/false)), 0);
  Expr tx = VarNode::make("threadIdx.x");
  EXPECT_EQ(versions(PartitionLoops(Loop(tx, 0, 4, ForKind::ThreadIdxX, nest.Make()))), 0);
  EXPECT_EQ(versions(PartitionLoops(nest.Make())), 2);
}

}  // namespace
}  // namespace autosched
