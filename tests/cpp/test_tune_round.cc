// A tuning round in one call (search, measure, record, learn), and the one
// peak FLOP/s estimate of the core that the tuner's lines and the
// measurement's plausibility bound share.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "codegen/build.h"
#include "cost_model/random_model.h"
#include "cost_model/xgboost_model.h"
#include "measure/verifier.h"
#include "schedule_test_util.h"
#include "search/rules/search_util.h"
#include "task/peak.h"
#include "tune/tuning_round.h"

namespace autosched {
namespace {

using sched_test::MatmulRelu;

// The round tests' task and search: a 16^3 matmul with ReLU on two cores, a
// population of 64 bred for one generation from at least 16 random states.
class TuneRound : public testing::Test {
 protected:
  void SetUp() override {
    if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
    params_.evolutionary_search_population = 64;
    params_.evolutionary_search_num_iters = 1;
    params_.sample_init_min_population = 16;
  }
  void TearDown() override {
    if (!log_path_.empty()) std::remove(log_path_.c_str());
  }

  // A record log of the test's own in the temporary folder, removed before and after the test.
  const std::string& FreshLogPath(const std::string& name) {
    log_path_ = testing::TempDir() + "/" + name + "_" + std::to_string(getpid()) + ".json";
    std::remove(log_path_.c_str());
    return log_path_;
  }
  static BuilderOptions TwoBuildsAtATime() {
    BuilderOptions b;
    b.n_parallel = 2;
    return b;
  }
  static RunnerOptions QuickRuns() {
    RunnerOptions r;
    r.min_repeat_ms = 1;
    return r;
  }

  SearchTask task_{MatmulRelu(16, 16, 16), Target::Parse("llvm -num-cores=2")};
  SearchParams params_;
  std::string log_path_;
};

TEST_F(TuneRound, SearchesMeasuresRecordsAndTeachesThePolicyInOneCall) {
  auto model = std::make_shared<RandomModel>(1);
  SketchPolicy policy(task_, model, params_, 3);
  LocalMeasurer measurer(TwoBuildsAtATime(), QuickRuns(), AUTOSCHED_WORKER_PATH);
  const std::string& path = FreshLogPath("tune_round");
  RecordWriter writer(path);
  RoundIo io{&measurer, {&writer}, task_.ToJson()};

  TuningRound first = MeasureRound(policy, BaselineStates(task_, params_), io);
  EXPECT_FALSE(first.searched);
  TuningRound round = SearchRound(policy, 4, io);
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
  TuningRound none = MeasureRound(policy, {}, io);
  EXPECT_TRUE(none.results.empty());
  EXPECT_EQ(LoadRecords(path).records.size(), first.states.size() + 4);
}

TEST_F(TuneRound, RecordRoundRecordsAndTeachesStatesMeasuredElsewhere) {
  auto model = std::make_shared<RandomModel>(1);
  SketchPolicy policy(task_, model, params_, 3);
  LocalMeasurer measurer(TwoBuildsAtATime(), QuickRuns(), AUTOSCHED_WORKER_PATH);
  const std::string& path = FreshLogPath("record_round");
  RecordWriter writer(path);
  RoundIo io{nullptr, {&writer}, task_.ToJson()};  // no measurer: the states were measured elsewhere

  std::vector<State> states = policy.ContinueSearchOneRound(3);
  ASSERT_EQ(states.size(), 3u);
  std::vector<MeasureResult> results = measurer.Measure(task_, states);
  TuningRound round = RecordRound(policy, states, results, io);
  EXPECT_FALSE(round.searched);
  EXPECT_EQ(round.measure_seconds, 0);
  ASSERT_EQ(round.keys.size(), 3u);
  LoadedRecords loaded = LoadRecords(path);
  ASSERT_EQ(loaded.records.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(round.keys[i], StateKey(states[i]));
    EXPECT_EQ(StateKey(loaded.records[i].state), round.keys[i]);
    EXPECT_EQ(loaded.records[i].result.costs, results[i].costs);
    EXPECT_TRUE(policy.IsMeasured(states[i]));
  }
  EXPECT_EQ(model->num_samples(), 3u);
  // Results that do not match the states are refused before anything is recorded.
  std::vector<State> more = policy.ContinueSearchOneRound(2);
  ASSERT_EQ(more.size(), 2u);
  EXPECT_THROW(RecordRound(policy, more, {results[0]}, io), Error);
  EXPECT_EQ(LoadRecords(path).records.size(), 3u);
  EXPECT_EQ(model->num_samples(), 3u);
}

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// A time budget's end cuts the search short wherever it is (sampling,
// breeding, scoring): the round proposes nothing, counts nothing as measured,
// and says it was cut rather than exhausted.
TEST_F(TuneRound, TheDeadlineCutsTheSearchShortAndNothingCountsAsMeasured) {
  SearchTask task(MatmulRelu(64, 64, 64), Target::Parse("llvm -num-cores=2"));
  SearchParams params;
  params.evolutionary_search_population = 2048;  // seconds of search on two cores
  params.evolutionary_search_num_iters = 4;
  SketchPolicy policy(task, std::make_shared<RandomModel>(1), params, 3);
  LocalMeasurer measurer(BuilderOptions{}, RunnerOptions{}, AUTOSCHED_WORKER_PATH);
  for (double seconds : {-1.0, 0.3}) {
    RoundIo io{&measurer, {}, task.ToJson()};
    io.deadline = SteadyClock::now() +
                  std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(seconds));
    const auto start = SteadyClock::now();
    TuningRound round = SearchRound(policy, 16, io);
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
TEST_F(TuneRound, PastTheDeadlineAnXGBModelDefersTheRoundsTraining) {
  if (!HasXGBoost()) GTEST_SKIP() << "built without XGBoost";
  XGBModelParams model_params;
  model_params.num_warmup_samples = 2;
  auto model = std::make_shared<XGBModel>(model_params);
  SketchPolicy policy(task_, model, params_, 3);
  LocalMeasurer measurer(BuilderOptions{}, QuickRuns(), AUTOSCHED_WORKER_PATH);
  std::vector<State> states = policy.ContinueSearchOneRound(4);
  ASSERT_EQ(states.size(), 4u);
  std::vector<MeasureResult> results = measurer.Measure(task_, states);
  RoundIo past{nullptr, {}, task_.ToJson()};
  past.deadline = SteadyClock::now() - std::chrono::seconds(1);
  TuningRound late = RecordRound(policy, {states[0], states[1]}, {results[0], results[1]}, past);
  EXPECT_TRUE(late.training_deferred);
  EXPECT_FALSE(model->trained());
  EXPECT_EQ(model->untrained_programs(), 2u);
  EXPECT_FALSE(model->defer_training());  // deferred for that update only
  RoundIo open{nullptr, {}, task_.ToJson()};
  TuningRound next = RecordRound(policy, {states[2], states[3]}, {results[2], results[3]}, open);
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
