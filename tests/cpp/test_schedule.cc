#include <gtest/gtest.h>

#include "lower/stmt_functor.h"
#include "schedule/infer_bound.h"
#include "schedule_test_util.h"
#include "support/error.h"
#include "test_util.h"

namespace autosched {
namespace {

using sched_test::ExpectMatchesReference;
using sched_test::MatmulRelu;

// Stage ids of MatmulRelu: A 0, B 1, C 2, E 3, D 4.
constexpr int kC = 2, kE = 3, kD = 4;

using test::ErrorOf;

TEST(Schedule, InitStateAndPrint) {
  State s(MatmulRelu(8, 6, 4));
  ASSERT_EQ(s.stages().size(), 5u);
  EXPECT_EQ(s.stage(kC).name(), "C");
  EXPECT_EQ(s.stage(kC).num_iters(), 3);
  EXPECT_EQ(s.stage(kC).iter(2).kind, IteratorKind::Reduce);
  const std::string text = s.ToString();
  EXPECT_NE(text.find("Placeholder: A, B"), std::string::npos) << text;
  EXPECT_NE(text.find("for k (0,4)"), std::string::npos) << text;
  EXPECT_NE(text.find("D = ..."), std::string::npos) << text;
}

TEST(Schedule, DefaultStateLowersCorrectly) { ExpectMatchesReference(State(MatmulRelu(7, 5, 3))); }

TEST(Schedule, SplitReorderFuseAnnotate) {
  State s(MatmulRelu(10, 9, 7));
  s = s.Split(kC, 0, {4});     // i.0 i.1 j k
  s = s.Split(kC, 2, {2, 2});  // i.0 i.1 j.0 j.1 j.2 k
  s = s.Split(kC, 5, {3});     // ... k.0 k.1
  EXPECT_EQ(s.stage(kC).iter(0).extent, 3);
  EXPECT_EQ(s.stage(kC).iter(2).name, "j.0");
  EXPECT_EQ(s.stage(kC).iter(2).extent, 3);
  s = s.Reorder(kC, {0, 2, 5, 1, 6, 3, 4});  // i.0 j.0 k.0 i.1 k.1 j.1 j.2
  s = s.Fuse(kC, {0, 1});
  EXPECT_EQ(s.stage(kC).iter(0).name, "i.0@j.0");
  EXPECT_EQ(s.stage(kC).iter(0).extent, 9);
  s = s.Annotate(kC, 0, IteratorAnnotation::Parallel);
  s = s.Annotate(kC, 5, IteratorAnnotation::Vectorize);
  s = s.Annotate(kC, 3, IteratorAnnotation::Unroll);
  s = s.Split(kD, 1, {4}, false);  // nparts
  s = s.Annotate(kD, 2, IteratorAnnotation::Vectorize);
  EXPECT_NE(s.ToString().find("parallel i.0@j.0 (0,9)"), std::string::npos) << s.ToString();
  ExpectMatchesReference(s);
}

TEST(Schedule, ComputeAtAndInline) {
  State s(MatmulRelu(10, 9, 7));
  s = s.Split(kD, 0, {4});
  s = s.Split(kD, 2, {5});  // D: i.0 i.1 j.0 j.1
  s = s.Reorder(kD, {0, 2, 1, 3});
  s = s.ComputeInline(kE);
  s = s.ComputeAt(kC, kD, 1);  // C inside D's j.0 loop
  State bounded = InferBound(s);
  EXPECT_EQ(bounded.stage(kC).iter(0).extent, 4);
  EXPECT_EQ(bounded.stage(kC).iter(1).extent, 5);
  EXPECT_EQ(bounded.stage(kC).iter(2).extent, 7);
  ExpectMatchesReference(s);
  // A producer attached inside a split of its consumer, then split itself.
  s = s.Split(kC, 1, {2});
  ExpectMatchesReference(s);
}

TEST(Schedule, ComputeAtThroughInlinedStageAndPragma) {
  State s(MatmulRelu(6, 6, 5));
  s = s.ComputeInline(kE);
  s = s.Split(kD, 1, {4});
  s = s.ComputeAt(kC, kD, 0);
  s = s.Apply(PragmaStep{kD, 0, "auto_unroll_max_step$16"});
  EXPECT_EQ(s.stage(kD).auto_unroll_max_step, 16);
  ExpectMatchesReference(s);
}

TEST(Schedule, PackLayout) {
  for (int64_t lanes : {4, 5}) {  // dividing the 20 columns of B, and not
    State s(MatmulRelu(6, 20, 7));
    s = s.Apply(PackLayoutStep{1, {kC}, 1, lanes});
    const int p = s.StageIndex("B.pack"), c = s.StageIndex("C");
    EXPECT_EQ(s.stage(p).op->shape, (std::vector<int64_t>{(20 + lanes - 1) / lanes, 7, lanes}));
    EXPECT_LT(p, c);
    s = s.Annotate(p, 0, IteratorAnnotation::Parallel);
    s = s.Annotate(p, 2, IteratorAnnotation::Vectorize);
    s = s.Split(c, 1, {lanes});
    ExpectMatchesReference(s);
    const State again = State::FromJson(State(MatmulRelu(6, 20, 7)).init_dag(), s.ToJson());
    EXPECT_EQ(again.ToString(), s.ToString());
  }
  State bad(MatmulRelu(6, 20, 7));
  EXPECT_THROW(bad.Apply(PackLayoutStep{1, {kC}, 2, 4}), Error);
  EXPECT_THROW(bad.Apply(PackLayoutStep{1, {kC}, 1, 0}), Error);
  EXPECT_THROW(bad.Apply(PackLayoutStep{1, {kE}, 1, 4}), Error);
}

TEST(Schedule, CacheWriteRfactorCacheRead) {
  State s(MatmulRelu(10, 9, 7));
  s = s.Apply(CacheWriteStep{kC, "local"});
  ASSERT_EQ(s.stages().size(), 6u);
  const int local = s.StageIndex("C.local"), c = s.StageIndex("C");
  EXPECT_EQ(s.stage(local).scope, MemScope::Local);
  s = s.Split(c, 0, {4});
  s = s.ComputeAt(local, c, 0);
  ExpectMatchesReference(s);

  State r(MatmulRelu(5, 4, 10));
  r = r.Split(kC, 2, {4});
  r = r.Apply(RfactorStep{kC, 3, 0});
  const int rf = r.StageIndex("C.rf");
  EXPECT_EQ(r.stage(rf).op->shape, (std::vector<int64_t>{4, 5, 4}));
  ExpectMatchesReference(r);

  State cr(MatmulRelu(6, 5, 4));
  cr = cr.Apply(CacheReadStep{0, "shared", {kC}});
  const int shared = cr.StageIndex("A.shared");
  EXPECT_EQ(cr.stage(shared).scope, MemScope::Shared);
  cr = cr.Split(cr.StageIndex("C"), 0, {2});
  cr = cr.ComputeAt(shared, cr.StageIndex("C"), 0);
  ExpectMatchesReference(cr);

  // cache_write of a stage attached elsewhere keeps its attach point.
  State at(MatmulRelu(6, 5, 4));
  at = at.ComputeInline(kE);
  at = at.ComputeAt(kC, kD, 1);
  at = at.Apply(CacheWriteStep{kC, "local"});
  const Stage& moved = at.stage(at.StageIndex("C"));
  EXPECT_EQ(moved.loc, ComputeLocKind::At);
  EXPECT_EQ(at.stage(moved.attach_stage).nodes[moved.attach_node].name, "j");
  ExpectMatchesReference(at);
}

TEST(Schedule, StorageAlignPadsStrides) {
  State s(MatmulRelu(6, 5, 4));
  s = s.Apply(StorageAlignStep{kC, 0, 8, 1});
  LoweredFunc f = LowerStateToStmt(s);
  const auto* alloc = f.body.as<AllocateNode>();
  ASSERT_NE(alloc, nullptr);
  EXPECT_EQ(alloc->buffer->name, "C");
  EXPECT_EQ(alloc->buffer->strides, (std::vector<int64_t>{9, 1}));  // 5 padded to 9 = 8 + 1
  ExpectMatchesReference(s);
}

// The strides of the buffer `name` allocates in the lowered function.
std::vector<int64_t> AllocatedStrides(const LoweredFunc& f, const std::string& name) {
  std::vector<int64_t> strides;
  PostOrderVisitStmt(f.body, [&](const Stmt& x) {
    if (const auto* a = x.as<AllocateNode>(); a && a->buffer->name == name) strides = a->buffer->strides;
  });
  return strides;
}

TEST(Schedule, StorageTransposeStoresTheLastDimensionOutside) {
  State s(MatmulRelu(6, 5, 4));
  s = s.Apply(CacheReadStep{0, "shared", {kC}});
  const int shared = s.StageIndex("A.shared"), c = s.StageIndex("C");
  s = s.Split(c, 0, {2});
  s = s.ComputeAt(shared, c, 0);  // a region of 2 rows x 4 columns of A
  State transposed = s.Apply(PragmaStep{shared, 0, "storage_transpose"});
  EXPECT_EQ(AllocatedStrides(LowerStateToStmt(transposed), "A.shared"), (std::vector<int64_t>{1, 2}));
  ExpectMatchesReference(transposed);
  // Padding applies to the stride of the dimension stored outside: 2 made 5 (1 modulo 4).
  State padded = transposed.Apply(StorageAlignStep{shared, 1, 4, 1});
  EXPECT_EQ(AllocatedStrides(LowerStateToStmt(padded), "A.shared"), (std::vector<int64_t>{1, 5}));
  ExpectMatchesReference(padded);
  EXPECT_NE(ErrorOf([&] {
              s.Apply(PragmaStep{c, 0, "storage_transpose"});
            }).find("scope 'shared'"),
            std::string::npos);
}

TEST(Schedule, ReplayAndJsonRoundTrip) {
  ComputeDAG dag = MatmulRelu(10, 9, 7);
  State s(dag);
  s = s.Apply(CacheWriteStep{kC, "local"});
  const int c = s.StageIndex("C");
  s = s.Split(c, 0, {2, 2});
  s = s.Apply(FollowSplitStep{c, 3, 1, 2});
  s = s.Annotate(c, 0, IteratorAnnotation::Parallel);
  s = s.ComputeAt(s.StageIndex("C.local"), c, 1);
  s = s.ComputeInline(s.StageIndex("E"));
  State replayed = s.Replay();
  EXPECT_EQ(replayed.ToString(), s.ToString());
  State parsed = State::FromJson(dag, nlohmann::json::parse(s.ToJson().dump()));
  EXPECT_TRUE(parsed.SameSteps(s));
  EXPECT_EQ(parsed.ToString(), s.ToString());
  ExpectMatchesReference(parsed);
  const std::string py = s.PrintPythonSteps();
  EXPECT_NE(py.find("s.cache_write(\"C\", \"local\")"), std::string::npos) << py;
  EXPECT_NE(py.find("s.follow_split(\"C\", 3, 1, 2)"), std::string::npos) << py;
}

TEST(Schedule, UnknownLengthsInRecordNeedFilling) {
  State s(MatmulRelu(8, 8, 8));
  s = s.Split(kC, 0, {std::nullopt});
  EXPECT_EQ(s.stage(kC).iter(0).extent, -1);
  EXPECT_NE(s.ToString().find("(None)"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { LowerStateToStmt(s); }).find("unknown extent"), std::string::npos);
}

TEST(Schedule, InvalidStepsNameTheStep) {
  State s(MatmulRelu(8, 8, 8));
  EXPECT_NE(ErrorOf([&] { s.Annotate(kC, 2, IteratorAnnotation::Vectorize); }).find("step 0 (annotation)"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { s.Split(kC, 0, {0}); }).find("bad factor"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { s.Split(9, 0, {2}); }).find("stage 9 does not exist"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { s.Split(kC, 7, {2}); }).find("no iterator 7"), std::string::npos);
  State p = s.Annotate(kC, 0, IteratorAnnotation::Parallel);
  EXPECT_NE(ErrorOf([&] { p.Annotate(kC, 1, IteratorAnnotation::Parallel); }).find("nested parallel"),
            std::string::npos);
  // C is read by E, which stays at the root: attaching C to D breaks that.
  const std::string dep = ErrorOf([&] { s.ComputeAt(kC, kD, 0); });
  EXPECT_NE(dep.find("step 0 (compute_at)"), std::string::npos) << dep;
  EXPECT_NE(dep.find("breaks a dependence"), std::string::npos) << dep;
  EXPECT_NE(ErrorOf([&] { s.ComputeInline(kC); }).find("reduction"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { s.ComputeInline(kD); }).find("output"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { s.Fuse(kC, {1, 2}); }).find("spatial and reduce"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { StepFromJson(nlohmann::json::parse("[\"XX\", 1]")); }).find("unknown step"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { StepFromJson(nlohmann::json::parse("[\"SP\", 1]")); }).find("SP"),
            std::string::npos);
}

}  // namespace
}  // namespace autosched
