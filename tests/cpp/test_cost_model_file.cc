// The trees of a model file are checked before XGBoost reads them: damage
// that keeps the file valid JSON (a child outside its tree, a loop, a split on
// a feature past the last) is refused with an error naming the file, never
// handed to XGBoost, which follows the indices unchecked.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>

#include "cost_model/features.h"
#include "cost_model/model_file.h"
#include "cost_model/xgboost_model.h"
#include "schedule_test_util.h"
#include "test_util.h"

namespace autosched {
namespace {

using test::ErrorOf;

// A booster as XGBoost writes it: one tree of three nodes, a split on feature
// 5 at 0.5 with the leaves 1 (left) and -1 (right).
nlohmann::json OneSplitBooster() {
  const std::string features = std::to_string(NumFeatures());
  nlohmann::json tree = {
      {"id", 0},
      {"tree_param",
       {{"num_nodes", "3"}, {"num_feature", features}, {"num_deleted", "0"}, {"size_leaf_vector", "0"}}},
      {"left_children", {1, -1, -1}},
      {"right_children", {2, -1, -1}},
      {"parents", {2147483647, 0, 0}},
      {"split_indices", {5, 0, 0}},
      {"split_conditions", {0.5, 1.0, -1.0}},
      {"split_type", {0, 0, 0}},
      {"default_left", {1, 0, 0}},
      {"base_weights", {0.0, 0.0, 0.0}},
      {"loss_changes", {0.0, 0.0, 0.0}},
      {"sum_hessian", {0.0, 0.0, 0.0}},
      {"categories", nlohmann::json::array()},
      {"categories_nodes", nlohmann::json::array()},
      {"categories_segments", nlohmann::json::array()},
      {"categories_sizes", nlohmann::json::array()}};
  nlohmann::json model = {
      {"gbtree_model_param", {{"num_trees", "1"}, {"num_parallel_tree", "1"}, {"size_leaf_vector", "0"}}},
      {"tree_info", {0}},
      {"trees", {tree}}};
  return {{"learner",
           {{"attributes", nlohmann::json::object()},
            {"feature_names", nlohmann::json::array()},
            {"feature_types", nlohmann::json::array()},
            {"gradient_booster", {{"name", "gbtree"}, {"model", model}}},
            {"learner_model_param",
             {{"base_score", "0E0"},
              {"boost_from_average", "0"},
              {"num_class", "0"},
              {"num_feature", features},
              {"num_target", "1"}}},
            {"objective", {{"name", "reg:squarederror"}, {"reg_loss_param", {{"scale_pos_weight", "1"}}}}}}},
          {"version", {1, 7, 4}}};
}

nlohmann::json& Tree(nlohmann::json& booster) {
  return booster["learner"]["gradient_booster"]["model"]["trees"][0];
}

TEST(CostModelFile, WellFormedTreesPass) {
  nlohmann::json booster = OneSplitBooster();
  EXPECT_EQ(CheckXGBoostTrees(booster, "m.json", NumFeatures()), 1u);
}

TEST(CostModelFile, DamagedTreesAreRefusedNamingTheFileAndTheProblem) {
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> damage = {
      {[](nlohmann::json& b) { Tree(b)["left_children"][0] = 1000000; },
       "tree 0 node 0: children 1000000 and 2"},
      {[](nlohmann::json& b) { Tree(b)["left_children"][0] = 0; }, "tree 0 node 0: children 0 and 2"},
      {[](nlohmann::json& b) { Tree(b)["right_children"][0] = 1; }, "children 1 and 1"},
      {[](nlohmann::json& b) { Tree(b)["right_children"][1] = 2; }, "tree 0 node 1: children -1 and 2"},
      {[](nlohmann::json& b) {
         Tree(b)["left_children"][2] = 1;
         Tree(b)["right_children"][2] = 2;
       },
       "node 1 is reached twice"},
      {[](nlohmann::json& b) { Tree(b)["parents"][1] = 2; }, "its child 1 names another parent"},
      {[](nlohmann::json& b) { Tree(b)["split_indices"][0] = NumFeatures(); }, "a split on feature"},
      {[](nlohmann::json& b) { Tree(b)["split_indices"][0] = -1; }, "a split on feature -1"},
      {[](nlohmann::json& b) { Tree(b)["left_children"].push_back(-1); },
       "'left_children' is not an array of 3"},
      {[](nlohmann::json& b) { Tree(b)["split_conditions"][1] = "x"; }, "'split_conditions' holds \"x\""},
      {[](nlohmann::json& b) { Tree(b)["tree_param"]["num_nodes"] = "3x"; }, "'num_nodes' is not an integer"},
      {[](nlohmann::json& b) { Tree(b)["id"] = 1; }, "tree 0: its id is not its position"},
      {[](nlohmann::json& b) { Tree(b)["split_type"][0] = 1; }, "a categorical split"},
      {[](nlohmann::json& b) { Tree(b).erase("right_children"); }, "tree 0: no 'right_children'"},
      {[](nlohmann::json& b) { b["learner"]["gradient_booster"]["model"]["tree_info"][0] = 3; }, "tree_info"},
      {[](nlohmann::json& b) {
         b["learner"]["gradient_booster"]["model"]["gbtree_model_param"]["num_trees"] = "2";
       },
       "num_trees is not the number of trees"},
      {[](nlohmann::json& b) { b["learner"]["learner_model_param"]["num_feature"] = "3"; }, "num_feature"},
      {[](nlohmann::json& b) { b["learner"]["learner_model_param"]["num_class"] = "4"; },
       "more than one output"},
      {[](nlohmann::json& b) { b["learner"]["gradient_booster"]["name"] = "dart"; }, "not 'gbtree'"},
      {[](nlohmann::json& b) { b = nlohmann::json::array(); }, "the booster: no 'learner'"},
  };
  for (const auto& [change, why] : damage) {
    nlohmann::json booster = OneSplitBooster();
    change(booster);
    std::string error = ErrorOf([&] { CheckXGBoostTrees(booster, "m.json", NumFeatures()); });
    EXPECT_NE(error.find("cost model file 'm.json' is damaged ("), std::string::npos) << why << ": " << error;
    EXPECT_NE(error.find(why), std::string::npos) << why << ": " << error;
  }
}

// The check accepts what XGBoost reads, and a model file with damaged trees
// never reaches it: the error names the file.
TEST(CostModelFile, XGBoostReadsCheckedTreesAndNeverTheDamagedOnes) {
  if (!HasXGBoost()) GTEST_SKIP() << "built without XGBoost";
  const std::string path = ::testing::TempDir() + "/autosched_one_split.json";
  nlohmann::json doc = {{"params", nlohmann::json::object()},
                        {"feature_names", FeatureNames()},
                        {"best_round", 0},
                        {"booster", OneSplitBooster()}};
  WriteModelFile(path, "xgb", doc);
  SearchTask task(sched_test::Matmul(8), Target::Parse("llvm"));
  XGBModel model;
  model.SetBase(path);
  std::vector<double> scores = model.Predict(task, {State(task.compute_dag)});
  ASSERT_EQ(scores.size(), 1u);
  for (auto [best_round, why] : {std::pair{1, "best_round 1 of 1 trees"}, std::pair{-1, "best_round -1"}}) {
    doc["best_round"] = best_round;
    WriteModelFile(path, "xgb", doc);
    EXPECT_NE(ErrorOf([&] { XGBModel().SetBase(path); }).find(why), std::string::npos);
  }
  doc["best_round"] = 0;
  Tree(doc["booster"])["left_children"][0] = 7;
  WriteModelFile(path, "xgb", doc);
  for (const std::function<void()>& load : std::vector<std::function<void()>>{
           [&] { XGBModel().SetBase(path); }, [&] { XGBModel().Load(path); }}) {
    EXPECT_NE(
        ErrorOf(load).find("cost model file '" + path + "' is damaged (tree 0 node 0: children 7 and 2"),
        std::string::npos)
        << ErrorOf(load);
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace autosched
