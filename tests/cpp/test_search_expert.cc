// Register-block plans and the expert schedule: blocks fit the register file
// the hardware parameters describe, the expert's state computes what the
// reference computes on awkward shapes, and every search round's initial
// population holds it.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "cost_model/random_model.h"
#include "schedule/infer_bound.h"
#include "schedule_test_util.h"
#include "search/expert/expert_schedule.h"
#include "search/rules/cpu/register_block.h"
#include "search/rules/mutation_rules.h"
#include "search/rules/search_util.h"
#include "search/sketch_policy.h"

namespace autosched {
namespace {

using sched_test::ExpectMatchesReference;
using sched_test::Matmul;
using sched_test::MatmulRelu;

SearchTask TaskWith(const ComputeDAG& dag, int64_t vector_bytes, int64_t registers, int64_t fma_units = 2) {
  HardwareParams hw = DefaultHardwareParams(Target::Parse("llvm"));
  hw.num_cores = 4;
  hw.vector_unit_bytes = vector_bytes;
  hw.num_vector_registers = registers;
  hw.fma_units = fma_units;
  hw.l1_cache_bytes = 32 * 1024;
  hw.l2_cache_bytes = 1024 * 1024;
  return SearchTask(dag, "", Target::Parse("llvm"), hw, "test");
}

RegisterBlockPlan PlanOf(const SearchTask& task, const std::string& stage) {
  const SearchParams params;
  const State s(task.compute_dag);
  return PlanRegisterBlocks({task, params}, s.stage(s.StageIndex(stage)));
}

TEST(RegisterBlocks, FamilyFitsTheRegisterFileOfTheTarget) {
  for (int64_t width : {32, 64}) {
    const int64_t registers = width == 64 ? 32 : 16, lanes = width / 4;
    const RegisterBlockPlan plan = PlanOf(TaskWith(Matmul(96, 96, 96), width, registers), "C");
    EXPECT_EQ(plan.vec_axis, 1);  // j: contiguous in C
    EXPECT_EQ(plan.row_axis, 0);  // i: B's vectors serve every row
    EXPECT_EQ(plan.lanes, lanes);
    ASSERT_FALSE(plan.family.empty());
    for (const RegisterBlock& b : plan.family) {
      EXPECT_LE(b.rows * b.vectors + b.vectors + 1, registers) << b.rows << " x " << b.vec_length;
      EXPECT_EQ(b.vectors, (b.vec_length + lanes - 1) / lanes);
      EXPECT_EQ(96 % b.vec_length, 0);
      EXPECT_EQ(96 % b.rows, 0);
    }
  }
  // AVX2's 16 registers: 6 rows of 2 vectors of 8; AVX-512's 32: 8 rows of 2 vectors of 16 on 1024.
  const RegisterBlock avx2 = PlanOf(TaskWith(Matmul(96, 96, 96), 32, 16), "C").family.front();
  EXPECT_EQ(avx2.rows, 6);
  EXPECT_EQ(avx2.vec_length, 16);
  const RegisterBlock avx512 = PlanOf(TaskWith(Matmul(1024, 1024, 1024), 64, 32), "C").family.front();
  EXPECT_EQ(avx512.rows, 8);
  EXPECT_EQ(avx512.vec_length, 32);
}

TEST(RegisterBlocks, AwkwardExtentsStillGetABlock) {
  // A prime number of columns above 64: non-dividing whole vectors; a prime
  // number of rows: non-dividing rows; a single column: no block, as no
  // operand is contiguous along the rows (each lane would load another row).
  const RegisterBlockPlan wide = PlanOf(TaskWith(Matmul(12, 67, 8), 64, 32), "C");
  ASSERT_FALSE(wide.family.empty());
  EXPECT_EQ(wide.family.front().vec_length % 16, 0);
  EXPECT_FALSE(wide.family.front().vec_divides);
  const RegisterBlockPlan tall = PlanOf(TaskWith(Matmul(67, 32, 8), 64, 32), "C");
  EXPECT_GE(tall.family.front().rows, 4);
  const RegisterBlockPlan column = PlanOf(TaskWith(Matmul(5, 1, 8), 64, 32), "C");
  EXPECT_EQ(column.vec_axis, -1);
  EXPECT_TRUE(column.family.empty());
  // One column whose operand is contiguous along the rows (B^T's layout): a block of 5 lanes.
  Tensor a = placeholder({8, 5}, DataType::Float(32), "A"), b = placeholder({8, 1}, DataType::Float(32), "B");
  IterVar i = sched_test::Axis("i", 5), j = sched_test::Axis("j", 1);
  IterVar k = MakeReduceAxis(0, 8, "k");
  Tensor c =
      compute("C", {i, j}, ReduceNode::make(Combiner::Sum, a({k.var, i.var}) * b({k.var, j.var}), {k}));
  const RegisterBlockPlan contiguous = PlanOf(TaskWith(ComputeDAG({a, b, c}), 64, 32), "C");
  EXPECT_EQ(contiguous.vec_axis, 0);
  EXPECT_EQ(contiguous.family.front().vec_length, 5);
}

TEST(RegisterBlocks, RowsThatDivideNothingWhereTheDivisorsLeaveRegistersIdle) {
  // 128 rows on AVX2's 16 registers: the dividing counts allow 8 x 1 or 4 x 2
  // vectors (8 accumulators, bound by the FMA's latency); 5 or 6 rows of 2
  // vectors keep 10-12 busy, with the last block's rows guarded.
  const RegisterBlock avx2 = PlanOf(TaskWith(Matmul(128, 128, 64), 32, 16), "C").family.front();
  EXPECT_FALSE(avx2.rows_divide);
  EXPECT_GE(avx2.accumulators(), 10);
  EXPECT_EQ(avx2.vec_length, 16);
  // 96 rows: 6 divides them. 32 rows: a block of 5 or 6 would waste more than
  // a sixteenth of them. 49 rows (Winograd's tiles): fewer than 64, where 10
  // rows ran slower than 7. AVX-512's 32 registers: 8 rows of 2 vectors
  // divide 128.
  for (const auto& [rows, width, registers] :
       {std::tuple<int64_t, int64_t, int64_t>{96, 32, 16}, {32, 32, 16}, {49, 32, 16}, {128, 64, 32}}) {
    for (const RegisterBlock& b : PlanOf(TaskWith(Matmul(rows, 128, 64), width, registers), "C").family) {
      EXPECT_TRUE(b.rows_divide) << rows << " rows: " << b.rows << " x " << b.vec_length;
    }
  }
}

TEST(ExpertSchedule, MatchesReferenceOnAwkwardShapes) {
  for (const ComputeDAG& dag : {Matmul(13, 67, 7), Matmul(1, 1, 5), Matmul(67, 5, 3), Matmul(1, 70, 9),
                                MatmulRelu(9, 35, 11), Matmul(128, 32, 5)}) {
    for (int64_t width : {32, 64}) {
      const SearchTask task = TaskWith(dag, width, width == 64 ? 32 : 16);
      const ExpertSchedule e = MakeExpertSchedule(task);
      ASSERT_TRUE(e.state.has_value()) << e.reason;
      EXPECT_TRUE(e.reason.empty());
      ExpectMatchesReference(*e.state);
      EXPECT_TRUE(State::FromJson(dag, e.state->ToJson()).SameSteps(*e.state));
    }
  }
}

// Remembers every state the search asks it to score.
class RecordingModel : public RandomModel {
 public:
  std::vector<double> Predict(const SearchTask& task, const std::vector<State>& states) override {
    for (const State& s : states) seen.insert(StateKey(s));
    return RandomModel::Predict(task, states);
  }
  std::set<std::string> seen;
};

TEST(ExpertSchedule, EveryRoundStartsFromIt) {
  const SearchTask task = TaskWith(Matmul(64, 48, 32), 64, 32);
  SearchParams params;
  params.evolutionary_search_population = 16;
  params.evolutionary_search_num_iters = 0;  // the initial population only
  params.sample_init_min_population = 8;
  auto model = std::make_shared<RecordingModel>();
  SketchPolicy policy(task, model, params, 1);
  const ExpertSchedule& expert = policy.Expert();
  ASSERT_TRUE(expert.state.has_value()) << expert.reason;
  policy.ContinueSearchOneRound(4);
  EXPECT_TRUE(model->seen.count(StateKey(*expert.state)));
}

// The register block of the tiled stage of a sampled or mutated matmul
// state: (rows, vector length) of its innermost i and j parts, and whether
// they are annotated as a block (j vectorized, i unrolled).
struct SampledBlock {
  int64_t rows = 0, vec_length = 0;
  bool annotated = false;
};
SampledBlock BlockOf(const State& state, const std::string& stage) {
  const State bounded = InferBound(state);
  const Stage& st = bounded.stage(bounded.StageIndex(stage));
  const int row = InnermostLeafOf(st, 0), vec = InnermostLeafOf(st, 1);
  return {st.iter(row).extent, st.iter(vec).extent,
          st.iter(vec).annotation == IteratorAnnotation::Vectorize &&
              (st.iter(row).extent == 1 || st.iter(row).annotation == IteratorAnnotation::Unroll)};
}

std::string TiledStage(const State& s) {
  for (const Stage& st : s.stages()) {
    if (st.name() == "C.local") return "C.local";
  }
  return "C";
}

TEST(RegisterBlockSampling, MostSampledTilesAreBlocksOfTheHostRegisterFile) {
  // The host's own vector width and register count.
  HardwareParams hw = DefaultHardwareParams(Target::Parse("llvm"));
  hw.num_cores = 4;
  const SearchTask task(Matmul(96, 96, 96), "", Target::Parse("llvm"), hw, "test");
  const SearchParams params;  // register_block_share 0.75
  SketchPolicy policy(task, params);
  const RegisterBlockPlan plan = PlanOf(task, "C");
  const InitPopulation pop = policy.SampleInitPopulation(200, 3);
  ASSERT_GE(pop.states.size(), 150u);
  size_t in_family = 0;
  for (const State& s : pop.states) {
    const SampledBlock b = BlockOf(s, TiledStage(s));
    if (!InFamily(plan, b.rows, b.vec_length)) continue;
    ++in_family;
    EXPECT_TRUE(b.annotated) << s.ToString();
    const int64_t vectors = (b.vec_length + plan.lanes - 1) / plan.lanes;
    EXPECT_LE(b.rows * vectors + vectors + 1, hw.num_vector_registers);
  }
  const double share = static_cast<double>(in_family) / static_cast<double>(pop.states.size());
  EXPECT_GE(share, 0.6);  // mostly blocks ...
  EXPECT_LT(share, 1.0);  // ... and random exploration stays
}

TEST(RegisterBlockSampling, FullShareSamplesOnlyBlocksAndNoneWithout) {
  const SearchTask task = TaskWith(Matmul(48, 64, 40), 64, 32);
  const RegisterBlockPlan plan = PlanOf(task, "C");
  for (double share : {1.0, 0.0}) {
    SearchParams params;
    params.register_block_share = share;
    SketchPolicy policy(task, params);
    const InitPopulation pop = policy.SampleInitPopulation(40, 5);
    size_t in_family = 0;
    for (const State& s : pop.states) {
      const SampledBlock b = BlockOf(s, TiledStage(s));
      in_family += InFamily(plan, b.rows, b.vec_length);
    }
    if (share == 1.0) EXPECT_EQ(in_family, pop.states.size());
    if (share == 0.0) EXPECT_LT(in_family, pop.states.size() / 2);  // what uniform divisors give
  }
}

TEST(RegisterBlockSampling, TileSizeMutationsKeepToTheFamily) {
  const SearchTask task = TaskWith(Matmul(96, 96, 64), 64, 32);
  const RegisterBlockPlan plan = PlanOf(task, "C");
  SearchParams params;
  params.register_block_share = 1.0;
  SketchPolicy policy(task, params);
  const std::vector<State> states = policy.SampleInitPopulation(12, 9).states;
  MutationRuleList tile_size;
  for (const auto& r : DefaultCpuMutationRules()) {
    if (r.rule->name() == "tile-size") tile_size.push_back(r);
  }
  std::mt19937 rng(4);
  int mutated = 0, kept = 0, checked = 0;
  for (const State& s : states) {
    for (int k = 0; k < 8; ++k) {
      const MutationResult r = MutateState({task, params}, s, tile_size, &rng);
      if (!r.state) continue;
      ++mutated;
      const SampledBlock b = BlockOf(*r.state, TiledStage(*r.state));
      kept += InFamily(plan, b.rows, b.vec_length);
      if (checked++ % 30 == 0) ExpectMatchesReference(*r.state);
    }
  }
  ASSERT_GT(mutated, 40);
  EXPECT_EQ(kept, mutated);  // share 1: every move stays in the family
  // With the default share most moves keep it, some leave it.
  params.register_block_share = SearchParams().register_block_share;
  int kept_default = 0, mutated_default = 0;
  for (const State& s : states) {
    for (int k = 0; k < 8; ++k) {
      const MutationResult r = MutateState({task, params}, s, tile_size, &rng);
      if (!r.state) continue;
      ++mutated_default;
      const SampledBlock b = BlockOf(*r.state, TiledStage(*r.state));
      kept_default += InFamily(plan, b.rows, b.vec_length);
    }
  }
  EXPECT_GE(kept_default, mutated_default * 7 / 10);
}

}  // namespace
}  // namespace autosched
