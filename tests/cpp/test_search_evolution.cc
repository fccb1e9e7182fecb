// Mutations and the evolutionary search: every mutation keeps a state valid
// (split products equal the extents, the result lowers and computes what the
// reference computes), the search returns distinct unmeasured states and is
// reproducible for a seed with any number of threads, and the policy's
// rounds never propose a state twice; an interrupt stops the parallel loops and
// a round, polled by the calling thread only.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "cost_model/random_model.h"
#include "lower/lower.h"
#include "lower/stmt_printer.h"
#include "schedule/infer_bound.h"
#include "schedule_test_util.h"
#include "search/evolution/evolutionary_search.h"
#include "search/rules/parallel.h"
#include "search/rules/search_util.h"
#include "search/sketch_policy.h"
#include "support/interrupt.h"

namespace autosched {
namespace {

using sched_test::Axis;
using sched_test::ExpectMatchesReference;
using sched_test::MakeTask;
using sched_test::Matmul;
using sched_test::MatmulRelu;

const DataType kF32 = DataType::Float(32);

// [X, S] with S[i] = sum over (k1, k2) of X[i, k1, k2].
ComputeDAG SumOfTwoAxes(int64_t n, int64_t k1, int64_t k2) {
  Tensor x = placeholder({n, k1, k2}, kF32, "X");
  IterVar i = Axis("i", n);
  IterVar r1 = MakeReduceAxis(0, k1, "k1"), r2 = MakeReduceAxis(0, k2, "k2");
  return ComputeDAG(
      {x, compute("S", {i}, ReduceNode::make(Combiner::Sum, x({i.var, r1.var, r2.var}), {r1, r2}))});
}

ComputeDAG Add(int64_t n) {
  Tensor a = placeholder({n}, kF32, "A");
  Tensor b = placeholder({n}, kF32, "B");
  IterVar i = Axis("i", n);
  return ComputeDAG({a, b, compute("C", {i}, a({i.var}) + b({i.var}))});
}

std::vector<State> Sample(const SearchTask& task, int n, uint32_t seed = 1) {
  SketchPolicy policy(task);
  return policy.SampleInitPopulation(n, seed).states;
}

MutationRuleList Only(const std::string& name) {
  for (const auto& r : DefaultCpuMutationRules()) {
    if (r.rule->name() == name) return {r};
  }
  ADD_FAILURE() << "no rule " << name;
  return {};
}

// Every split of a complete state: the lengths multiply to a divisor of the
// extent recorded in the step.
void ExpectSplitsDivide(const State& s) {
  for (const Step& step : s.steps()) {
    const auto* sp = std::get_if<SplitStep>(&step);
    if (sp == nullptr) continue;
    int64_t product = 1;
    for (const auto& l : sp->lengths) {
      ASSERT_TRUE(l.has_value());
      product *= *l;
    }
    ASSERT_TRUE(sp->extent.has_value());
    EXPECT_EQ(*sp->extent % product, 0);
  }
}

int NumSteps(const State& s, const char* kind) {
  int n = 0;
  for (const Step& step : s.steps()) n += std::string(StepRecordName(step)) == kind;
  return n;
}

TEST(MutationRules, DefaultListHasProbabilitiesBesideTheRules) {
  const MutationRuleList rules = DefaultCpuMutationRules();
  ASSERT_EQ(rules.size(), 5u);
  EXPECT_EQ(rules[0].rule->name(), "tile-size");
  EXPECT_DOUBLE_EQ(rules[0].probability, 0.85);
  EXPECT_EQ(rules[1].rule->name(), "register-block");
  EXPECT_EQ(rules[2].rule->name(), "auto-unroll");
  EXPECT_EQ(rules[3].rule->name(), "compute-location");
  EXPECT_EQ(rules[4].rule->name(), "parallel");
}

TEST(MutationRules, TileSizeKeepsProductsAndChangesOneSplit) {
  const SearchTask task = MakeTask(MatmulRelu(24, 32, 16));
  const SearchParams params;
  const SketchContext ctx{task, params};
  int changed = 0;
  std::mt19937 rng(5);
  for (const State& s : Sample(task, 12)) {
    for (int k = 0; k < 6; ++k) {
      MutationResult r = MutateState(ctx, s, Only("tile-size"), &rng);
      if (!r.state) continue;
      ++changed;
      ExpectSplitsDivide(*r.state);
      ASSERT_EQ(r.state->steps().size(), s.steps().size());
      int differing = 0;
      for (size_t i = 0; i < s.steps().size(); ++i) {
        differing += StepToJson(s.steps()[i]) != StepToJson(r.state->steps()[i]);
        if (const auto* sp = std::get_if<SplitStep>(&r.state->steps()[i])) {
          EXPECT_LE(*sp->lengths.back(), params.max_innermost_split_factor);
        }
      }
      EXPECT_EQ(differing, 1);
      if (changed % 8 == 1) ExpectMatchesReference(*r.state);
    }
  }
  EXPECT_GT(changed, 20);
}

TEST(MutationRules, AutoUnrollPicksAnotherCandidate) {
  const SearchTask task = MakeTask(Matmul(16, 16, 16));
  const SearchParams params;
  std::mt19937 rng(2);
  for (const State& s : Sample(task, 6)) {
    MutationResult r = MutateState(SketchContext{task, params}, s, Only("auto-unroll"), &rng);
    ASSERT_TRUE(r.state) << r.failure << ": " << r.message;
    std::string before, after;
    for (size_t i = 0; i < s.steps().size(); ++i) {
      if (const auto* p = std::get_if<PragmaStep>(&s.steps()[i])) {
        before += p->pragma_type;
        after += std::get<PragmaStep>(r.state->steps()[i]).pragma_type;
      }
    }
    EXPECT_NE(before, after);
  }
}

TEST(MutationRules, ComputeLocationMovesTheAttachPoint) {
  const SearchTask task = MakeTask(MatmulRelu(16, 32, 8));
  const SearchParams params;
  std::mt19937 rng(9);
  int moved = 0;
  for (const State& s : Sample(task, 16)) {
    if (NumSteps(s, "CA") == 0) continue;
    MutationResult r = MutateState(SketchContext{task, params}, s, Only("compute-location"), &rng);
    if (!r.state) {
      EXPECT_NE(r.failure.find("compute-location: "), std::string::npos);
      continue;
    }
    if (++moved <= 3) ExpectMatchesReference(*r.state);
  }
  EXPECT_GT(moved, 2);
}

TEST(MutationRules, ParallelChangesTheFusedLoopsAndStaysCorrect) {
  const SearchTask task = MakeTask(MatmulRelu(16, 32, 8), 2);
  const SearchParams params;
  std::mt19937 rng(4);
  int changed = 0;
  for (const State& s : Sample(task, 16, 7)) {
    MutationResult r = MutateState(SketchContext{task, params}, s, Only("parallel"), &rng);
    if (!r.state) continue;
    ++changed;
    EXPECT_NE(StateKey(*r.state), StateKey(s));
    ExpectSplitsDivide(*r.state);
    ExpectMatchesReference(*r.state);
  }
  EXPECT_GT(changed, 2);
}

TEST(MutationRules, StateWithoutChoicesReportsNothing) {
  const SearchTask task = MakeTask(Add(2));
  const SearchParams params;
  std::mt19937 rng(1);
  for (const State& s : Sample(task, 4)) {
    MutationResult r = MutateState(SketchContext{task, params}, s, Only("tile-size"), &rng);
    EXPECT_FALSE(r.state);
    EXPECT_EQ(r.failure, "tile-size: nothing");
  }
}

// A stage fused at level 2 computes one level-2 tile of its consumer per
// iteration: bound inference gives its level-1 tile loops the extent 1
// instead of their split lengths (before, they ran l1 times over a region
// that needs one, guarding the rest away).
TEST(MutationRules, SampledStatesAreNotPaddedAtAnyFusionLevel) {
  const SearchTask task = MakeTask(MatmulRelu(32, 32, 16));
  SearchParams params;
  const InitPopulation pop = SampleInitPopulation(task, SketchPolicy(task).GenerateSketches(), 40, 2, params);
  int level2 = 0;
  for (const State& s : pop.states) {
    EXPECT_DOUBLE_EQ(PaddingRatio(InferBound(s)), 1.0) << s.ToString();
    bool at_level2 = false;
    for (const Step& step : s.steps()) {
      const auto* ca = std::get_if<ComputeAtStep>(&step);
      at_level2 = at_level2 || (ca != nullptr && ca->target_iter_id == 3);
    }
    if (at_level2 && ++level2 <= 2) ExpectMatchesReference(s);
  }
  EXPECT_GT(level2, 2);
}

TEST(EvolutionarySearch, SelectionWeights) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(SelectionWeights({0.5, -1, 2, -inf}), (std::vector<double>{0.5, 0, 2, 0}));
  // Nothing positive: by rank among the finite scores.
  EXPECT_EQ(SelectionWeights({-3, -1, -inf, -2}), (std::vector<double>{1, 3, 0, 2}));
  EXPECT_EQ(SelectionWeights({-inf}), (std::vector<double>{0}));
}

TEST(EvolutionarySearch, ReturnsDistinctUnmeasuredStates) {
  const SearchTask task = MakeTask(Matmul(32, 32, 32));
  SearchParams params;
  params.evolutionary_search_population = 64;
  params.evolutionary_search_num_iters = 2;
  const std::vector<State> init = Sample(task, 48);
  std::unordered_set<std::string> measured;
  for (size_t i = 0; i < init.size(); i += 2) measured.insert(StateKey(init[i]));
  RandomModel model(3);
  EvolutionStats stats;
  const std::vector<State> out = EvolutionarySearch(SketchContext{task, params}, init, 20, &model, measured,
                                                    DefaultCpuMutationRules(), 11, &stats);
  EXPECT_EQ(out.size(), 20u);
  std::set<std::string> keys;
  for (const State& s : out) {
    const std::string key = StateKey(s);
    EXPECT_EQ(measured.count(key), 0u);
    EXPECT_TRUE(keys.insert(key).second);
    ExpectSplitsDivide(s);
  }
  EXPECT_EQ(stats.generations, 3);
  EXPECT_GT(stats.mutated, 0);
  EXPECT_GT(stats.scored, 0);
}

// A cost model that reads programs: counts the states it was given with and
// without their lowered function, and checks that function against lowering
// the state.
class LoweredCountingModel : public RandomModel {
 public:
  using RandomModel::RandomModel;
  std::vector<double> PredictLowered(const SearchTask& task, const std::vector<State>& states,
                                     const std::vector<LoweredPtr>& lowered) override {
    const int without_before = without;
    for (size_t i = 0; i < states.size(); ++i) {
      if (i < lowered.size() && lowered[i]) {
        ++with;
        if (checked++ < 8) EXPECT_EQ(ToString(*lowered[i]), ToString(Lower(states[i])));
      } else {
        ++without;
      }
    }
    if (calls++ == 0) first_call_without = without - without_before;
    return Predict(task, states);
  }
  int with = 0, without = 0, checked = 0;
  int calls = 0, first_call_without = 0;  // the first call: a search's initial population
};

// Every state the search scores was lowered once, by the check that admitted
// it (sampling or mutation), and the model reads that lowered function.
TEST(EvolutionarySearch, ScoresStatesWithTheFunctionTheirCheckLowered) {
  const SearchTask task = MakeTask(Matmul(32, 32, 32));
  SearchParams params;
  params.evolutionary_search_population = 32;
  params.evolutionary_search_num_iters = 2;
  SketchPolicy policy(task);
  const InitPopulation init = policy.SampleInitPopulation(24, 1);
  LoweredCountingModel model(3);
  EvolutionStats stats;
  EvolutionarySearch(SketchContext{task, params}, init.states, 10, &model, {}, DefaultCpuMutationRules(), 11,
                     &stats, init.lowered);
  EXPECT_EQ(model.with, stats.scored);
  EXPECT_EQ(model.without, 0);
  EXPECT_GT(stats.mutated, 0);
}

TEST(EvolutionarySearch, SameSeedSameStatesWithAnyThreadCount) {
  const SearchTask task = MakeTask(Matmul(32, 32, 32));
  std::vector<std::string> runs[2];
  for (int threads : {1, 2}) {
    SearchParams params;
    params.evolutionary_search_population = 48;
    params.evolutionary_search_num_iters = 2;
    params.num_threads = threads;
    const std::vector<State> init = SampleInitPopulation(task, SketchPolicy(task).GenerateSketches(), 32, 7,
                                                         params, DefaultCpuInitRules())
                                        .states;
    RandomModel model(1);
    EvolutionStats stats;
    for (const State& s : EvolutionarySearch(SketchContext{task, params}, init, 10, &model, {},
                                             DefaultCpuMutationRules(), 5, &stats)) {
      runs[threads - 1].push_back(StateKey(s));
    }
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_FALSE(runs[0].empty());
}

SearchParams SmallParams() {
  SearchParams params;
  params.evolutionary_search_population = 48;
  params.evolutionary_search_num_iters = 2;
  params.sample_init_min_population = 8;
  return params;
}

MeasureResult FakeResult(double cost) {
  MeasureResult r;
  r.costs = {cost};
  return r;
}

TEST(SketchPolicyRounds, RoundsNeverRepeatAStateAndLearn) {
  SketchPolicy policy(MakeTask(Matmul(32, 32, 32)), SmallParams(), 3);
  std::set<std::string> seen;
  for (int round = 0; round < 3; ++round) {
    const std::vector<State> batch = policy.ContinueSearchOneRound(8);
    ASSERT_EQ(batch.size(), 8u);
    std::vector<MeasureResult> results;
    for (const State& s : batch) {
      EXPECT_TRUE(seen.insert(StateKey(s)).second);
      EXPECT_TRUE(policy.IsMeasured(s));
      results.push_back(FakeResult(1e-3 * (1 + results.size())));
    }
    policy.RecordMeasured(batch, results);
    EXPECT_GE(policy.last_round().picked_best, 7);
  }
  EXPECT_EQ(policy.cost_model().num_samples(), 24u);
  EXPECT_EQ(policy.num_measured(), 24u);
  EXPECT_GT(policy.last_round().seeded_measured, 0);
}

TEST(SketchPolicyRounds, AnInterruptedRoundLeavesAPolicyThatSearchesOn) {
  SketchPolicy policy(MakeTask(Matmul(32, 32, 32)), SmallParams(), 3);
  {
    InterruptScope scope([] { throw Interrupted(); });
    std::this_thread::sleep_for(std::chrono::duration<double>(2 * kInterruptPollSeconds));
    EXPECT_THROW(policy.ContinueSearchOneRound(8), Interrupted);
  }
  EXPECT_EQ(policy.ContinueSearchOneRound(8).size(), 8u);
}

// The loop's items take a millisecond each: without the interrupt they would
// take seconds.
TEST(Interrupt, ParallelLoopStopsAtAnInterruptOfTheCallingThread) {
  const auto caller = std::this_thread::get_id();
  std::mutex mutex;
  std::set<std::thread::id> checked_on;
  std::atomic<int64_t> done{0};
  constexpr int64_t kItems = 20000;
  {
    InterruptScope scope([&] {
      std::lock_guard<std::mutex> lock(mutex);
      checked_on.insert(std::this_thread::get_id());
      throw Interrupted();
    });
    EXPECT_THROW(RunParallel(kItems, 2,
                             [&](int64_t) {
                               std::this_thread::sleep_for(std::chrono::milliseconds(1));
                               ++done;
                             }),
                 Interrupted);
  }
  EXPECT_LT(done.load(), kItems);
  EXPECT_EQ(checked_on, std::set<std::thread::id>{caller});
  // Without a scope nothing is polled.
  done = 0;
  RunParallel(100, 2, [&](int64_t) { ++done; });
  EXPECT_EQ(done.load(), 100);
}

// With carry-over a round goes on from the last generation of the round
// before: those states join its initial population with what their checks
// lowered them to, and fewer states are sampled at random. The states it
// proposes stay new and compute what the reference computes (prime extents).
TEST(SketchPolicyRounds, CarryOverGoesOnFromTheLastGeneration) {
  SearchParams params = SmallParams();
  params.evolutionary_search_carry_over = true;
  params.carry_over_fresh_share = 0.25;
  auto model = std::make_shared<LoweredCountingModel>(3);
  SketchPolicy policy(MakeTask(Matmul(7, 13, 29)), model, params, 5);
  std::set<std::string> seen;
  for (int round = 0; round < 3; ++round) {
    model->calls = 0;
    const std::vector<State> batch = policy.ContinueSearchOneRound(6);
    ASSERT_EQ(batch.size(), 6u);
    const SearchRoundStats& stats = policy.last_round();
    if (round == 0) {  // nothing to go on from yet: sampled as without carry-over
      EXPECT_EQ(stats.carried, 0);
      EXPECT_GT(stats.sampled, 12);
    } else {
      EXPECT_EQ(stats.carried, params.evolutionary_search_population);
      EXPECT_GT(stats.sampled, 0);
      EXPECT_LE(stats.sampled, 12);
      // In the initial population only the expert schedule and the measured
      // seeds come without a lowered function.
      EXPECT_LE(model->first_call_without, 1 + stats.seeded_measured);
    }
    std::vector<MeasureResult> results;
    for (const State& s : batch) {
      EXPECT_TRUE(seen.insert(StateKey(s)).second);
      results.push_back(FakeResult(1e-3 * (1 + results.size())));
    }
    ExpectMatchesReference(batch.front());
    ExpectMatchesReference(batch.back());
    policy.RecordMeasured(batch, results);
  }
  // A round that breeds no generation leaves nothing to go on from.
  policy.SetGenerations(0);
  policy.ContinueSearchOneRound(4);
  policy.SetGenerations(2);
  policy.ContinueSearchOneRound(4);
  EXPECT_EQ(policy.last_round().carried, 0);
  EXPECT_THROW(policy.SetGenerations(-1), Error);
  // Without carry-over the last generation is not used.
  policy.SetCarryOver(false);
  policy.ContinueSearchOneRound(4);
  EXPECT_EQ(policy.last_round().carried, 0);
  EXPECT_GT(policy.last_round().sampled, 12);
}

TEST(SketchPolicyRounds, TinyTaskRunsOutOfStates) {
  SketchPolicy policy(MakeTask(Add(2)), SmallParams());
  size_t total = 0;
  std::vector<State> batch;
  for (int round = 0; round < 10; ++round) {
    batch = policy.ContinueSearchOneRound(4);
    total += batch.size();
    if (batch.empty()) break;
    policy.RecordMeasured(batch, std::vector<MeasureResult>(batch.size(), FakeResult(1e-6)));
  }
  EXPECT_TRUE(batch.empty());
  EXPECT_GE(total, 1u);
  EXPECT_LE(total, 4u);
  EXPECT_EQ(policy.last_round().tries, 2);  // retried once on empty
}

TEST(SketchPolicyRounds, BaselineIsPlainThenParallelThenInterchanged) {
  const SearchTask task = MakeTask(Matmul(32, 32, 32));
  const std::vector<State> base = BaselineStates(task);
  ASSERT_EQ(base.size(), 3u);
  EXPECT_TRUE(base[0].steps().empty());
  for (int i : {1, 2}) {
    EXPECT_EQ(base[i].stage(2).iter(0).annotation, IteratorAnnotation::Parallel);
    ExpectMatchesReference(base[i]);
  }
  // The third has the reduce loop outside the last spatial loop.
  const Stage& c = base[2].stage(2);
  EXPECT_EQ(c.iter(c.num_iters() - 1).kind, IteratorKind::Spatial);
}

TEST(SketchRulesUpdate, MatmulWithConsumerGetsFusionAndCacheWriteSketches) {
  const SearchTask task = MakeTask(MatmulRelu(32, 32, 32));
  SketchPolicy policy(task);
  const auto sketches = policy.GenerateSketches();
  EXPECT_TRUE(policy.rule_failures().empty());
  int fused = 0, cached = 0, plain = 0;
  std::vector<State> cache_sketches;
  for (const State& s : sketches) {
    if (NumSteps(s, "CHW") > 0) {
      ++cached;
      EXPECT_EQ(s.stage(2).name(), "C.local");
      EXPECT_EQ(s.stage(2).loc, ComputeLocKind::At);
      cache_sketches.push_back(s);
    } else if (s.stage(2).loc == ComputeLocKind::At) {
      ++fused;
    } else {
      ++plain;
    }
  }
  EXPECT_EQ(cached, 2);
  EXPECT_EQ(fused, 2);
  EXPECT_EQ(plain, 1);
  for (const State& s : SampleInitPopulation(task, cache_sketches, 4, 5).states) {
    ExpectMatchesReference(s);
  }
}

TEST(SketchRulesUpdate, RfactorFusesEveryReduceAxisFirst) {
  const SearchTask task = MakeTask(SumOfTwoAxes(2, 16, 24), 8);
  SketchPolicy policy(task);
  const auto sketches = policy.GenerateSketches();
  EXPECT_TRUE(policy.rule_failures().empty()) << policy.rule_failures()[0];
  int factored = 0;
  for (const State& s : sketches) {
    if (NumSteps(s, "RF") == 0) continue;
    ++factored;
    EXPECT_EQ(NumSteps(s, "FU"), 1);
    EXPECT_EQ(s.stage(1).name(), "S.rf");
  }
  EXPECT_EQ(factored, 2);
  SearchParams params;
  params.sample_init_min_population = 8;
  const InitPopulation pop = SampleInitPopulation(task, sketches, 12, 3, params);
  ASSERT_FALSE(pop.states.empty());
  for (const State& s : pop.states) {
    if (NumSteps(s, "RF") > 0) ExpectMatchesReference(s);
  }
}

}  // namespace
}  // namespace autosched
