// LocalMeasurer: worker processes build and run candidates; crashes, hangs and
// wrong results become typed errors of that candidate only.
#include <gtest/gtest.h>

#include <chrono>

#include "codegen/build.h"
#include "measure/runner.h"
#include "schedule_test_util.h"
#include "test_util.h"

namespace autosched {
namespace {

using sched_test::MatmulRelu;

BuilderOptions Builder() {
  BuilderOptions b;
  b.n_parallel = 2;
  return b;
}

RunnerOptions Runner() {
  RunnerOptions r;
  r.timeout = 5;
  r.min_repeat_ms = 1;
  return r;
}

std::vector<State> Candidates(const ComputeDAG& dag, int n) {
  std::vector<State> states;
  for (int i = 0; i < n; ++i) {
    State s(dag);
    int c = s.StageIndex("C");
    s = s.Split(c, 0, {std::optional<int64_t>(1 + i % 4)});
    states.push_back(s);
  }
  return states;
}

TEST(MeasureRunner, GoodStatesVerifyAndGetPlausibleTimes) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  SearchTask task(MatmulRelu(16, 16, 16), Target::Parse("llvm"));
  LocalMeasurer m(Builder(), Runner(), AUTOSCHED_WORKER_PATH);
  std::vector<MeasureResult> results = m.Measure(task, Candidates(task.compute_dag, 3));
  ASSERT_EQ(results.size(), 3u);
  for (const MeasureResult& r : results) {
    EXPECT_EQ(r.error, MeasureError::None) << r.error_msg;
    ASSERT_EQ(r.costs.size(), 1u);
    EXPECT_GT(r.costs[0], 0);
    EXPECT_GT(r.all_cost, 0);
    EXPECT_GT(r.timestamp, 1.6e9);
  }
  // Workers are kept for the next batch of the same task.
  int started = m.processes_started();
  m.Measure(task, Candidates(task.compute_dag, 2));
  EXPECT_EQ(m.processes_started(), started);
}

TEST(MeasureRunner, StepsThatDoNotReplayAreAnInstantiationError) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  // The steps split stage 'C' (stage 2), which the task's DAG (Q = P + 1) does not have.
  Tensor p = placeholder({8}, DataType::Float(32), "P");
  IterVar i = sched_test::Axis("i", 8);
  Tensor q = compute("Q", {i}, p({i.var}) + Expr(1.0f));
  SearchTask task(ComputeDAG({p, q}), Target::Parse("llvm"));
  std::vector<State> states = {Candidates(MatmulRelu(8, 8, 8), 1)[0], State(task.compute_dag)};
  LocalMeasurer m(Builder(), Runner(), AUTOSCHED_WORKER_PATH);
  std::vector<MeasureResult> r = m.Measure(task, states);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].error, MeasureError::Instantiation) << r[0].error_msg;
  EXPECT_NE(r[0].error_msg.find("the steps do not apply: step 0"), std::string::npos) << r[0].error_msg;
  EXPECT_EQ(r[1].error, MeasureError::None) << r[1].error_msg;
}

TEST(MeasureRunner, InjectedFaultsAreRecordedAndTheBatchGoesOn) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  SearchTask task(MatmulRelu(8, 8, 8), Target::Parse("llvm"));
  RunnerOptions r = Runner();
  r.timeout = 1;
  r.faults = {0.2, 0.2, 0.1, 0.2};
  r.fault_seed = 3;
  LocalMeasurer m(Builder(), r, AUTOSCHED_WORKER_PATH);
  std::vector<MeasureResult> results = m.Measure(task, Candidates(task.compute_dag, 12));
  std::map<MeasureError, int> seen;
  for (const MeasureResult& res : results) {
    ++seen[res.error];
    if (res.error == MeasureError::Runtime) {
      EXPECT_NE(res.error_msg.find("SIGSEGV"), std::string::npos) << res.error_msg;
    }
    if (res.error == MeasureError::None) EXPECT_FALSE(res.costs.empty());
  }
  for (MeasureError e : {MeasureError::None, MeasureError::WrongAnswer, MeasureError::Runtime,
                         MeasureError::RunTimeout, MeasureError::Implausible}) {
    EXPECT_GT(seen[e], 0) << MeasureErrorName(e);
  }
  EXPECT_EQ(seen[MeasureError::Unknown], 0);
}

// A time budget's end abandons a run in progress (its worker is killed): the
// batch returns at the deadline, not at the run's timeout, nothing measured.
TEST(MeasureRunner, ARunInProgressAtTheDeadlineIsAbandoned) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  SearchTask task(MatmulRelu(8, 8, 8), Target::Parse("llvm"));
  RunnerOptions r = Runner();
  r.timeout = 60;
  r.faults.hang = 1;  // every run loops until its timeout
  LocalMeasurer m(Builder(), r, AUTOSCHED_WORKER_PATH);
  const auto start = SteadyClock::now();
  std::vector<bool> measured;
  std::vector<MeasureResult> results =
      m.Measure(task, Candidates(task.compute_dag, 3), start + std::chrono::milliseconds(1500), &measured);
  const double took = std::chrono::duration<double>(SteadyClock::now() - start).count();
  EXPECT_LT(took, 1.5 + 1.0);
  ASSERT_EQ(results.size(), 3u);
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_FALSE(measured[i]);
    EXPECT_EQ(results[i].error, MeasureError::Unknown);
    EXPECT_NE(results[i].error_msg.find("deadline"), std::string::npos) << results[i].error_msg;
  }
}

TEST(MeasureRunner, MissingWorkerIsAClearError) {
  const std::string message = test::ErrorOf([] {
    LocalMeasurer m(Builder(), Runner(), "/nonexistent/autosched_worker");
    m.Measure(SearchTask(MatmulRelu(2, 2, 2), Target::Parse("llvm")), {State(MatmulRelu(2, 2, 2))});
  });
  EXPECT_TRUE(test::Contains(message, "/nonexistent/autosched_worker")) << message;
}

TEST(MeasureRunner, InvalidOptionsAreNamed) {
  RunnerOptions r = Runner();
  r.number = 0;
  EXPECT_THROW(LocalMeasurer(Builder(), r, AUTOSCHED_WORKER_PATH), Error);
  r = Runner();
  r.faults.crash = 0.8;
  r.faults.hang = 0.8;
  EXPECT_THROW(LocalMeasurer(Builder(), r, AUTOSCHED_WORKER_PATH), Error);
}

}  // namespace
}  // namespace autosched
