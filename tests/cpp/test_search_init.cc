// Sampling of the initial population: tile sizes divide the real extents
// (a register block's guarded vector part aside),
// annotations follow the rules, every sampled state lowers and computes what
// the reference evaluator computes, and a seed gives the same states.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "lower/lower.h"
#include "lower/stmt_printer.h"
#include "schedule_test_util.h"
#include "search/rules/search_util.h"
#include "search/sketch_policy.h"

namespace autosched {
namespace {

using sched_test::Axis;
using sched_test::ExpectMatchesReference;
using sched_test::MakeTask;
using sched_test::Matmul;
using sched_test::MatmulRelu;
using sched_test::RowSum;

const DataType kF32 = DataType::Float(32);

TEST(SampleSplitLengths, ProductDividesExtentAndInnermostIsBounded) {
  std::mt19937 rng(3);
  for (int64_t extent : {1, 7, 12, 64, 360, 1024, 97}) {
    for (int n = 1; n <= 3; ++n) {
      for (int trial = 0; trial < 50; ++trial) {
        const auto lengths = SampleSplitLengths(extent, n, 16, &rng);
        ASSERT_EQ(static_cast<int>(lengths.size()), n);
        int64_t product = 1;
        for (int64_t l : lengths) {
          ASSERT_GE(l, 1);
          product *= l;
        }
        EXPECT_EQ(extent % product, 0) << extent;
        EXPECT_LE(lengths.back(), 16);
      }
    }
  }
}

// Every split of every sampled state has known lengths whose product divides
// the extent it split, but for a register block's vector part that is a
// whole number of vectors (`lanes`) where no such divisor exists: its last
// block runs guarded.
void ExpectFilledSplits(const State& s, int64_t lanes) {
  for (const Step& step : s.steps()) {
    const auto* split = std::get_if<SplitStep>(&step);
    if (split == nullptr) continue;
    ASSERT_TRUE(split->extent.has_value());
    int64_t product = 1;
    for (const auto& l : split->lengths) {
      ASSERT_TRUE(l.has_value()) << s.ToString();
      product *= *l;
    }
    const int64_t inner = split->lengths.empty() ? 1 : *split->lengths.back();
    EXPECT_TRUE(*split->extent % product == 0 || inner % lanes == 0)
        << "extent " << *split->extent << ", lengths' product " << product << ", innermost " << inner;
  }
}

void SampleAndCheck(const SearchTask& task, int n) {
  SketchPolicy policy(task);
  const InitPopulation pop = policy.SampleInitPopulation(n, 7);
  ASSERT_FALSE(pop.states.empty());
  for (const auto& [reason, count] : pop.drops) {
    EXPECT_EQ(reason, "duplicate") << count << " dropped: " << pop.drop_messages.at(reason);
  }
  const int64_t lanes = std::max<int64_t>(1, task.hardware_params.vector_unit_bytes / 4);
  for (const State& s : pop.states) {
    ExpectFilledSplits(s, lanes);
    ExpectMatchesReference(s);
  }
}

TEST(SampleInitPopulation, MatmulStatesMatchReference) { SampleAndCheck(MakeTask(Matmul(24, 20, 18)), 12); }

TEST(SampleInitPopulation, MatmulReluStatesMatchReference) {
  SampleAndCheck(MakeTask(MatmulRelu(12, 10, 9)), 12);
}

TEST(SampleInitPopulation, RfactorStatesMatchReference) { SampleAndCheck(MakeTask(RowSum(2, 60), 8), 12); }

TEST(SampleInitPopulation, SmallSpatialMatmulWithRfactorMatchesReference) {
  SampleAndCheck(MakeTask(Matmul(2, 3, 64)), 12);
}

TEST(SampleInitPopulation, ConstTensorReadMatchesReference) {
  // O[i, e] = sum_r X[i, r] * G[r, e] with G a constant matrix (unrolled reads).
  Tensor x = placeholder({12, 4}, kF32, "X");
  IterVar a = Axis("a", 4), b = Axis("b", 4);
  Tensor g = compute("G", {a, b}, select(eq(a.var, b.var), Expr(2.0f), Expr(0.5f)));
  IterVar i = Axis("i", 12), e = Axis("e", 4);
  IterVar r = MakeReduceAxis(0, 4, "r");
  Tensor o =
      compute("O", {i, e}, ReduceNode::make(Combiner::Sum, x({i.var, r.var}) * g({r.var, e.var}), {r}));
  SampleAndCheck(MakeTask(ComputeDAG({x, o})), 8);
}

TEST(SampleInitPopulation, AnnotatesParallelVectorizeAndUnroll) {
  SketchPolicy policy(MakeTask(Matmul(64, 64, 64)));
  const InitPopulation pop = policy.SampleInitPopulation(20, 11);
  ASSERT_EQ(pop.states.size(), 20u);
  int parallel = 0, vectorized = 0, unroll_pragmas = 0;
  for (const State& s : pop.states) {
    for (const Stage& st : s.stages()) {
      for (int i = 0; i < st.num_iters(); ++i) {
        parallel += st.iter(i).annotation == IteratorAnnotation::Parallel;
        if (st.iter(i).annotation == IteratorAnnotation::Vectorize) {
          ++vectorized;
          EXPECT_EQ(i, st.num_iters() - 1);
          // The vector bound; a register block's row of vectors (the tiled C) may take more.
          EXPECT_LE(st.iter(i).extent, st.name().rfind("C", 0) == 0 ? 64 : 16);
        }
      }
    }
    for (const Step& step : s.steps()) unroll_pragmas += std::holds_alternative<PragmaStep>(step);
  }
  // Most states run their root stage in parallel (a random tiling whose outer
  // levels run once leaves nothing to run in parallel).
  EXPECT_GE(parallel, 15);
  EXPECT_GT(vectorized, 0);
  EXPECT_GE(unroll_pragmas, 20);  // each state's reduction gets one
}

// The sketch's steps with every unknown split length replaced by `length`.
State FillAll(const State& sketch, int64_t length) {
  std::vector<Step> steps = sketch.steps();
  for (Step& step : steps) {
    if (auto* split = std::get_if<SplitStep>(&step)) {
      for (auto& l : split->lengths) l = l.value_or(length);
    }
  }
  return State::FromSteps(sketch.init_dag(), steps);
}

TEST(ParallelRule, LooksPastAnAttachPointThatRunsOnce) {
  // Cache write fused at level 1 with all outer tiles of extent 1: the copy's
  // loops up to the attach point run once, so the loops after it go parallel.
  const SearchTask task = MakeTask(Matmul(8, 8, 8));
  SketchPolicy policy(task);
  std::vector<State> fused;
  for (const State& s : policy.GenerateSketches()) {
    if (s.stage(2).loc == ComputeLocKind::At && s.stage(3).num_iters() == 4) fused.push_back(s);
  }
  ASSERT_EQ(fused.size(), 1u);
  const State filled = FillAll(fused[0], 2);  // i = 1 x 2 x 2 x 2: i.0 runs once
  ASSERT_EQ(filled.stage(3).iter(0).extent, 1);
  const SearchParams params;
  std::mt19937 rng(1);
  const State s = MakeParallelRule()->Apply(SketchContext{task, params}, filled, &rng);
  const Stage& copy = s.stage(3);
  ASSERT_EQ(copy.num_iters(), 3);  // i.0, j.0, i.1@j.1
  EXPECT_EQ(copy.iter(2).annotation, IteratorAnnotation::Parallel);
  EXPECT_EQ(copy.iter(0).annotation, IteratorAnnotation::None);
  ExpectMatchesReference(s);
}

TEST(SampleInitPopulation, SameSeedSameStates) {
  SketchPolicy policy(MakeTask(MatmulRelu(32, 32, 32)));
  const InitPopulation a = policy.SampleInitPopulation(10, 5);
  const InitPopulation b = policy.SampleInitPopulation(10, 5);
  const InitPopulation c = policy.SampleInitPopulation(10, 6);
  ASSERT_EQ(a.states.size(), b.states.size());
  bool differs = false;
  for (size_t i = 0; i < a.states.size(); ++i) {
    EXPECT_TRUE(a.states[i].SameSteps(b.states[i]));
    differs = differs || i >= c.states.size() || !a.states[i].SameSteps(c.states[i]);
  }
  EXPECT_TRUE(differs);
}

// No attempt starts after the deadline (a time budget's end): a deadline
// already past samples nothing, and counts no attempt as dropped.
TEST(SampleInitPopulation, NoAttemptStartsAfterTheDeadline) {
  const SearchTask task = MakeTask(MatmulRelu(32, 32, 32));
  const std::vector<State> sketches = SketchPolicy(task).GenerateSketches();
  const auto past = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  const InitPopulation none = SampleInitPopulation(task, sketches, 50, 5, {}, DefaultCpuInitRules(), past);
  EXPECT_TRUE(none.states.empty());
  EXPECT_TRUE(none.drops.empty());
  const auto later = std::chrono::steady_clock::now() + std::chrono::hours(1);
  EXPECT_EQ(SampleInitPopulation(task, sketches, 50, 5, {}, DefaultCpuInitRules(), later).states.size(), 50u);
}

// One sampler: one thread (what the public sample_init_population of a
// policy may run on) gives the population that many threads give.
TEST(SampleInitPopulation, OneThreadGivesWhatManyGive) {
  const SearchTask task = MakeTask(Matmul(24, 20, 18));
  const std::vector<State> sketches = SketchPolicy(task).GenerateSketches();
  SearchParams one, many;
  one.num_threads = 1;
  many.num_threads = 4;
  const InitPopulation a = SampleInitPopulation(task, sketches, 12, 9, one);
  const InitPopulation b = SampleInitPopulation(task, sketches, 12, 9, many);
  ASSERT_EQ(a.states.size(), b.states.size());
  for (size_t i = 0; i < a.states.size(); ++i) EXPECT_EQ(StateKey(a.states[i]), StateKey(b.states[i])) << i;
  EXPECT_EQ(a.drops, b.drops);
}

// A sampled state comes with the function its check lowered it to, and that
// is what lowering the state gives (so the cost model need not lower again).
TEST(SampleInitPopulation, StatesComeWithTheirLoweredFunction) {
  const SearchTask task = MakeTask(Matmul(24, 20, 18));
  SketchPolicy policy(task);
  const InitPopulation pop = policy.SampleInitPopulation(8, 3);
  ASSERT_FALSE(pop.states.empty());
  ASSERT_EQ(pop.lowered.size(), pop.states.size());
  for (size_t i = 0; i < pop.states.size(); ++i) {
    ASSERT_NE(pop.lowered[i], nullptr) << i;
    EXPECT_EQ(ToString(*pop.lowered[i]), ToString(Lower(pop.states[i]))) << i;
  }
}

TEST(SampleInitPopulation, CountsDuplicatesWhenFewStatesExist) {
  // A 1-element output: one possible state, every other attempt a duplicate.
  Tensor x = placeholder({1}, kF32, "X");
  IterVar i = Axis("i", 1);
  ComputeDAG dag({x, compute("Y", {i}, x({i.var}) + Expr(1.0f))});
  SketchPolicy policy(MakeTask(dag));
  const InitPopulation pop = policy.SampleInitPopulation(4, 1);
  EXPECT_EQ(pop.states.size(), 1u);
  EXPECT_GT(pop.drops.at("duplicate"), 0);
}

TEST(SampleInitPopulation, RefusesBadArguments) {
  const SearchTask task = MakeTask(Matmul(8, 8, 8));
  EXPECT_THROW(SampleInitPopulation(task, {}, 4, 1), Error);
  EXPECT_THROW(SampleInitPopulation(task, {State(task.compute_dag)}, 0, 1), Error);
}

// An init rule that throws: its attempts are dropped under its name.
class FailingRule : public InitRule {
 public:
  std::string name() const override { return "failing"; }
  State Apply(const SketchContext&, const State&, std::mt19937*) const override {
    throw Error("refused on purpose");
  }
};

TEST(SampleInitPopulation, DropsAndCountsFailingAttempts) {
  const SearchTask task = MakeTask(Matmul(8, 8, 8));
  InitRuleList rules = DefaultCpuInitRules();
  rules.push_back(std::make_shared<FailingRule>());
  SearchParams params;
  params.sample_init_attempts_per_state = 3;
  const InitPopulation pop = SampleInitPopulation(task, {State(task.compute_dag)}, 4, 1, params, rules);
  EXPECT_TRUE(pop.states.empty());
  EXPECT_EQ(pop.drops.at("failing"), 12);
  EXPECT_EQ(pop.drop_messages.at("failing"), "refused on purpose");
}

}  // namespace
}  // namespace autosched
