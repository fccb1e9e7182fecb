// Cost models: labels, the pack-sum and rank objectives, RandomModel, and XGBModel
// on a synthetic cost (states whose cost is known from their tiling), with
// save / load and the errors of bad model files; an interrupt stops feature
// extraction and training and leaves a usable model.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "cost_model/random_model.h"
#include "cost_model/training_data.h"
#include "cost_model/xgboost_model.h"
#include "schedule_test_util.h"
#include "support/error.h"
#include "support/interrupt.h"
#include "test_util.h"

namespace autosched {
namespace {

using sched_test::Axis;
using sched_test::Matmul;

using test::ErrorOf;

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/autosched_" + name; }

// Matmul states tiled (ti, tj), vectorized or not, with a made-up cost that
// prefers wide vectors and tiles of i near 8: a function of the loop nest
// that the features see.
struct Synthetic {
  SearchTask task{Matmul(64), Target::Parse("llvm -num-cores=2")};
  std::vector<State> states;
  std::vector<double> costs;

  Synthetic() {
    for (int64_t ti : {1, 2, 4, 8, 16, 32}) {
      for (int64_t tj : {1, 2, 4, 8, 16, 32, 64}) {
        for (bool vec : {false, true}) {
          State s(task.compute_dag);
          s = s.Split(2, 0, {ti});  // io ii j k
          s = s.Split(2, 2, {tj});  // io ii jo ji k
          s = s.Reorder(2, {0, 2, 4, 1, 3});
          if (vec) s = s.Annotate(2, 4, IteratorAnnotation::Vectorize);
          double lanes = vec ? static_cast<double>(std::min<int64_t>(tj, 16)) : 1;
          states.push_back(s);
          costs.push_back(1e-3 / lanes * (1 + std::abs(std::log2(static_cast<double>(ti)) - 3)));
        }
      }
    }
  }
  std::vector<MeasuredProgram> Measured(size_t begin, size_t end) const {
    std::vector<MeasuredProgram> out;
    for (size_t i = begin; i < end; ++i) out.push_back({task, states[i], {costs[i], costs[i]}, true});
    return out;
  }
};

// The synthetic states from `first` on, split in two: those `for_training` picks as measured programs, the
// others as test states with their labels (throughput).
struct TrainTestSplit {
  std::vector<MeasuredProgram> train;
  std::vector<State> test;
  std::vector<double> test_labels;
};

template <typename Pick>
TrainTestSplit SplitStates(const Synthetic& data, size_t first, Pick for_training) {
  TrainTestSplit split;
  for (size_t i = first; i < data.states.size(); ++i) {
    if (for_training(i)) {
      split.train.push_back(data.Measured(i, i + 1)[0]);
    } else {
      split.test.push_back(data.states[i]);
      split.test_labels.push_back(1 / data.costs[i]);
    }
  }
  return split;
}

TEST(CostModelTraining, LabelsArePerTaskThroughput) {
  TrainingSet set;
  ProgramFeatures one_row;
  one_row.rows = 1;
  one_row.values.assign(NumFeatures(), 0.f);
  set.Add("a", one_row, 2.0, true);
  set.Add("a", one_row, 1.0, true);
  set.Add("a", one_row, 5.0, false);  // failed: label 0
  set.Add("b", one_row, 4.0, true);   // another task: its own best
  ProgramFeatures no_rows;
  no_rows.error = "lowering failed";
  set.Add("b", no_rows, 0.5, true);  // counts for b's best, gives no rows
  EXPECT_EQ(set.num_tasks(), 2u);
  EXPECT_EQ(set.TrainablePrograms(), (std::vector<size_t>{0, 1, 2, 3}));
  PackedRows rows = set.Pack(set.TrainablePrograms());
  EXPECT_EQ(rows.labels, (std::vector<float>{0.5f, 1.0f, 0.0f, 0.125f}));
  EXPECT_EQ(rows.task, (std::vector<int>{0, 0, 0, 1}));
  EXPECT_EQ(rows.num_rows(), 4u);
  // On a log scale of 8 halvings: the best stays 1, failures 0, 1/256 of the best speed reaches 0.
  EXPECT_EQ(set.Pack(set.TrainablePrograms(), 8).labels, (std::vector<float>{0.875f, 1.0f, 0.0f, 0.625f}));
  set.Add("a", one_row, 1000.0, true);
  EXPECT_EQ(set.Pack({5}, 8).labels, (std::vector<float>{0.0f}));
}

TEST(CostModelTraining, PackSumGradientsAndMetrics) {
  PackedRows rows;
  rows.program = {0, 0, 1};
  rows.labels = {1.0f, 0.2f};
  std::vector<double> sums = PackSum({0.25f, 0.5f, 0.5f}, rows.program, 2);
  EXPECT_EQ(sums, (std::vector<double>{0.75, 0.5}));
  std::vector<float> grad, hess;
  PackSumGradients(sums, rows, /*weight_power=*/0, 0.05, &grad, &hess);
  EXPECT_NEAR(grad[0], -0.25, 1e-6);  // both rows of program 0 share its error
  EXPECT_NEAR(grad[1], -0.25, 1e-6);
  EXPECT_NEAR(grad[2], 0.3, 1e-6);
  EXPECT_EQ(hess, (std::vector<float>{1, 1, 1}));
  PackSumGradients(sums, rows, /*weight_power=*/1, 0.05, &grad, &hess);
  EXPECT_NEAR(grad[2], 0.3 * 0.2, 1e-6);
  EXPECT_NEAR(hess[2], 0.2, 1e-6);
  EXPECT_NEAR(PackSumRmse(sums, rows.labels), std::sqrt((0.0625 + 0.09) / 2), 1e-6);
  // Pairs within a group only; ties of labels skipped; ties of scores half right.
  EXPECT_EQ(PairwiseAccuracy({3, 2, 1}, {3, 2, 1}, {0, 0, 0}), 1.0);
  EXPECT_EQ(PairwiseAccuracy({1, 2, 3}, {3, 2, 1}, {0, 0, 0}), 0.0);
  EXPECT_EQ(PairwiseAccuracy({1, 1}, {2, 1}, {0, 0}), 0.5);
  EXPECT_EQ(PairwiseAccuracy({1, 2}, {2, 1}, {0, 1}), 0.5);  // no pair
  EXPECT_EQ(PairwiseAccuracy({1, 2, 5, 4}, {1, 2, 2, 1}, {0, 0, 1, 1}), 1.0);
}

TEST(CostModelTraining, RankPairsAndGradients) {
  PackedRows rows;
  rows.program = {0, 0, 1, 2, 3, 4};
  rows.labels = {1.0f, 0.5f, 0.5f, 0.25f, 0.75f};
  rows.task = {0, 0, 0, 1, 1};
  RankPairs pairs = MakeRankPairs(rows, /*weight_power=*/0, 0.05, /*max_partners=*/64, 1);
  // Task 0: (0, 1) and (0, 2), the tie (1, 2) skipped; task 1: (4, 3), the better first. Weight: the label
  // difference over the task's programs - 1.
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs.better, (std::vector<int>{0, 0, 4}));
  EXPECT_EQ(pairs.worse, (std::vector<int>{1, 2, 3}));
  EXPECT_NEAR(pairs.weight[0], 0.5 / 2, 1e-6);
  EXPECT_NEAR(pairs.weight[2], 0.5 / 1, 1e-6);
  std::vector<float> grad, hess;
  std::vector<double> equal(5, 0.0);
  RankGradients(equal, rows, pairs, &grad, &hess);
  // Equal scores: each pair pushes its better program up and the worse down by w / 2.
  EXPECT_NEAR(grad[0], -(0.25 + 0.25) / 2, 1e-6);  // both rows of program 0
  EXPECT_NEAR(grad[1], grad[0], 1e-9);
  EXPECT_NEAR(grad[2], 0.25 / 2, 1e-6);
  EXPECT_NEAR(grad[4], 0.5 / 2, 1e-6);
  EXPECT_NEAR(grad[5], -0.5 / 2, 1e-6);
  EXPECT_NEAR(hess[5], 0.5 / 4, 1e-6);
  EXPECT_NEAR(RankLoss(equal, pairs), std::log(2.0), 1e-9);
  // Scores that order every pair right by a wide margin: small gradients, small loss.
  std::vector<double> right = {10, 0, 0, 0, 10};
  RankGradients(right, rows, pairs, &grad, &hess);
  EXPECT_LT(std::abs(grad[0]), 1e-4);
  EXPECT_LT(RankLoss(right, pairs), 1e-4);
  EXPECT_GT(RankLoss({0, 10, 10, 10, 0}, pairs), 5);
  // A task of more programs than max_partners + 1: each program gets max_partners sampled partners.
  PackedRows big;
  for (int p = 0; p < 40; ++p) {
    big.program.push_back(p);
    big.labels.push_back(static_cast<float>(p + 1) / 40);
    big.task.push_back(0);
  }
  EXPECT_EQ(MakeRankPairs(big, 0, 0.05, 8, 1).size(), 40u * 8);
  EXPECT_EQ(MakeRankPairs(big, 0, 0.05, 39, 1).size(), 40u * 39 / 2);
}

TEST(CostModelRandom, SeededAndResumedFromFile) {
  Synthetic data;
  RandomModel a(7), b(7), c(8);
  std::vector<double> sa = a.Predict(data.task, data.states);
  EXPECT_EQ(sa, b.Predict(data.task, data.states));
  EXPECT_NE(sa, c.Predict(data.task, data.states));
  for (double s : sa) EXPECT_TRUE(s >= 0 && s < 1);
  a.Update(data.Measured(0, 5));
  EXPECT_EQ(a.num_samples(), 5u);
  std::string path = TempPath("random.json");
  a.Save(path);
  RandomModel d(0);
  d.Load(path);
  EXPECT_EQ(d.num_samples(), 5u);
  EXPECT_EQ(d.Predict(data.task, data.states), a.Predict(data.task, data.states));
  std::remove(path.c_str());
}

TEST(CostModelXGB, ErrorWithoutXGBoost) {
  if (HasXGBoost()) GTEST_SKIP() << "built with XGBoost";
  EXPECT_NE(ErrorOf([] { XGBModel m; }).find("built without it"), std::string::npos);
}

TEST(CostModelXGB, LearnsASyntheticCostAndRoundTrips) {
  if (!HasXGBoost()) GTEST_SKIP() << "built without XGBoost";
  Synthetic data;
  XGBModelParams params;
  params.num_warmup_samples = 20;
  XGBModel model(params);
  // Warm-up: random scores until 20 programs.
  model.Update(data.Measured(0, 10));
  EXPECT_FALSE(model.trained());
  // Train on every other state, test on the rest.
  auto [train, test, test_labels] = SplitStates(data, 10, [](size_t i) { return i % 2 == 0; });
  model.Update(train);
  ASSERT_TRUE(model.trained());
  EXPECT_GT(model.last_training().rounds, 0);
  EXPECT_EQ(model.last_training().programs, 10 + train.size());
  std::vector<double> scores = model.Predict(data.task, test);
  double accuracy = PairwiseAccuracy(scores, test_labels, std::vector<int>(test.size(), 0));
  EXPECT_GT(accuracy, 0.8);

  std::string path = TempPath("xgb.json");
  model.Save(path);
  XGBModel loaded;
  loaded.Load(path);
  EXPECT_TRUE(loaded.trained());
  EXPECT_EQ(loaded.params().num_warmup_samples, 20);
  EXPECT_EQ(loaded.Predict(data.task, test), scores);
  // A state that fails to lower scores below everything.
  State broken = State(data.task.compute_dag).Split(2, 0, {std::nullopt});
  EXPECT_EQ(loaded.Predict(data.task, {broken})[0], kInvalidScore);
  std::remove(path.c_str());
}

TEST(CostModelXGB, RankObjectiveLearnsTheOrderAndTheBaseKeepsIt) {
  if (!HasXGBoost()) GTEST_SKIP() << "built without XGBoost";
  Synthetic data;
  XGBModelParams params;
  params.num_warmup_samples = 0;
  params.objective = "rank";
  XGBModel model(params);
  // Both the vectorized and the scalar state of a tiling on one side.
  auto [train, test, test_labels] = SplitStates(data, 0, [](size_t i) { return (i / 2) % 2 == 0; });
  model.Update(train);
  ASSERT_TRUE(model.trained());
  EXPECT_GT(model.last_training().rounds, 1);
  double accuracy =
      PairwiseAccuracy(model.Predict(data.task, test), test_labels, std::vector<int>(test.size(), 0));
  EXPECT_GT(accuracy, 0.8);
  // Scores are Bradley-Terry strengths (exp of the pack sums): positive, as the search's selection needs.
  for (double score : model.Predict(data.task, test)) EXPECT_GT(score, 0);
  std::string path = TempPath("xgb_rank.json");
  model.Save(path);
  XGBModel loaded;
  loaded.Load(path);
  EXPECT_EQ(loaded.params().objective, "rank");
  // A model boosting on top of a rank base learns to rank too: its trees add to scores of no scale.
  XGBModel session;
  EXPECT_EQ(session.params().objective, "regression");
  session.SetBase(path);
  EXPECT_EQ(session.params().objective, "rank");
  std::remove(path.c_str());
  XGBModelParams bad;
  bad.objective = "lambdamart";
  EXPECT_NE(ErrorOf([&] { XGBModel m(bad); }).find("objective must be 'regression' or 'rank'"),
            std::string::npos);
}

TEST(CostModelFeatures, ParallelForStopsAtAnInterruptOfTheCallingThread) {
  std::atomic<size_t> done{0};
  constexpr size_t kItems = 20000;
  {
    InterruptScope scope([] { throw Interrupted(); });
    EXPECT_THROW(ParallelFor(kItems, 2,
                             [&](size_t) {
                               std::this_thread::sleep_for(std::chrono::milliseconds(1));
                               ++done;
                             }),
                 Interrupted);
  }
  EXPECT_LT(done.load(), kItems);
}

TEST(CostModelXGB, AnInterruptedUpdateLeavesAUsableModel) {
  if (!HasXGBoost()) GTEST_SKIP() << "built without XGBoost";
  Synthetic data;
  XGBModelParams params;
  params.num_warmup_samples = 20;
  XGBModel model(params);
  model.Update(data.Measured(0, 40));
  ASSERT_TRUE(model.trained());
  {
    InterruptScope scope([] { throw Interrupted(); });
    std::this_thread::sleep_for(std::chrono::duration<double>(2 * kInterruptPollSeconds));
    EXPECT_THROW(model.Update(data.Measured(40, data.states.size())), Interrupted);
  }
  EXPECT_EQ(model.Predict(data.task, data.states).size(), data.states.size());
  model.Update(data.Measured(40, data.states.size()));
  EXPECT_TRUE(model.trained());
  EXPECT_EQ(model.Predict(data.task, data.states).size(), data.states.size());
}

TEST(CostModelXGB, BadModelFilesAreRefusedClearly) {
  if (!HasXGBoost()) GTEST_SKIP() << "built without XGBoost";
  XGBModel model;
  EXPECT_NE(ErrorOf([&] { model.Load(TempPath("missing.json")); }).find("cannot open"), std::string::npos);
  std::string path = TempPath("bad.json");
  std::ofstream(path) << "{not json";
  EXPECT_NE(ErrorOf([&] { model.Load(path); }).find("not valid JSON"), std::string::npos);
  RandomModel(1).Save(path);
  EXPECT_NE(ErrorOf([&] { model.Load(path); }).find("holds a 'random' model"), std::string::npos);
  model.Save(path);  // untrained: no booster, but a valid file
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(path));
  doc["feature_names"].erase(doc["feature_names"].begin());
  std::ofstream(path) << doc.dump();
  EXPECT_NE(ErrorOf([&] { model.Load(path); }).find("trained on other features"), std::string::npos);
  doc["version"] = 99;
  std::ofstream(path) << doc.dump();
  EXPECT_NE(ErrorOf([&] { model.Load(path); }).find("version 99"), std::string::npos);
  std::remove(path.c_str());
  XGBModelParams bad;
  bad.eta = 0;
  EXPECT_NE(ErrorOf([&] { XGBModel m(bad); }).find("eta must be in (0, 1]"), std::string::npos);
}

}  // namespace
}  // namespace autosched
