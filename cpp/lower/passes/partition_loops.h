// PartitionLoops: splits a loop so that most of its iterations run without
// the bound checks of a split that does not divide its extent.
//
// A guard (IfThenElse without else whose condition is a conjunction of
// comparisons) inside a Vectorized loop keeps that loop from becoming SIMD
// when a comparison uses the vectorized variable, e.g. j.0*16 + j.1 < 41 with
// j.1 vectorized; usually only the last iteration of the outer loop j.0 needs
// it. For a serial or parallel loop v with constant bounds, the pass finds the
// largest k such that, for v in [min, k), every such comparison that uses both
// v and an enclosing vectorized variable is proven true (CanProve with the
// ranges of all loops and lets around it; k is found by a binary search and
// the result is always proven, never assumed). It then emits
//   for (v, min, k - min) { body without the comparisons on v proven there }
//   for (v, k, rest) { body }
// dropping an empty part. Where the guard-free iterations are not a prefix
// (a parallel loop fusing row and column tiles: the last column tile of every
// row is guarded), the guarded part is versioned instead: the comparisons on v
// are hoisted into a condition on v and the loops around it (each inner loop
// variable replaced by the end of its range that is worst for the comparison)
// and the body becomes
//   if (condition) { body without those comparisons } else { body }
// A loop without such a comparison is left as is, and
// so is one that allocates a shared buffer inside (its copies would declare
// the group's buffer twice).
// Run after EliminateGuards and before VectorizeLoops.
#pragma once

#include "lower/stmt.h"

namespace autosched {

// versioning: whether a loop may be versioned (CPU code; a function with
// work-item loops never is: its work items would branch apart).
Stmt PartitionLoops(const Stmt& s, bool versioning = true);

}  // namespace autosched
