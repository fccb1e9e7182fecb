// Transfer seeds: the best schedules of similar tasks, re-fitted to a task.
//
// Two tasks are similar when their DAGs have the same compute structure
// (ComputeDAG::structure_key: the same ops, stages, axes and access patterns,
// other sizes); the caller also keeps to one target kind. A schedule of one
// then names the same stages and iterators in the other, and only its split
// lengths may no longer fit. RefitState replays the source's steps on the
// task's initial state; each split whose lengths divided the source's extent
// gets, innermost first, the divisor of what is left of the new extent
// nearest (in ratio) to its old length, the innermost at most
// max_innermost_split_factor (as the fill-tile-size init rule samples them);
// a split whose lengths did not divide the old extent (a guarded tail) keeps
// them. The result must pass the search's own check (CheckState: bound
// inference, padding, lowering), or the seed is dropped with the reason.
//
//   RefitResult r = RefitState(ctx, best_state_of_other_shape);
//   if (r.state) policy.SetTransferSeeds({...});   // sketch_policy.h
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schedule/state.h"
#include "search/rules/sketch_rules.h"

namespace autosched {

struct RefitResult {
  std::optional<State> state;
  // Empty on success; else "dissimilar" (another compute structure),
  // "replay" (a step refused on the task's DAG), "infer_bound", "padding"
  // or "lower" (CheckState).
  std::string failure;
  std::string message;
};

// The source's schedule on ctx.task's DAG, its split lengths fitted to the
// task's extents (see the top of this file). Never throws for a source that
// does not fit.
RefitResult RefitState(const SketchContext& ctx, const State& source);

// `n` lengths (outer to inner) whose product divides `extent`, each near the
// one of `old` at its place, picked innermost first; the innermost at most
// max_innermost.
std::vector<int64_t> FitSplitLengths(const std::vector<int64_t>& old, int64_t extent, int64_t max_innermost);

// What SketchPolicy::SetTransferSeeds kept of the sources it was given.
struct TransferReport {
  int64_t given = 0;
  int64_t kept = 0;                             // distinct re-fitted seeds
  std::map<std::string, int64_t> drops;         // RefitResult::failure or "duplicate" -> count
  std::map<std::string, std::string> messages;  // the first message per failure
};

// The re-fitted seeds of `sources` (in their order, duplicates dropped) and
// the report; at most `max_seeds` are kept.
std::vector<State> RefitSeeds(const SketchContext& ctx, const std::vector<State>& sources, int64_t max_seeds,
                              TransferReport* report);

}  // namespace autosched
