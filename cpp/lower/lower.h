// Lowering: a schedule's State to a LoweredFunc ready for code generation.
//
// Lower = LowerStateToStmt (lower_state.h) followed by the passes of
// RunLoweringPasses, listed in order in lower.cc (the one list of passes):
// simplify_stmt, eliminate_guards, partition_loops, auto_unroll,
// flatten_storage, vectorize_loops, and a final simplify_stmt. A failure
// inside a pass names it ("lowering pass vectorize_loops: ..."). Passes live in
// passes/, one small header each. RunLoweringPasses also serves hand-built
// loop nests (multi-dimensional indices, Vectorized loops, pragmas).
#pragma once

#include <ostream>

#include "lower/stmt.h"
#include "schedule/state.h"

namespace autosched {

struct LowerOptions {
  // Where to print the function after every pass; nullptr prints nothing.
  std::ostream* log = nullptr;
  // CPU code (the target's TargetKind::cpu_guard_transforms): PartitionLoops
  // may version a loop on its hoisted guards, and VectorizeLoops may turn a
  // guarded vector loop into masked vector code.
  bool cpu_guard_transforms = true;
};

LoweredFunc Lower(const State& state, const LowerOptions& options = {});
LoweredFunc RunLoweringPasses(LoweredFunc f, const LowerOptions& options = {});

}  // namespace autosched
