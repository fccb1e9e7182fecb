// Bound inference: the extent of every iterator of a state.
//
// A stage computed at a loop of another stage only needs the region of its
// tensor that its readers touch during one iteration of that loop. For every
// such stage (consumers first) the indices its readers use are written in
// terms of loop variables and simplified with the loop ranges; each index is
// then split into a sum of terms over the loops outside the attach point (any
// expression, e.g. floordiv / floormod of a fused loop: the region's start)
// and terms over the loops inside it, bounded with ir/interval.h (the
// region's extent). Reads whose starts differ by a constant share one region.
// When a term mixes both kinds of loops, or the starts differ otherwise, the
// hull of the reads over every loop is used (at worst the whole tensor), which
// stays correct.
#pragma once

#include <vector>

#include "ir/interval.h"
#include "schedule/state.h"

namespace autosched {

struct StageBound {
  std::vector<Expr> node_vars;     // per iterator node: its loop variable (leaves only)
  std::vector<Expr> node_values;   // per iterator node: its value from the leaves
  std::vector<Expr> local_values;  // per root node: its value from the leaves (0-based within the region)
  std::vector<Expr> root_values;   // per root node: region start + local value (the tensor index)
  std::vector<Expr> region_min;    // per spatial root axis
  std::vector<int64_t> region_extent;
  bool narrowed = false;  // region_min is not all zeros or extents not the full shape
};

struct BoundInfo {
  State state;                     // iterator extents updated
  std::vector<StageBound> stages;  // parallel to state.stages() (empty for placeholders / inlined)
  VarRanges ranges;                // every loop variable -> [0, extent - 1]
};

// Throws Error when an extent is unknown (an unfilled split length), naming
// the stage and iterator.
BoundInfo InferBoundDetailed(const State& state);
State InferBound(const State& state);

// The body of op with every load of an inlined stage's tensor replaced by that
// tensor's body at the loaded indices (recursively).
Expr ExpandInlined(const StateNode& state, const Expr& body);

}  // namespace autosched
