// Lowering: a schedule's State to a LoweredFunc ready for code generation.
//
// Lower = LowerStateToStmt (lower_state.h) followed by the passes of
// RunLoweringPasses, listed in order in lower.cc: simplification, guard
// elimination, auto-unroll, storage flattening, vectorization legalisation,
// and a final simplification. RunLoweringPasses also serves hand-built loop
// nests (multi-dimensional indices, Vectorized loops, pragmas).
#pragma once

#include <ostream>

#include "lower/stmt.h"
#include "schedule/state.h"

namespace autosched {

struct LowerOptions {
  // Where to print the function after every pass; nullptr prints nothing.
  std::ostream* log = nullptr;
};

LoweredFunc Lower(const State& state, const LowerOptions& options = {});
LoweredFunc RunLoweringPasses(LoweredFunc f, const LowerOptions& options = {});

}  // namespace autosched
