// Which unrolled loops code generation copies out, within a budget.
//
// Loops marked unrolled (by the schedule, the auto_unroll_max_step pragma or
// the vectorizer's fallback) are expanded by the emitter into one copy of the
// body per iteration. Unbounded, that makes straight-line functions that LLVM
// takes minutes to compile, so every kernel has a budget of code that
// unrolling may add. Loops are considered innermost first, in program order:
// a loop with a constant extent is unrolled when the copies it adds (extent - 1
// times the weight of its body, as already unrolled) fit in what is left of
// the budget; a loop that does not fit stays a loop (same results, no copies).
#pragma once

#include <cstdint>
#include <unordered_set>

#include "lower/stmt.h"

namespace autosched {

// What unrolling may add to a kernel, in units of about one instruction: an
// expression node weighs one per 256 bits of its lanes, a call of a math
// function without a vector instruction (exp, log, tanh, sigmoid, erf, pow)
// four per lane, and a loop one. At this budget the copies compile in well
// under a second.
constexpr int64_t kUnrollBudget = 8192;
constexpr int64_t kMatrixUnrollBudget = 32768;

// The unrolled loops of `body` to copy out; the others stay loops.
std::unordered_set<const ForNode*> LoopsToUnroll(const Stmt& body, int64_t budget = kUnrollBudget,
                                                 int64_t matrix_budget = kMatrixUnrollBudget);

}  // namespace autosched
