// A tuning round in one call (search, measure, record, learn) with its
// RoundParams, whoever measures (the Measurer interface), and the one
// peak FLOP/s estimate of the core that the tuner's lines and the
// measurement's plausibility bound share.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "codegen/build.h"
#include "cost_model/random_model.h"
#include "cost_model/xgboost_model.h"
#include "measure/runner.h"
#include "measure/verifier.h"
#include "schedule_test_util.h"
#include "search/rules/search_util.h"
#include "task/peak.h"
#include "tune/tuning_round.h"

namespace autosched {
namespace {

using sched_test::MatmulRelu;

RoundParams MeasureCount(int n) {
  RoundParams p;
  p.num_measure = n;
  return p;
}

// The round tests' task: a 16^3 matmul with ReLU on two cores.
SearchTask SmallTask() { return SearchTask(MatmulRelu(16, 16, 16), Target::Parse("llvm -num-cores=2")); }

// A small search: `population` states bred for `generations` generations
// from at least 16 random ones.
SearchParams SmallSearch(int64_t population = 64, int64_t generations = 1) {
  SearchParams params;
  params.evolutionary_search_population = population;
  params.evolutionary_search_num_iters = generations;
  params.sample_init_min_population = 16;
  return params;
}

// A record log of the test's own in the temporary folder, emptied first.
std::string FreshLogPath(const std::string& name) {
  const std::string path = testing::TempDir() + "/" + name + "_" + std::to_string(getpid()) + ".json";
  std::remove(path.c_str());
  return path;
}

TEST(TuneRound, SearchesMeasuresRecordsAndTeachesThePolicyInOneCall) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  SearchTask task = SmallTask();
  SearchParams params = SmallSearch();
  auto model = std::make_shared<RandomModel>(1);
  SketchPolicy policy(task, model, params, 3);
  BuilderOptions b;
  b.n_parallel = 2;
  RunnerOptions r;
  r.min_repeat_ms = 1;
  LocalMeasurer measurer(b, r, AUTOSCHED_WORKER_PATH);
  const std::string path = FreshLogPath("tune_round");
  RecordWriter writer(path);
  RoundIo io{&measurer, {&writer}, task.ToJson()};

  TuningRound first = MeasureRound(policy, BaselineStates(task, params), RoundParams{}, io);
  EXPECT_FALSE(first.searched);
  TuningRound round = SearchRound(policy, MeasureCount(4), io);
  EXPECT_TRUE(round.searched);
  ASSERT_EQ(round.states.size(), 4u);
  ASSERT_EQ(round.results.size(), 4u);
  ASSERT_EQ(round.keys.size(), 4u);
  for (size_t i = 0; i < round.states.size(); ++i) {
    EXPECT_EQ(round.results[i].error, MeasureError::None) << round.results[i].error_msg;
    EXPECT_EQ(round.keys[i], StateKey(round.states[i]));
    EXPECT_TRUE(policy.IsMeasured(round.states[i]));
  }
  EXPECT_GT(round.measure_seconds, 0);
  EXPECT_GT(round.search_seconds, 0);
  EXPECT_EQ(round.population, 64);  // the policy's own: the round set none
  EXPECT_FALSE(round.transfer.has_value());
  // Every measured state is a record of the log, the round's after the baselines'.
  LoadedRecords loaded = LoadRecords(path);
  ASSERT_EQ(loaded.records.size(), first.states.size() + 4);
  for (size_t i = 0; i < 4; ++i) {
    const Record& rec = loaded.records[first.states.size() + i];
    EXPECT_EQ(StateKey(rec.state), round.keys[i]);
    EXPECT_EQ(rec.result.costs, round.results[i].costs);
  }
  // The cost model got every measurement, and the policy never proposes them again.
  EXPECT_EQ(model->num_samples(), first.states.size() + 4);
  // No states: nothing measured, nothing recorded.
  TuningRound none = MeasureRound(policy, {}, RoundParams{}, io);
  EXPECT_TRUE(none.results.empty());
  EXPECT_EQ(LoadRecords(path).records.size(), first.states.size() + 4);
  std::remove(path.c_str());
}

// A measurer that is not this process's workers (as RayRunner is): it makes
// up a time per state from the state's key, and counts its calls.
class MadeUpMeasurer : public Measurer {
 public:
  std::vector<MeasureResult> Measure(const SearchTask&, const std::vector<State>& states,
                                     SteadyClock::time_point deadline, std::vector<bool>* measured) override {
    ++calls;
    hints.push_back(best_seconds_hint);
    deadlines.push_back(deadline);
    std::vector<MeasureResult> results;
    for (const State& s : states) {
      MeasureResult r;
      r.costs = {1e-3 * static_cast<double>(1 + std::hash<std::string>{}(StateKey(s)) % 7)};
      results.push_back(r);
    }
    if (drop_last && !results.empty()) results.pop_back();
    if (measured != nullptr) measured->clear();
    return results;
  }
  int calls = 0;
  bool drop_last = false;
  std::vector<double> hints;
  std::vector<SteadyClock::time_point> deadlines;
};

TEST(TuneRound, AMeasurerOfAnotherKindDrivesTheSameRound) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  SearchTask task = SmallTask();
  SearchParams params = SmallSearch();
  auto model = std::make_shared<RandomModel>(1);
  SketchPolicy policy(task, model, params, 3);
  MadeUpMeasurer measurer;
  const std::string path = FreshLogPath("made_up_round");
  RecordWriter writer(path);
  RoundIo io{&measurer, {&writer}, task.ToJson()};

  RoundParams round_params = MeasureCount(3);
  round_params.best_seconds = 0.25;
  TuningRound round = SearchRound(policy, round_params, io);
  EXPECT_TRUE(round.searched);
  EXPECT_EQ(measurer.calls, 1);
  EXPECT_EQ(measurer.hints, std::vector<double>{0.25});  // the round's best time reaches the measurer
  EXPECT_EQ(measurer.deadlines[0], kNoDeadline);
  ASSERT_EQ(round.keys.size(), 3u);
  LoadedRecords loaded = LoadRecords(path);
  ASSERT_EQ(loaded.records.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(StateKey(loaded.records[i].state), round.keys[i]);
    EXPECT_EQ(loaded.records[i].result.costs, round.results[i].costs);
    EXPECT_TRUE(policy.IsMeasured(round.states[i]));
  }
  EXPECT_EQ(model->num_samples(), 3u);
  // Results that do not match the states are refused before anything is recorded.
  measurer.drop_last = true;
  EXPECT_THROW(SearchRound(policy, MeasureCount(2), io), Error);
  EXPECT_EQ(LoadRecords(path).records.size(), 3u);
  EXPECT_EQ(model->num_samples(), 3u);
  std::remove(path.c_str());
}

// The round's search parameters hold for that round only: the policy's own
// SearchParams are the same after it.
TEST(TuneRound, RoundParamsSizeThisRoundsSearchAndLeaveThePolicysParams) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  SearchTask task = SmallTask();
  SearchParams params = SmallSearch(96, 3);
  SketchPolicy policy(task, std::make_shared<RandomModel>(1), params, 3);
  MadeUpMeasurer measurer;
  RoundIo io{&measurer, {}, task.ToJson()};

  RoundParams small = MeasureCount(2);
  small.population = 20;
  small.generations = 1;
  small.carry_over = true;
  TuningRound round = SearchRound(policy, small, io);
  EXPECT_EQ(round.population, 20);
  EXPECT_EQ(policy.last_round().evolution.generations, 2);  // the initial population scored, one bred
  EXPECT_EQ(policy.params().evolutionary_search_population, 96);
  EXPECT_EQ(policy.params().evolutionary_search_num_iters, 3);
  EXPECT_FALSE(policy.params().evolutionary_search_carry_over);
  // Out of range: refused before the search, the policy's params untouched.
  RoundParams bad = MeasureCount(2);
  bad.population = 0;
  EXPECT_THROW(SearchRound(policy, bad, io), Error);
  bad.population = std::nullopt;
  bad.generations = -1;
  EXPECT_THROW(SearchRound(policy, bad, io), Error);
  EXPECT_EQ(policy.params().evolutionary_search_population, 96);
  EXPECT_EQ(measurer.calls, 1);
  // Seeds given with a round replace the policy's; the round reports what it kept.
  RoundParams seeded = MeasureCount(2);
  seeded.transfer_seeds = std::vector<State>{round.states[0]};
  TuningRound next = SearchRound(policy, seeded, io);
  ASSERT_TRUE(next.transfer.has_value());
  EXPECT_EQ(next.transfer->given, 1);
  EXPECT_EQ(next.population, 96);
}

// Rounds run at once in threads record in their turns' order, whichever
// measurer finishes first.
TEST(TuneRound, RoundsRunAtOnceRecordInTheirTurns) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  SearchTask task = SmallTask();
  SearchParams params = SmallSearch(32);
  auto model = std::make_shared<RandomModel>(1);
  SketchPolicy first(task, model, params, 3), second(task, model, params, 4);
  struct SlowMeasurer : MadeUpMeasurer {
    std::vector<MeasureResult> Measure(const SearchTask& t, const std::vector<State>& states,
                                       SteadyClock::time_point deadline,
                                       std::vector<bool>* measured) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      return MadeUpMeasurer::Measure(t, states, deadline, measured);
    }
  } slow;
  MadeUpMeasurer quick;
  const std::string path = FreshLogPath("turns");
  RecordWriter writer(path);
  RoundTurns turns;
  RoundIo slow_io{&slow, {&writer}, task.ToJson(), &turns, turns.Take()};
  RoundIo quick_io{&quick, {&writer}, task.ToJson(), &turns, turns.Take()};
  TuningRound slow_round, quick_round;
  std::thread a([&] { slow_round = SearchRound(first, MeasureCount(2), slow_io); });
  std::thread b([&] { quick_round = SearchRound(second, MeasureCount(3), quick_io); });
  a.join();
  b.join();
  LoadedRecords loaded = LoadRecords(path);
  ASSERT_EQ(loaded.records.size(), 5u);
  std::vector<std::string> keys;
  for (const Record& rec : loaded.records) keys.push_back(StateKey(rec.state));
  std::vector<std::string> want = slow_round.keys;
  want.insert(want.end(), quick_round.keys.begin(), quick_round.keys.end());
  EXPECT_EQ(keys, want);  // the first turn's records first
  std::remove(path.c_str());
}

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// A time budget's end cuts the search short wherever it is (sampling,
// breeding, scoring): the round proposes nothing, counts nothing as measured,
// and says it was cut rather than exhausted.
TEST(TuneRound, TheDeadlineCutsTheSearchShortAndNothingCountsAsMeasured) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  SearchTask task(MatmulRelu(64, 64, 64), Target::Parse("llvm -num-cores=2"));
  SearchParams params;
  params.evolutionary_search_population = 2048;  // seconds of search on two cores
  params.evolutionary_search_num_iters = 4;
  SketchPolicy policy(task, std::make_shared<RandomModel>(1), params, 3);
  LocalMeasurer measurer(BuilderOptions{}, RunnerOptions{}, AUTOSCHED_WORKER_PATH);
  for (double seconds : {-1.0, 0.3}) {
    RoundIo io{&measurer, {}, task.ToJson()};
    RoundParams round_params = MeasureCount(16);
    round_params.deadline = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                                     std::chrono::duration<double>(seconds));
    const auto start = SteadyClock::now();
    TuningRound round = SearchRound(policy, round_params, io);
    EXPECT_LT(SecondsSince(start), std::max(0.0, seconds) + 0.5) << seconds;
    EXPECT_TRUE(round.searched);
    EXPECT_TRUE(round.search_cut) << seconds;
    EXPECT_TRUE(policy.last_round().cut_at_deadline);
    EXPECT_TRUE(round.states.empty());
    EXPECT_EQ(round.skipped, 0);
    EXPECT_EQ(policy.num_measured(), 0u);
  }
  // The round's deadline was the round's only: the next one without a deadline searches to its end.
  EXPECT_EQ(policy.deadline(), SteadyClock::time_point::max());
  std::vector<State> states = policy.ContinueSearchOneRound(2);
  EXPECT_EQ(states.size(), 2u);
  EXPECT_FALSE(policy.last_round().cut_at_deadline);
}

// Past the deadline an XGBModel keeps a round's programs for its next update
// instead of training (a session's end is no time for a training).
TEST(TuneRound, PastTheDeadlineAnXGBModelDefersTheRoundsTraining) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  if (!HasXGBoost()) GTEST_SKIP() << "built without XGBoost";
  SearchTask task = SmallTask();
  SearchParams params = SmallSearch();
  XGBModelParams model_params;
  model_params.num_warmup_samples = 2;
  auto model = std::make_shared<XGBModel>(model_params);
  SketchPolicy policy(task, model, params, 3);
  MadeUpMeasurer measurer;  // measures whatever the deadline
  std::vector<State> states = policy.ContinueSearchOneRound(4);
  ASSERT_EQ(states.size(), 4u);
  RoundIo io{&measurer, {}, task.ToJson()};
  RoundParams past;
  past.deadline = SteadyClock::now() - std::chrono::seconds(1);
  TuningRound late = MeasureRound(policy, {states[0], states[1]}, past, io);
  EXPECT_TRUE(late.training_deferred);
  EXPECT_FALSE(model->trained());
  EXPECT_EQ(model->untrained_programs(), 2u);
  EXPECT_FALSE(model->defer_training());  // deferred for that update only
  TuningRound next = MeasureRound(policy, {states[2], states[3]}, RoundParams{}, io);
  EXPECT_FALSE(next.training_deferred);
  EXPECT_TRUE(model->trained());
  EXPECT_EQ(model->untrained_programs(), 0u);
}

TEST(TunePeak, CpuEstimateIsCoresTimesFmaTimesLanesTimesTheReportedClock) {
  HardwareParams hw = DefaultHardwareParams(Target::Parse("llvm"));
  hw.num_cores = 2;
  hw.vector_unit_bytes = 64;
  hw.fma_units = 1;
  SearchTask task(MatmulRelu(64, 64, 64), "", Target::Parse("llvm"), hw);
  PeakFlops est = EstimatePeakFlops(task, PeakUse::kEstimate);
  const double clock = ReportedCpuClockHz();
  EXPECT_GT(clock, 1e8);
  EXPECT_DOUBLE_EQ(est.flops, 2 * 1 * 2 * (64 / 4) * clock);  // float32: 16 lanes
  EXPECT_NE(est.how.find("2 cores x 32 FLOP/cycle"), std::string::npos) << est.how;
  // The upper bound assumes at least two FMA units and 6 GHz: never below the estimate.
  PeakFlops bound = EstimatePeakFlops(task, PeakUse::kUpperBound);
  EXPECT_DOUBLE_EQ(bound.flops, 2 * 2 * 2 * 16 * 6e9);
  EXPECT_GE(bound.flops, est.flops);
  // The measurement's bound is that one.
  EXPECT_DOUBLE_EQ(DerivePlausibilityBound(task).peak_flops, bound.flops);
  // Given peaks win in both uses.
  hw.peak_gflops = 123;
  SearchTask given(task.compute_dag, "", task.target, hw);
  EXPECT_DOUBLE_EQ(EstimatePeakFlops(given, PeakUse::kEstimate).flops, 123e9);
  EXPECT_DOUBLE_EQ(DerivePlausibilityBound(given).peak_flops, 123e9);
}

TEST(TunePeak, GpuEstimateNeedsTheClockTheBoundAssumesOne) {
  HardwareParams hw = DefaultHardwareParams(Target::Parse("opencl -device=nvidia"));
  hw.num_cores = 10;
  hw.clock_mhz = 0;
  SearchTask task(MatmulRelu(64, 64, 64), "", Target::Parse("opencl -device=nvidia"), hw);
  EXPECT_EQ(EstimatePeakFlops(task, PeakUse::kEstimate).flops, 0);
  EXPECT_DOUBLE_EQ(EstimatePeakFlops(task, PeakUse::kUpperBound).flops, 10 * 128 * 2 * 3e9);
  hw.clock_mhz = 1500;
  SearchTask clocked(task.compute_dag, "", task.target, hw);
  EXPECT_DOUBLE_EQ(EstimatePeakFlops(clocked, PeakUse::kEstimate).flops, 10 * 128 * 2 * 1.5e9);
  EXPECT_FALSE(TargetRunsOnCpu(task.target));
  EXPECT_TRUE(TargetRunsOnCpu(Target::Parse("opencl -device=pocl")));
}

}  // namespace
}  // namespace autosched
