// Sketch rules one by one (condition and apply) and whole sketch generation
// on a matmul, matmul + element-wise consumers, reductions, an element-wise
// op and a read of a constant tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "schedule_test_util.h"
#include "search/rules/search_util.h"
#include "search/sketch_policy.h"
#include "test_util.h"

namespace autosched {
namespace {

using Condition = SketchRule::Condition;
using sched_test::Axis;
using sched_test::MakeTask;
using sched_test::Matmul;
using sched_test::MatmulRelu;
using sched_test::RowSum;

const DataType kF32 = DataType::Float(32);

// [X, Y] with T = X + 1 (inlineable) and Y = T * 2 (the output).
ComputeDAG ElementWise(int64_t n, int64_t m) {
  Tensor x = placeholder({n, m}, kF32, "X");
  IterVar i = Axis("i", n), j = Axis("j", m);
  Tensor t = compute("T", {i, j}, x({i.var, j.var}) + Expr(1.0f));
  IterVar i2 = Axis("i", n), j2 = Axis("j", m);
  return ComputeDAG({x, compute("Y", {i2, j2}, t({i2.var, j2.var}) * Expr(2.0f))});
}

int CountSteps(const State& s, const char* record_name) {
  return static_cast<int>(std::count_if(s.steps().begin(), s.steps().end(), [&](const Step& step) {
    return std::string(StepRecordName(step)) == record_name;
  }));
}

std::vector<std::string> IterNames(const Stage& st) {
  std::vector<std::string> names;
  for (int i = 0; i < st.num_iters(); ++i) names.push_back(st.iter(i).name);
  return names;
}

TEST(SketchRules, AlwaysInline) {
  const SearchTask task = MakeTask(MatmulRelu(16, 16, 16));  // A 0, B 1, C 2, E 3, D 4
  const SearchParams params;
  const SketchContext ctx{task, params};
  const State s(task.compute_dag);
  auto rule = MakeAlwaysInlineRule();
  EXPECT_EQ(rule->MeetCondition(ctx, s, 3), Condition::ApplyAndSkipRest);  // E = C + 1
  EXPECT_EQ(rule->MeetCondition(ctx, s, 4), Condition::Skip);              // D is an output
  EXPECT_EQ(rule->MeetCondition(ctx, s, 2), Condition::Skip);              // C has a reduction
  EXPECT_EQ(rule->MeetCondition(ctx, s, 0), Condition::Skip);              // a placeholder
  auto out = rule->Apply(ctx, s, 3);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first.stage(3).loc, ComputeLocKind::Inlined);
  EXPECT_EQ(out[0].second, 2);
}

TEST(SketchRules, MultiLevelTilingMakesSSRSRS) {
  const SearchTask task = MakeTask(Matmul(32, 32, 32));
  const SearchParams params;
  const SketchContext ctx{task, params};
  const State s(task.compute_dag);
  auto rule = MakeMultiLevelTilingRule();
  EXPECT_EQ(rule->MeetCondition(ctx, s, 2), Condition::ApplyAndSkipRest);
  EXPECT_EQ(rule->MeetCondition(ctx, s, 0), Condition::Skip);
  auto out = rule->Apply(ctx, s, 2);
  ASSERT_EQ(out.size(), 1u);
  const Stage& c = out[0].first.stage(2);
  const std::vector<std::string> want = {"i.0", "j.0", "i.1", "j.1", "k.0",
                                         "i.2", "j.2", "k.1", "i.3", "j.3"};
  EXPECT_EQ(IterNames(c), want);
  EXPECT_EQ(c.iter(9).extent, -1);  // lengths unknown in a sketch
  // Not again on a tiled stage.
  EXPECT_EQ(rule->MeetCondition(ctx, out[0].first, 2), Condition::Skip);
}

TEST(SketchRules, CacheWriteOnMatmulWithoutConsumer) {
  const SearchTask task = MakeTask(Matmul(32, 32, 32));
  const SearchParams params;
  const SketchContext ctx{task, params};
  const State s(task.compute_dag);
  auto rule = MakeAddCacheWriteRule();
  EXPECT_EQ(rule->MeetCondition(ctx, s, 2), Condition::Apply);
  auto out = rule->Apply(ctx, s, 2);
  ASSERT_EQ(out.size(), 1u);
  const State& r = out[0].first;
  EXPECT_EQ(out[0].second, 2);
  EXPECT_EQ(r.stage(2).name(), "C.local");
  EXPECT_EQ(r.stage(2).scope, MemScope::Local);
  EXPECT_EQ(r.stage(3).name(), "C");
  EXPECT_TRUE(IsCacheWriteStage(r, 2));
  EXPECT_EQ(rule->MeetCondition(ctx, r, 2), Condition::Skip);  // not twice
  // The local stage is fused into its copy, and only fused.
  auto fusion = MakeMultiLevelTilingWithFusionRule();
  EXPECT_EQ(fusion->MeetCondition(ctx, r, 2), Condition::ApplyAndSkipRest);
}

TEST(SketchRules, PackOperandOnMatmulWithLongRows) {
  const SearchTask task = MakeTask(Matmul(32, 256, 64));  // B rows of 1 KiB
  const SearchParams params;
  const SketchContext ctx{task, params};
  const State s(task.compute_dag);
  auto rule = MakePackOperandRule();
  EXPECT_EQ(rule->MeetCondition(ctx, s, 2), Condition::Apply);
  EXPECT_EQ(rule->MeetCondition(ctx, s, 0), Condition::Skip);  // a placeholder
  auto out = rule->Apply(ctx, s, 2);
  ASSERT_EQ(out.size(), 1u);
  const State& r = out[0].first;
  ASSERT_EQ(r.stages().size(), 4u);
  EXPECT_EQ(r.stage(2).name(), "B.pack");
  EXPECT_EQ(out[0].second, 3);  // C again, at its new position
  EXPECT_EQ(r.stage(3).name(), "C");
  const int64_t lanes = task.hardware_params.vector_unit_bytes / 4 * params.vector_lanes_factor;
  const int64_t want_lanes = std::min(lanes, params.max_vectorize_size);
  EXPECT_EQ(r.stage(2).op->shape, (std::vector<int64_t>{256 / want_lanes, 64, want_lanes}));
  EXPECT_EQ(rule->MeetCondition(ctx, r, 3), Condition::Skip);  // C reads the packed copy now
  // Short rows (256 bytes), element-wise ops and row reductions: no packing.
  const SearchTask narrow = MakeTask(Matmul(32, 64, 64));
  EXPECT_EQ(rule->MeetCondition({narrow, params}, State(narrow.compute_dag), 2), Condition::Skip);
  const SearchTask ew = MakeTask(ElementWise(512, 512));
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(rule->MeetCondition({ew, params}, State(ew.compute_dag), i), Condition::Skip);
  const SearchTask rows = MakeTask(RowSum(512, 512));
  EXPECT_EQ(rule->MeetCondition({rows, params}, State(rows.compute_dag), 1), Condition::Skip);
}

// [X, W, Y] with Y[i, j] = sum over k of X[i, k] * W[j, k] (a dense layer).
ComputeDAG Dense(int64_t n, int64_t m, int64_t k) {
  const DataType f32 = DataType::Float(32);
  Tensor x = placeholder({n, k}, f32, "X");
  Tensor w = placeholder({m, k}, f32, "W");
  IterVar i = Axis("i", n), j = Axis("j", m);
  IterVar r = MakeReduceAxis(0, k, "k");
  return ComputeDAG(
      {x, w,
       compute("Y", {i, j}, ReduceNode::make(Combiner::Sum, x({i.var, r.var}) * w({j.var, r.var}), {r}))});
}

TEST(SketchRules, PackOperandOnTransposedWeights) {
  // W[j, k] read along j (the vectorized axis) takes one element per row of
  // 64 bytes: packed along j, so that a step of k reads whole vectors.
  const SearchTask task = MakeTask(Dense(8, 64, 16));
  const SearchParams params;
  const SketchContext ctx{task, params};
  const State s(task.compute_dag);
  auto rule = MakePackOperandRule();
  ASSERT_EQ(rule->MeetCondition(ctx, s, 2), Condition::Apply);
  auto out = rule->Apply(ctx, s, 2);
  ASSERT_EQ(out.size(), 1u);
  const State& r = out[0].first;
  const Stage& pack = r.stage(r.StageIndex("W.pack"));
  const int64_t lanes = std::min(task.hardware_params.vector_unit_bytes / 4 * params.vector_lanes_factor,
                                 params.max_vectorize_size);
  EXPECT_EQ(pack.op->shape, (std::vector<int64_t>{64 / lanes, 16, lanes}));
  // Rows shorter than a cache line (W[j, k] with 8 floats of k) or too few
  // columns to fill two blocks: no packing.
  const SearchTask short_rows = MakeTask(Dense(8, 64, 8));
  EXPECT_EQ(rule->MeetCondition({short_rows, params}, State(short_rows.compute_dag), 2), Condition::Skip);
  const SearchTask narrow = MakeTask(Dense(8, lanes, 16));
  EXPECT_EQ(rule->MeetCondition({narrow, params}, State(narrow.compute_dag), 2), Condition::Skip);
}

TEST(SketchPolicy, MatmulWithLongRowsGivesPackedSketchesToo) {
  SketchPolicy policy(MakeTask(Matmul(64, 256, 64)));
  const auto sketches = policy.GenerateSketches();
  EXPECT_TRUE(policy.rule_failures().empty()) << policy.rule_failures()[0];
  ASSERT_EQ(sketches.size(), 6u);  // the three of a matmul, without and with the packed B
  int packed = 0;
  for (const State& s : sketches) {
    packed += CountSteps(s, "PK");
    if (CountSteps(s, "PK") == 0) continue;
    const Stage& p = s.stage(s.StageIndex("B.pack"));
    EXPECT_EQ(p.loc, ComputeLocKind::Root);
    EXPECT_TRUE(IsUntouched(p));  // left to the init rules (parallel, vectorize)
  }
  EXPECT_EQ(packed, 3);
}

TEST(SketchRules, FusionIntoElementWiseConsumer) {
  const SearchTask task = MakeTask(MatmulRelu(16, 16, 16));
  const SearchParams params;
  const SketchContext ctx{task, params};
  const State s = State(task.compute_dag).ComputeInline(3);  // E inlined: C's consumer is D
  EXPECT_EQ(ElementwiseFusionTarget(s, 2), 4);
  // The cache write applies too (Apply): both kinds of sketches are kept.
  EXPECT_EQ(MakeAddCacheWriteRule()->MeetCondition(ctx, s, 2), Condition::Apply);
  auto rule = MakeMultiLevelTilingWithFusionRule();
  ASSERT_EQ(rule->MeetCondition(ctx, s, 2), Condition::Apply);
  auto out = rule->Apply(ctx, s, 2);
  ASSERT_EQ(out.size(), 2u);
  for (int level = 1; level <= 2; ++level) {
    const State& r = out[level - 1].first;
    const Stage& c = r.stage(2);
    const Stage& d = r.stage(4);
    EXPECT_EQ(c.loc, ComputeLocKind::At);
    EXPECT_EQ(c.attach_stage, 4);
    EXPECT_EQ(d.num_iters(), 2 * (level + 1));  // i and j follow C's splits
    EXPECT_EQ(d.LeafIndex(c.attach_node), 2 * level - 1);
    EXPECT_EQ(CountSteps(r, "FSP"), 2);
  }
}

TEST(SketchRules, RfactorOnReductionWithLittleParallelism) {
  const SearchTask task = MakeTask(RowSum(2, 512), 8);
  const SearchParams params;
  const SketchContext ctx{task, params};
  const State s(task.compute_dag);
  auto rule = MakeAddRfactorRule();
  EXPECT_EQ(rule->MeetCondition(ctx, s, 1), Condition::Apply);  // 2 rows < 8 cores
  EXPECT_EQ(MakeAddRfactorRule()->MeetCondition(ctx, State(MakeTask(RowSum(64, 512), 8).compute_dag), 1),
            Condition::Skip);
  auto out = rule->Apply(ctx, s, 1);
  ASSERT_EQ(out.size(), 2u);
  for (const auto& [r, next] : out) {
    EXPECT_EQ(next, 0);
    EXPECT_EQ(r.stage(1).name(), "S.rf");
    EXPECT_EQ(r.stage(2).name(), "S");
    EXPECT_TRUE(IsRfactorSplit(r.steps(), 0));
  }
  // Outer part factored: S.rf(i, k.0) reduces k.1; inner part: k.1 innermost.
  EXPECT_EQ(IterNames(out[0].first.stage(1)), (std::vector<std::string>{"i", "k.0", "k.1"}));
  EXPECT_EQ(IterNames(out[1].first.stage(1)), (std::vector<std::string>{"i", "k.0", "k.1"}));
  EXPECT_EQ(out[1].first.stage(1).iter(2).kind, IteratorKind::Spatial);
  EXPECT_EQ(out[0].first.stage(1).iter(1).kind, IteratorKind::Spatial);
}

TEST(SketchRules, RfactorOnMultiLevelTiledOpWithSmallSpatialProduct) {
  const SearchTask task = MakeTask(Matmul(4, 4, 1024));
  const SearchParams params;
  const SketchContext ctx{task, params};
  EXPECT_EQ(MakeAddRfactorRule()->MeetCondition(ctx, State(task.compute_dag), 2), Condition::Apply);
  const SearchTask big = MakeTask(Matmul(64, 64, 64));
  EXPECT_EQ(MakeAddRfactorRule()->MeetCondition(SketchContext{big, params}, State(big.compute_dag), 2),
            Condition::Skip);
}

TEST(SketchPolicy, MatmulGivesTilingAndCacheWriteSketches) {
  SketchPolicy policy(MakeTask(Matmul(64, 64, 64)));
  const auto sketches = policy.GenerateSketches();
  EXPECT_TRUE(policy.rule_failures().empty()) << policy.rule_failures()[0];
  ASSERT_EQ(sketches.size(), 3u);  // tiled; cache write fused at level 1; at level 2
  int cached = 0;
  for (const State& s : sketches) {
    cached += CountSteps(s, "CHW");
    EXPECT_EQ(CountSteps(s, "RE"), CountSteps(s, "CHW") + 1);  // the tiling (+ the copy's)
  }
  EXPECT_EQ(cached, 2);
}

TEST(SketchPolicy, MatmulReluGivesFusedCachedAndUnfusedSketches) {
  SketchPolicy policy(MakeTask(MatmulRelu(64, 64, 64)));
  const auto sketches = policy.GenerateSketches();
  EXPECT_TRUE(policy.rule_failures().empty());
  ASSERT_EQ(sketches.size(), 5u);  // cache write at level 1, 2; fused at level 1, 2; tiled
  int fused = 0, cached = 0;
  for (const State& s : sketches) {
    const int cache = CountSteps(s, "CHW");
    cached += cache;
    EXPECT_EQ(s.stage(3 + cache).loc, ComputeLocKind::Inlined);  // E
    fused += cache == 0 && s.stage(2).loc == ComputeLocKind::At;
  }
  EXPECT_EQ(fused, 2);
  EXPECT_EQ(cached, 2);
}

TEST(SketchPolicy, ReductionGivesRfactorSketches) {
  SketchPolicy policy(MakeTask(RowSum(2, 512), 8));
  const auto sketches = policy.GenerateSketches();
  ASSERT_EQ(sketches.size(), 3u);
  EXPECT_EQ(CountSteps(sketches[0], "RF") + CountSteps(sketches[1], "RF") + CountSteps(sketches[2], "RF"), 2);
}

// S[i, 0] = sum over k of X[i, k]: a row sum that keeps its last dimension
// (extent 1), as softmax's row maximum and layer_norm's mean do.
ComputeDAG RowSumKeepingDim(int64_t n, int64_t k) {
  Tensor x = placeholder({n, k}, DataType::Float(32), "X");
  IterVar i = Axis("i", n), j = Axis("j", 1);
  IterVar r = MakeReduceAxis(0, k, "k");
  return ComputeDAG({x, compute("S", {i, j}, ReduceNode::make(Combiner::Sum, x({i.var, r.var}), {r}))});
}

// A load that misses only an axis of extent 1 reuses nothing: the plain loop
// nest is a sketch beside the tiled ones. A matmul keeps only tiled sketches.
TEST(SketchPolicy, ReuseOnlyAcrossAUnitAxisKeepsThePlainSketchToo) {
  const SearchTask task = MakeTask(RowSumKeepingDim(67, 129));
  EXPECT_TRUE(task.compute_dag.access(1).needs_multi_level_tiling);
  EXPECT_TRUE(task.compute_dag.access(1).tiling_optional);
  SketchPolicy policy(task);
  const auto sketches = policy.GenerateSketches();
  int plain = 0;
  for (const State& s : sketches) plain += CountSteps(s, "SP") == 0 && CountSteps(s, "CHW") == 0;
  EXPECT_EQ(plain, 1);
  EXPECT_GT(sketches.size(), 1u);
  for (const State& s : policy.SampleInitPopulation(12, 3).states) sched_test::ExpectMatchesReference(s);
  EXPECT_FALSE(MakeTask(Matmul(64, 64, 64)).compute_dag.access(2).tiling_optional);
  for (const State& s : SketchPolicy(MakeTask(Matmul(64, 64, 64))).GenerateSketches()) {
    EXPECT_GT(CountSteps(s, "SP"), 0);
  }
}

// softmax over the innermost axis of an n x m input, its reductions keeping
// that axis at extent 1 (as ops.softmax writes it); `max_is_output` makes the
// row maximum an output of the DAG too.
ComputeDAG SoftmaxKeepingDim(int64_t n, int64_t m, bool max_is_output = false) {
  Tensor x = placeholder({n, m}, kF32, "X");
  IterVar i1 = Axis("i", n), j1 = Axis("j", 1), k1 = MakeReduceAxis(0, m, "k");
  Tensor mx = compute("max", {i1, j1}, ReduceNode::make(Combiner::Max, x({i1.var, k1.var}), {k1}));
  IterVar i2 = Axis("i", n), j2 = Axis("j", m);
  Tensor e =
      compute("exp", {i2, j2}, CallNode::make(Intrinsic::Exp, {x({i2.var, j2.var}) - mx({i2.var, Expr(0)})}));
  IterVar i3 = Axis("i", n), j3 = Axis("j", 1), k3 = MakeReduceAxis(0, m, "k");
  Tensor s = compute("sum", {i3, j3}, ReduceNode::make(Combiner::Sum, e({i3.var, k3.var}), {k3}));
  IterVar i4 = Axis("i", n), j4 = Axis("j", m);
  Tensor out = compute("softmax", {i4, j4}, e({i4.var, j4.var}) / s({i4.var, Expr(0)}));
  if (max_is_output) return ComputeDAG({x, mx, out});
  return ComputeDAG({x, out});
}

// The sketch of the row-fusion rule: both reductions factored ("RF") and
// every stage before the output computed inside its row loop.
bool IsRowFusionSketch(const State& s) {
  const int out = s.StageIndex("softmax");
  for (const char* name : {"max", "max.rf", "exp", "sum", "sum.rf"}) {
    const Stage& st = s.stage(s.StageIndex(name));
    if (st.loc != ComputeLocKind::At || st.attach_stage != out) return false;
  }
  return CountSteps(s, "RF") == 2;
}

// Softmax's stages are computed per row of its output, the reductions
// vectorized over a factored part of the row; on awkward shapes (a prime row
// length, a single row) every sampled state computes what the reference does.
// Not offered where a row's values are needed elsewhere (the maximum an
// output) or the reduction is not along the innermost axis.
TEST(SketchPolicy, RowFusionComputesSoftmaxPerRowOfItsOutput) {
  for (auto [n, m] : {std::pair<int64_t, int64_t>{7, 131}, {1, 5}, {12, 64}}) {
    SCOPED_TRACE(std::to_string(n) + " x " + std::to_string(m));
    SketchPolicy policy(MakeTask(SoftmaxKeepingDim(n, m)));
    const auto sketches = policy.GenerateSketches();
    EXPECT_TRUE(policy.rule_failures().empty());
    const auto fused = std::find_if(sketches.begin(), sketches.end(), IsRowFusionSketch);
    ASSERT_NE(fused, sketches.end());
    EXPECT_EQ(std::count_if(sketches.begin(), sketches.end(), IsRowFusionSketch), 1);
    EXPECT_GT(sketches.size(), 1u);  // the other sketches are kept
    const int out = fused->StageIndex("softmax");
    EXPECT_EQ(fused->stage(out).iters().back().annotation, IteratorAnnotation::Vectorize);
    for (const char* rf : {"max.rf", "sum.rf"}) {
      EXPECT_EQ(fused->stage(fused->StageIndex(rf)).iters().back().annotation, IteratorAnnotation::Vectorize);
    }
    SketchPolicy one(MakeTask(SoftmaxKeepingDim(n, m)));
    const InitPopulation population = one.SampleInitPopulation(16, 5);
    int sampled_fused = 0;
    for (const State& s : population.states) {
      sched_test::ExpectMatchesReference(s);
      sampled_fused += IsRowFusionSketch(s);
    }
    EXPECT_GT(sampled_fused, 0);
  }
  for (const State& s : SketchPolicy(MakeTask(SoftmaxKeepingDim(7, 131, true))).GenerateSketches()) {
    EXPECT_NE(s.stage(s.StageIndex("exp")).loc, ComputeLocKind::At) << s.ToString();
  }
  const SearchTask task = MakeTask(SoftmaxKeepingDim(7, 131));
  const SearchParams params;
  const SketchContext ctx{task, params};
  const State init(task.compute_dag);
  auto rule = MakeRowFusionRule();
  EXPECT_EQ(rule->MeetCondition(ctx, init, init.StageIndex("softmax")), Condition::Apply);
  EXPECT_EQ(rule->MeetCondition(ctx, init, init.StageIndex("sum")), Condition::Skip);
}

TEST(SketchPolicy, ElementWiseOpIsInlinedAndLeftAlone) {
  SketchPolicy policy(MakeTask(ElementWise(8, 8)));
  const auto sketches = policy.GenerateSketches();
  ASSERT_EQ(sketches.size(), 1u);
  ASSERT_EQ(sketches[0].steps().size(), 1u);
  EXPECT_EQ(sketches[0].stage(1).loc, ComputeLocKind::Inlined);
}

// G, a constant 4x4 matrix written as an expression of its indices.
Tensor ConstMatrix4x4() {
  IterVar a = Axis("a", 4), b = Axis("b", 4);
  return compute("G", {a, b}, select(eq(a.var, b.var), Expr(2.0f), Expr(0.5f)));
}

TEST(SketchPolicy, ConstTensorIndicesAreUnrolled) {
  // G is a constant 4x4 matrix; O[i, e] = sum_r X[i, r] * G[r, e].
  Tensor x = placeholder({12, 4}, kF32, "X");
  Tensor g = ConstMatrix4x4();
  IterVar i = Axis("i", 12), e = Axis("e", 4);
  IterVar rd = MakeReduceAxis(0, 4, "r");
  Tensor o =
      compute("O", {i, e}, ReduceNode::make(Combiner::Sum, x({i.var, rd.var}) * g({rd.var, e.var}), {rd}));
  const SearchTask task = MakeTask(ComputeDAG({x, o}));
  const SearchParams params;
  const SketchContext ctx{task, params};
  const State s(task.compute_dag);
  const int o_id = s.StageIndex("O");
  auto rule = MakeSimplifyComputeWithConstTensorRule();
  ASSERT_EQ(rule->MeetCondition(ctx, s, o_id), Condition::ApplyAndSkipRest);
  const State r = rule->Apply(ctx, s, o_id)[0].first;
  EXPECT_EQ(IterNames(r.stage(o_id)), (std::vector<std::string>{"i.0", "i.1", "i.2", "e", "r"}));
  EXPECT_EQ(r.stage(o_id).iter(3).annotation, IteratorAnnotation::Unroll);
  EXPECT_EQ(r.stage(o_id).iter(4).annotation, IteratorAnnotation::Unroll);
  SketchPolicy policy(task);
  const auto sketches = policy.GenerateSketches();
  ASSERT_EQ(sketches.size(), 1u);
  EXPECT_EQ(sketches[0].stage(s.StageIndex("G")).loc, ComputeLocKind::Inlined);
}

TEST(SketchPolicy, ContiguousAxisStaysInsideTheUnrolledConstLoopsOnCpus) {
  // O[e, i] = sum_r G[r, e] * X[r, i]: i, the contiguous axis, indexes no constant
  // tensor, so its inner part goes inside the unrolled e and r (vectorizable).
  Tensor x = placeholder({4, 32}, kF32, "X");
  Tensor g = ConstMatrix4x4();
  IterVar e = Axis("e", 4), i = Axis("i", 32);
  IterVar rd = MakeReduceAxis(0, 4, "r");
  Tensor o =
      compute("O", {e, i}, ReduceNode::make(Combiner::Sum, g({rd.var, e.var}) * x({rd.var, i.var}), {rd}));
  const SearchParams params;
  auto rule = MakeSimplifyComputeWithConstTensorRule();
  const SearchTask cpu = MakeTask(ComputeDAG({x, o}));
  const State s(cpu.compute_dag);
  const int o_id = s.StageIndex("O");
  const State r = rule->Apply(SketchContext{cpu, params}, s, o_id)[0].first;
  EXPECT_EQ(IterNames(r.stage(o_id)), (std::vector<std::string>{"i.0", "i.1", "e", "r", "i.2"}));
  EXPECT_EQ(r.stage(o_id).iter(2).annotation, IteratorAnnotation::Unroll);
  EXPECT_EQ(r.stage(o_id).iter(3).annotation, IteratorAnnotation::Unroll);
  EXPECT_EQ(r.stage(o_id).iter(4).annotation, IteratorAnnotation::None);
  // A GPU keeps every spatial part outside the unrolled loops.
  const SearchTask gpu(ComputeDAG({x, o}), Target::Parse("opencl"));
  const State q = rule->Apply(SketchContext{gpu, params}, State(gpu.compute_dag), o_id)[0].first;
  EXPECT_EQ(IterNames(q.stage(o_id)), (std::vector<std::string>{"i.0", "i.1", "i.2", "e", "r"}));
}

TEST(SketchPolicy, OpenCLTargetsGetTheGpuRules) {
  const ComputeDAG dag = Matmul(8, 8, 8);
  SketchPolicy policy(SearchTask(dag, Target::Parse("opencl")));
  EXPECT_EQ(policy.sketch_rules().front()->name(), "add-cache-read");
  EXPECT_EQ(policy.init_rules()[1]->name(), "thread-bind");
  ASSERT_EQ(policy.mutation_rules().size(), 3u);
  EXPECT_DOUBLE_EQ(policy.mutation_rules()[1].probability, 0.10);
  EXPECT_EQ(policy.mutation_rules()[2].rule->name(), "shared-fetch");
  const std::vector<State> sketches = policy.GenerateSketches();
  ASSERT_EQ(sketches.size(), 1u);
  EXPECT_TRUE(policy.rule_failures().empty());
  // A, B read through shared stages at the outer reduce tile of C.local, fused at C's threadIdx level.
  EXPECT_EQ(sketches[0].stage(sketches[0].StageIndex("A.shared")).scope, MemScope::Shared);
  EXPECT_EQ(sketches[0].stage(sketches[0].StageIndex("C.local")).loc, ComputeLocKind::At);
  // Register tiles of both, at C.local's innermost reduce loop.
  EXPECT_EQ(sketches[0].stage(sketches[0].StageIndex("B.shared.local")).scope, MemScope::Local);
  EXPECT_EQ(sketches[0].stage(sketches[0].StageIndex("A.shared.local")).loc, ComputeLocKind::At);
}

// A custom rule for tests: at the stage named `stage`, returns what `make` gives.
class CustomRule : public SketchRule {
 public:
  using Make = std::function<std::vector<std::pair<State, int>>(const State&, int)>;
  CustomRule(std::string name, std::string stage, Make make, bool records = true)
      : name_(std::move(name)), stage_(stage), make_(std::move(make)), records_(records) {}
  std::string name() const override { return name_; }
  bool RecordsFailures() const override { return records_; }
  Condition MeetCondition(const SketchContext&, const State& s, int stage_id) const override {
    return s.stage(stage_id).name() == stage_ ? Condition::Apply : Condition::Skip;
  }
  std::vector<std::pair<State, int>> Apply(const SketchContext&, const State& s,
                                           int stage_id) const override {
    return make_(s, stage_id);
  }

 private:
  std::string name_;
  std::string stage_;
  Make make_;
  bool records_;
};

TEST(SketchPolicy, PreloadedRulesGoFirstInOrder) {
  SketchPolicy policy(MakeTask(Matmul(16, 16, 16)));  // A 0, B 1, C 2
  const size_t builtin = policy.GenerateSketches().size();
  auto split_i = [](const State& s, int id) {
    return std::vector<std::pair<State, int>>{{s.Split(id, 0, {4}), id - 1}};
  };
  auto split_j = [](const State& s, int id) {
    return std::vector<std::pair<State, int>>{{s.Split(id, 1, {2}), id - 1}};
  };
  policy.PreloadSketchRule(std::make_shared<CustomRule>("split-i", "C", split_i));
  policy.PreloadSketchRule(std::make_shared<CustomRule>("split-j", "C", split_j));
  EXPECT_EQ(policy.sketch_rules()[0]->name(), "split-i");
  EXPECT_EQ(policy.sketch_rules()[1]->name(), "split-j");
  EXPECT_EQ(policy.sketch_rules()[2]->name(), "always-inline");
  const auto sketches = policy.GenerateSketches();
  ASSERT_EQ(sketches.size(), builtin + 2);
  EXPECT_EQ(IterNames(sketches[0].stage(2)), (std::vector<std::string>{"i.0", "i.1", "j", "k"}));
  EXPECT_EQ(IterNames(sketches[1].stage(2)), (std::vector<std::string>{"i", "j.0", "j.1", "k"}));
  EXPECT_THROW(policy.PreloadSketchRule(std::make_shared<CustomRule>("split-i", "C", split_i)), Error);
}

TEST(SketchPolicy, BadCustomRuleResultsAreErrors) {
  const SearchTask task = MakeTask(Matmul(16, 16, 16));
  auto expect_error = [&](CustomRule::Make make, const char* expected) {
    SketchPolicy policy(task);
    policy.PreloadSketchRule(std::make_shared<CustomRule>("bad", "C", std::move(make)));
    const std::string message = test::ErrorOf([&] { policy.GenerateSketches(); });
    EXPECT_TRUE(test::Contains(message, expected)) << expected << ": " << message;
  };
  using Results = std::vector<std::pair<State, int>>;
  expect_error([](const State& s, int) { return Results{{s, 3}}; }, "next stage id 3");
  expect_error([](const State& s, int id) { return Results{{s, id}}; }, "never end");
  const ComputeDAG other = Matmul(8, 8, 8);
  expect_error([&](const State&, int id) { return Results{{State(other), id - 1}}; }, "another compute DAG");
  // A rule that keeps sending new states back to the same stage.
  expect_error([](const State& s, int id) { return Results{{s.Split(id, 0, {1}), id}}; }, "did not finish");
}

TEST(SketchPolicy, CustomRuleErrorsPropagateUnlessRecorded) {
  const SearchTask task = MakeTask(Matmul(16, 16, 16));
  auto fail = [](const State&, int) -> std::vector<std::pair<State, int>> {
    throw std::runtime_error("boom");
  };
  SketchPolicy recorded(task);
  recorded.PreloadSketchRule(std::make_shared<CustomRule>("fails", "C", fail));
  EXPECT_EQ(recorded.GenerateSketches().size(), SketchPolicy(task).GenerateSketches().size());
  ASSERT_EQ(recorded.rule_failures().size(), 1u);
  EXPECT_NE(recorded.rule_failures()[0].find("boom"), std::string::npos);
  SketchPolicy propagated(task);
  propagated.PreloadSketchRule(std::make_shared<CustomRule>("fails", "C", fail, /*records=*/false));
  EXPECT_THROW(propagated.GenerateSketches(), std::runtime_error);
}

}  // namespace
}  // namespace autosched
