// The schedule layer at its edges: split lengths and fused ranges past 32
// bits, rfactor of fused reduce axes (checked against the reference evaluator
// through the loop interpreter), reduce axes that do not start at 0, printed
// steps with duplicate stage names, and hardware parameters from JSON.
#include <gtest/gtest.h>

#include "schedule_test_util.h"
#include "support/error.h"
#include "task/search_task.h"
#include "test_util.h"

namespace autosched {
namespace {

using sched_test::Axis;
using sched_test::ExpectMatchesReference;

using test::ErrorOf;

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// [A, Out] with Out[i] = sum over k in [k_lo, kk), l in [0, ll) of A[i, k, l] * A[i, k, 0].
ComputeDAG TwoAxisSum(int64_t n, int64_t kk, int64_t ll, int64_t k_lo = 0) {
  const DataType f32 = DataType::Float(32);
  Tensor a = placeholder({n, kk, ll}, f32, "A");
  IterVar i = Axis("i", n);
  IterVar k = MakeReduceAxis(k_lo, kk - k_lo, "k"), l = MakeReduceAxis(0, ll, "l");
  Expr body = a({i.var, k.var, l.var}) * a({i.var, k.var, Expr(0)});
  Tensor out = compute("Out", {i}, ReduceNode::make(Combiner::Sum, body, {k, l}));
  return ComputeDAG({a, out});
}

constexpr int kOut = 1;  // stage ids of TwoAxisSum: A 0, Out 1

TEST(ScheduleEdges, SplitLengthsStayWithin32Bits) {
  State s(TwoAxisSum(16, 4, 3));
  const int64_t max = kMaxIterExtent;
  EXPECT_TRUE(Has(ErrorOf([&] { s.Split(kOut, 0, {max + 1}); }), "length 2147483648, more than 2147483647"));
  EXPECT_TRUE(Has(ErrorOf([&] { s.Split(kOut, 0, {(int64_t{1} << 32) + 4}); }), "length 4294967300"));
  EXPECT_TRUE(Has(ErrorOf([&] { s.Split(kOut, 0, {int64_t{1} << 62}); }), "32-bit"));
  EXPECT_TRUE(Has(ErrorOf([&] { s.Split(kOut, 0, {-1}); }), "bad factor -1"));
  EXPECT_TRUE(Has(ErrorOf([&] { s.Split(kOut, 0, {1 << 16, 1 << 16}); }), "multiply to more than"));
  EXPECT_TRUE(Has(ErrorOf([&] { s.Split(kOut, 0, {max, max, max}); }), "multiply to more than"));
  EXPECT_EQ(s.Split(kOut, 0, {max}).stage(kOut).iter(1).extent, max);
  EXPECT_EQ(s.Split(kOut, 0, {std::nullopt, max}).stage(kOut).num_iters(), 5);
  // The same checks on the JSON path.
  const auto record = nlohmann::json::parse("[[\"SP\", 1, 0, 16, [4294967300], true]]");
  EXPECT_TRUE(Has(ErrorOf([&] { State::FromJson(s.init_dag(), record); }), "step 0 (split)"));
}

TEST(ScheduleEdges, CoveredRangesAndFusesStayWithin32Bits) {
  const DataType f32 = DataType::Float(32);
  Tensor big = placeholder({kMaxIterExtent}, f32, "Big");
  IterVar i = Axis("i", kMaxIterExtent);
  Tensor twice = compute("T", {i}, big({i.var}) * Expr(2.0f));
  State s(ComputeDAG({big, twice}));
  EXPECT_TRUE(Has(ErrorOf([&] { s.Split(1, 0, {(int64_t{1} << 30) + 1}); }), "covers 2147483650 iterations"));

  Tensor x = placeholder({1 << 20}, f32, "X"), y = placeholder({1 << 20}, f32, "Y");
  IterVar o = Axis("o", 1);
  IterVar k = MakeReduceAxis(0, 1 << 20, "k"), l = MakeReduceAxis(0, 1 << 20, "l");
  Tensor outer = compute("O", {o}, ReduceNode::make(Combiner::Sum, x({k.var}) * y({l.var}), {k, l}));
  State r(ComputeDAG({x, y, outer}));
  EXPECT_TRUE(Has(ErrorOf([&] { r.Fuse(2, {1, 2}); }), "more than 2147483647 iterations"));
  // A follow_fused_split over huge lengths saturates and is refused, not wrapped around.
  State f = r.Split(2, 1, {int64_t{1} << 20}).Split(2, 3, {int64_t{1} << 20});
  EXPECT_TRUE(Has(ErrorOf([&] { f.Apply(FollowFusedSplitStep{2, 0, {0, 1}, 0, true}); }), "more than"));
}

TEST(ScheduleEdges, RfactorOfFusedReduceAxes) {
  for (int64_t k_lo : {0, 2}) {
    const ComputeDAG dag = TwoAxisSum(3, 7, 5, k_lo);
    const State fused = State(dag).Fuse(kOut, {1, 2});  // i, k@l
    ExpectMatchesReference(fused.Apply(RfactorStep{kOut, 1, 0}));
    ExpectMatchesReference(fused.Apply(RfactorStep{kOut, 1, 1}));
    const State split = fused.Split(kOut, 1, {4});  // i, k@l.0, k@l.1 (non-dividing)
    ExpectMatchesReference(split.Apply(RfactorStep{kOut, 1, 0}));
    ExpectMatchesReference(split.Apply(RfactorStep{kOut, 2, 1}));
    const State three = fused.Split(kOut, 1, {3, 2});  // i, k@l.0, k@l.1, k@l.2
    const State rf = three.Apply(RfactorStep{kOut, 2, 0});
    ExpectMatchesReference(rf);
    // The rf stage: the factor part as a spatial axis, the other two parts still reduced.
    const Stage& st = rf.stage(rf.StageIndex("Out.rf"));
    ASSERT_EQ(st.num_iters(), 4);
    EXPECT_EQ(st.iter(0).name, "k@l.1");
    EXPECT_EQ(st.iter(0).kind, IteratorKind::Spatial);
    EXPECT_EQ(st.iter(2).kind, IteratorKind::Reduce);
    EXPECT_EQ(st.iter(3).kind, IteratorKind::Reduce);
  }
}

TEST(ScheduleEdges, RfactorOfAFuseAcrossSplitPartsOfTwoAxes) {
  State s(TwoAxisSum(2, 5, 7));
  s = s.Split(kOut, 1, {2});  // i, k.0, k.1, l
  s = s.Split(kOut, 3, {3});  // i, k.0, k.1, l.0, l.1
  s = s.Fuse(kOut, {2, 3});   // i, k.0, k.1@l.0, l.1
  ExpectMatchesReference(s.Apply(RfactorStep{kOut, 2, 1}));
  ExpectMatchesReference(s.Apply(RfactorStep{kOut, 1, 0}));
}

TEST(ScheduleEdges, ReduceAxisNotStartingAtZero) {
  const ComputeDAG dag = TwoAxisSum(3, 9, 2, 4);
  ExpectMatchesReference(State(dag));
  ExpectMatchesReference(State(dag).Split(kOut, 1, {2}));
  ExpectMatchesReference(State(dag).Split(kOut, 1, {2}).Apply(RfactorStep{kOut, 2, 0}));
}

TEST(ScheduleEdges, PrintedStepsAddressDuplicateNamesByIndex) {
  const DataType f32 = DataType::Float(32);
  Tensor a = placeholder({6}, f32, "A");
  IterVar i = Axis("i", 6), j = Axis("i", 6);
  Tensor x = compute("compute", {i}, a({i.var}) + Expr(1.0f));
  Tensor y = compute("compute", {j}, x({j.var}) * Expr(2.0f));
  State s = State(ComputeDAG({a, y})).Split(2, 0, {4}).Split(1, 0, {2});
  s = s.Apply(CacheWriteStep{2, "local"});
  const std::string code = s.PrintPythonSteps();
  EXPECT_TRUE(Has(code, "s.split(2, 0, [4])\ns.split(1, 0, [2])\ns.cache_write(2, \"local\")")) << code;
}

TEST(ScheduleEdges, HardwareParamsFromJsonAreValidated) {
  EXPECT_TRUE(Has(ErrorOf([] {
                    FieldsFromJson<HardwareParams>(nlohmann::json{{"num_cores", -2}});
                  }),
                  "num_cores must not be negative (-1: take it from the target), got -2"));
  EXPECT_TRUE(Has(ErrorOf([] {
                    FieldsFromJson<HardwareParams>(nlohmann::json{{"warp_size", "8"}});
                  }),
                  "warp_size must be an integer, got \"8\""));
  HardwareParams bad;
  bad.max_vthread_extent = -3;
  EXPECT_TRUE(Has(ErrorOf([&] { SearchTask(TwoAxisSum(2, 2, 2), "", Target::Parse("llvm"), bad); }),
                  "max_vthread_extent must not be negative"));
  SearchTask task(TwoAxisSum(2, 2, 2), Target::Parse("llvm -num-cores=2"));
  nlohmann::json doc = task.ToJson();
  doc["hardware_params"]["cache_line_bytes"] = -64;
  EXPECT_TRUE(Has(ErrorOf([&] { SearchTask::FromJson(doc); }), "cache_line_bytes must not be negative"));
}

}  // namespace
}  // namespace autosched
