// Bound inference of stages computed at fused loops: the region of a producer
// is the tile its reader touches per iteration, even when the reader's axes
// are floordiv / floormod of a fused loop variable.
#include <gtest/gtest.h>

#include "lower/stmt_printer.h"
#include "schedule/infer_bound.h"
#include "schedule_test_util.h"

namespace autosched {
namespace {

using sched_test::Axis;
using sched_test::ExpectMatchesReference;
using sched_test::MatmulRelu;

constexpr int kC = 2, kE = 3;

struct CachedMatmul {
  State state;
  int local = -1;
  int c = -1;
};

// cache_write of C; C tiled by (ti, tj), the two outer tile loops fused and
// made parallel: C's loops are [i.0@j.0, i.1, j.1].
CachedMatmul FusedTiles(int64_t n, int64_t m, int64_t k, int64_t ti, int64_t tj) {
  State s(MatmulRelu(n, m, k));
  s = s.Apply(CacheWriteStep{kC, "local"});
  const int local = s.StageIndex("C.local"), c = s.StageIndex("C");
  s = s.Split(c, 0, {ti});  // i.0 i.1 j
  s = s.Split(c, 2, {tj});  // i.0 i.1 j.0 j.1
  s = s.Reorder(c, {0, 2, 1, 3});
  s = s.Fuse(c, {0, 1});
  s = s.Annotate(c, 0, IteratorAnnotation::Parallel);
  return {s, local, c};
}

std::vector<int64_t> Extents(const State& s, int stage) {
  std::vector<int64_t> out;
  for (const Iterator& it : s.stage(stage).iters()) out.push_back(it.extent);
  return out;
}

TEST(ScheduleBounds, CacheWriteAtFusedParallelLoopIsOneTile) {
  CachedMatmul m = FusedTiles(64, 64, 16, 8, 8);
  State s = m.state.ComputeAt(m.local, m.c, 0);
  BoundInfo info = InferBoundDetailed(s);
  EXPECT_EQ(Extents(info.state, m.local), (std::vector<int64_t>{8, 8, 16}));
  const StageBound& b = info.stages[m.local];
  EXPECT_TRUE(b.narrowed);
  EXPECT_EQ(b.region_extent, (std::vector<int64_t>{8, 8}));
  int64_t start = 0;
  EXPECT_FALSE(GetConstInt(b.region_min[0], &start));  // symbolic: follows the fused loop
  EXPECT_FALSE(GetConstInt(b.region_min[1], &start));
  // The local buffer is allocated per tile.
  const std::string text = ToString(LowerStateToStmt(s).body);
  EXPECT_NE(text.find("allocate C.local: float32[8, 8]"), std::string::npos) << text;
  ExpectMatchesReference(s);
}

TEST(ScheduleBounds, CacheWriteInsideFusedLoopIsOneRow) {
  CachedMatmul m = FusedTiles(16, 24, 5, 4, 8);
  State s = m.state.ComputeAt(m.local, m.c, 1);  // at i.1
  EXPECT_EQ(Extents(InferBound(s), m.local), (std::vector<int64_t>{1, 8, 5}));
  ExpectMatchesReference(s);
}

TEST(ScheduleBounds, NonDividingTilesKeepTheTileShape) {
  CachedMatmul m = FusedTiles(10, 9, 5, 4, 4);  // 3 x 3 tiles, the last ones partial
  State s = m.state.ComputeAt(m.local, m.c, 0);
  EXPECT_EQ(Extents(InferBound(s), m.local), (std::vector<int64_t>{4, 4, 5}));
  ExpectMatchesReference(s);  // the interpreter rejects any access outside the local buffer
  ExpectMatchesReference(m.state.ComputeAt(m.local, m.c, 1), 2);
}

TEST(ScheduleBounds, SplitOfFusedLoopSeparatesAfterSimplify) {
  // i.0@j.0 split by j.0's extent: i.0 = floordiv(f.0 * 8 + f.1, 8) = f.0.
  CachedMatmul m = FusedTiles(32, 64, 4, 4, 8);
  State s = m.state.Split(m.c, 0, {8});  // f.0 f.1 i.1 j.1
  s = s.ComputeAt(m.local, m.c, 0);
  EXPECT_EQ(Extents(InferBound(s), m.local), (std::vector<int64_t>{4, 64, 4}));
  ExpectMatchesReference(s);
}

TEST(ScheduleBounds, MixedTermFallsBackToTheWholeTensor) {
  // floordiv(f.0 * 3 + f.1, 8) cannot be split into outer and inner terms.
  CachedMatmul m = FusedTiles(16, 64, 4, 4, 8);
  State s = m.state.Split(m.c, 0, {3});
  s = s.ComputeAt(m.local, m.c, 0);
  BoundInfo info = InferBoundDetailed(s);
  EXPECT_EQ(Extents(info.state, m.local), (std::vector<int64_t>{16, 64, 4}));
  EXPECT_FALSE(info.stages[m.local].narrowed);
  ExpectMatchesReference(s);
}

TEST(ScheduleBounds, ElementwiseProducerAtFusedLoop) {
  // E (C + 1) attached at D's fused tile loop; C at E's only loop.
  State s(MatmulRelu(12, 10, 3));
  const int d = 4;
  s = s.Split(d, 0, {4});
  s = s.Split(d, 2, {5});
  s = s.Reorder(d, {0, 2, 1, 3});
  s = s.Fuse(d, {0, 1});
  s = s.ComputeAt(kE, d, 0);
  s = s.ComputeAt(kC, kE, 0);
  State bounded = InferBound(s);
  EXPECT_EQ(Extents(bounded, kE), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(Extents(bounded, kC), (std::vector<int64_t>{1, 5, 3}));
  ExpectMatchesReference(s);
}

// P = 2 * A on (n+1) x (m+1); Q[i, j] = P[i, j] + P[i + 1, j] + P[i, j + 1].
ComputeDAG Stencil(int64_t n, int64_t m) {
  const DataType f32 = DataType::Float(32);
  Tensor a = placeholder({n + 1, m + 1}, f32, "A");
  IterVar pi = Axis("i", n + 1), pj = Axis("j", m + 1);
  Tensor p = compute("P", {pi, pj}, a({pi.var, pj.var}) * Expr(2.0f));
  IterVar i = Axis("i", n), j = Axis("j", m);
  Tensor q =
      compute("Q", {i, j}, p({i.var, j.var}) + p({i.var + Expr(1), j.var}) + p({i.var, j.var + Expr(1)}));
  return ComputeDAG({a, q});
}

TEST(ScheduleBounds, ShiftedReadsShareOneTileWithHalo) {
  State s(Stencil(12, 15));
  const int p = 1, q = 2;
  s = s.Split(q, 0, {4});
  s = s.Split(q, 2, {5});
  s = s.Reorder(q, {0, 2, 1, 3});
  s = s.Fuse(q, {0, 1});
  s = s.Annotate(q, 0, IteratorAnnotation::Parallel);
  s = s.ComputeAt(p, q, 0);
  BoundInfo info = InferBoundDetailed(s);
  EXPECT_EQ(Extents(info.state, p), (std::vector<int64_t>{5, 6}));
  EXPECT_TRUE(info.stages[p].narrowed);
  ExpectMatchesReference(s);
  // Non-dividing tiles: the halo of the last tile stays inside P.
  State odd(Stencil(10, 7));
  odd = odd.Split(q, 0, {4});
  odd = odd.Split(q, 2, {3});
  odd = odd.Reorder(q, {0, 2, 1, 3});
  odd = odd.Fuse(q, {0, 1});
  odd = odd.ComputeAt(p, q, 0);
  EXPECT_EQ(Extents(InferBound(odd), p), (std::vector<int64_t>{5, 4}));
  ExpectMatchesReference(odd);
}

TEST(ScheduleBounds, DataDependentIndexUsesTheWholeTensor) {
  // Out[i] = P[idx[i]]: with P inside the innermost loop the read index depends
  // only on outer loops, but on data too, so it cannot start a region.
  const DataType f32 = DataType::Float(32);
  Tensor a = placeholder({9}, f32, "A");
  Tensor idx = placeholder({6}, DataType::Int(32), "idx");
  IterVar pi = Axis("i", 9);
  Tensor p = compute("P", {pi}, a({pi.var}) * Expr(2.0f));
  IterVar i = Axis("i", 6);
  Tensor out = compute("Out", {i}, p({idx({i.var})}));
  State s(ComputeDAG({a, idx, out}));
  const int ps = s.StageIndex("P"), os = s.StageIndex("Out");
  s = s.Split(os, 0, {4});
  s = s.ComputeAt(ps, os, 1);
  BoundInfo info = InferBoundDetailed(s);
  int64_t start = -1;
  EXPECT_TRUE(GetConstInt(info.stages[ps].region_min[0], &start));
  EXPECT_EQ(start, 0);
  EXPECT_EQ(info.stages[ps].region_extent[0], 9);
}

}  // namespace
}  // namespace autosched
