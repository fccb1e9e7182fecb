// Transfer seeds: the structure key ignores sizes only, split lengths are
// fitted to new extents near the old ones, and re-fitted expert schedules of
// one matmul compute the reference on matmuls of awkward shapes.
#include <gtest/gtest.h>

#include "schedule_test_util.h"
#include "search/evolution/transfer_seeds.h"
#include "search/expert/expert_schedule.h"
#include "search/sketch_policy.h"

namespace autosched {
namespace {

using sched_test::ExpectMatchesReference;
using sched_test::MakeTask;
using sched_test::Matmul;
using sched_test::MatmulRelu;

TEST(StructureKey, SameForOtherShapesOnly) {
  EXPECT_EQ(Matmul(64).structure_key(), Matmul(13, 1, 7).structure_key());
  EXPECT_NE(Matmul(64).workload_key(), Matmul(13, 1, 7).workload_key());
  EXPECT_NE(Matmul(64).structure_key(), MatmulRelu(64, 64, 64).structure_key());
}

TEST(FitSplitLengths, DividesTheNewExtentNearTheOldLengths) {
  EXPECT_EQ(FitSplitLengths({8, 4}, 56, 64), (std::vector<int64_t>{7, 4}));
  EXPECT_EQ(FitSplitLengths({8, 4}, 64, 64), (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(FitSplitLengths({16}, 13, 64), (std::vector<int64_t>{13}));
  EXPECT_EQ(FitSplitLengths({16}, 13, 8), (std::vector<int64_t>{1}));
  EXPECT_EQ(FitSplitLengths({4, 2, 8}, 1, 64), (std::vector<int64_t>{1, 1, 1}));
  for (int64_t extent : {1, 2, 7, 31, 60, 97, 128}) {
    const std::vector<int64_t> lengths = FitSplitLengths({2, 4, 16}, extent, 16);
    int64_t product = 1;
    for (int64_t l : lengths) product *= l;
    EXPECT_EQ(extent % product, 0) << extent;
    EXPECT_LE(lengths.back(), 16);
  }
}

TEST(RefitState, ExpertScheduleOfOneMatmulRunsOnOthers) {
  const SearchTask source = MakeTask(Matmul(64, 48, 32));
  const SearchParams params;
  const ExpertSchedule expert = MakeExpertSchedule(source, params);
  ASSERT_TRUE(expert.state.has_value()) << expert.reason;
  int kept = 0;
  for (const auto& [n, m, k] : std::vector<std::tuple<int, int, int>>{{13, 17, 7}, {1, 31, 5}, {40, 1, 1}}) {
    const SearchTask task = MakeTask(Matmul(n, m, k));
    const RefitResult r = RefitState(SketchContext{task, params}, *expert.state);
    if (!r.state) {
      EXPECT_NE(r.failure, "dissimilar");
      continue;
    }
    EXPECT_EQ(r.state->init_dag().workload_key(), task.compute_dag.workload_key());
    ExpectMatchesReference(*r.state);
    ++kept;
  }
  EXPECT_GE(kept, 2);
  const SearchTask other = MakeTask(MatmulRelu(64, 48, 32));
  EXPECT_EQ(RefitState(SketchContext{other, params}, *expert.state).failure, "dissimilar");
}

}  // namespace
}  // namespace autosched
