// Mutation rules: the moves of the evolutionary search (evolutionary_search.h).
//
// A rule picks one place of a complete state's step list at random and edits
// it; the edited list is replayed on the task's DAG (State::FromSteps), so a
// mutated state is always one the core accepts step by step. MutateState then
// checks it with bound inference and lowering, like a sampled state.
//
// The CPU rules and the probability of picking each (DefaultCpuMutationRules):
//   tile-size         0.85  move a factor between two parts of one split; the
//                           parts' product stays the extent (innermost part
//                           at most max_innermost_split_factor); on CPUs,
//                           with probability register_block_share, a tiling
//                           split keeps to the register-block family
//                           (register_block.h) or moves into it
//   register-block    0.05  a stage whose family has blocks of several
//                           columns takes another block of it whole (vector,
//                           row and column parts at once, rows and columns
//                           unrolled)
//   auto-unroll       0.04  another auto_unroll_max_step value
//   compute-location  0.05  a stage computed at a loop of another stage moves
//                           to another loop of that stage (outside its
//                           vectorized, unrolled and reduce loops)
//   parallel          0.01  fuse more or fewer outer loops into a parallel loop
//                           (not past a loop where another stage is attached)
// A rule finding nothing to change in a state (no split, no pragma, ...)
// returns nullopt; MutateState counts it like a failed replay.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lower/stmt.h"
#include "schedule/state.h"
#include "search/rules/sketch_rules.h"

namespace autosched {

class MutationRule {
 public:
  virtual ~MutationRule() = default;
  virtual std::string name() const = 0;
  // The mutated state (replayed, not yet checked by bound inference), or
  // nullopt when the state offers nothing to change. Throws Error when the
  // edited steps do not replay.
  virtual std::optional<State> Apply(const SketchContext& ctx, const State& state,
                                     std::mt19937* rng) const = 0;
};

struct WeightedMutationRule {
  std::shared_ptr<const MutationRule> rule;
  double probability = 0;  // relative weight of picking the rule
};
using MutationRuleList = std::vector<WeightedMutationRule>;

// tile-size 0.85, register-block 0.05, auto-unroll 0.04, compute-location 0.05,
// parallel 0.01.
MutationRuleList DefaultCpuMutationRules();

std::shared_ptr<const MutationRule> MakeMutateTileSizeRule();
std::shared_ptr<const MutationRule> MakeMutateRegisterBlockRule();
std::shared_ptr<const MutationRule> MakeMutateAutoUnrollRule();
std::shared_ptr<const MutationRule> MakeMutateComputeLocationRule();
std::shared_ptr<const MutationRule> MakeMutateParallelRule();

// Why a mutation produced no state: "<rule>: <reason>" with reason one of
//   nothing      the state offers the rule nothing to change
//   replay       the edited steps were refused by the core
//   infer_bound  bound inference failed
//   padding      a stage would run far more iterations than its region has
//                (PaddingRatio above kMaxPaddingRatio): e.g. a tiled stage
//                moved inside a loop that leaves it a smaller region than
//                its fixed tile sizes cover, which guards away most of them
//   lower        lowering failed
struct MutationResult {
  std::optional<State> state;
  LoweredPtr lowered;   // what the state lowers to (its check lowered it)
  std::string failure;  // empty on success
  std::string message;  // the error's message, when there was one
};

// Picks a rule by probability, applies it and checks the result with bound
// inference and lowering. Never throws for a state the rule cannot handle.
MutationResult MutateState(const SketchContext& ctx, const State& state, const MutationRuleList& rules,
                           std::mt19937* rng);

// Checks that a complete state passes bound inference, has no stage padded
// beyond kMaxPaddingRatio, and lowers: "" when it does, else "infer_bound",
// "padding" or "lower" with the message in *message.
std::string CheckState(const State& state, std::string* message);

// Over the stages with loops of a state after bound inference: the largest
// ratio of the product of a stage's loop extents to the size of the region
// (root extents) it computes; 1 when splits divide their extents.
double PaddingRatio(const State& bounded);
constexpr double kMaxPaddingRatio = 2;

}  // namespace autosched
