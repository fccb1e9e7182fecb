// AutoUnroll: inside a Pragma "auto_unroll_max_step" = N, every serial loop
// with a constant extent whose total work (its extent times the work of its
// body, a store counting 1, a vectorized loop counting as its body, since it
// becomes one vector statement) is at most N becomes an Unrolled loop. The pragma
// itself is removed; other pragmas are kept. Code generation copies out
// Unrolled loops only within the kernel's unroll budget
// (codegen/unroll_budget.h), so a huge N cannot blow up compile time.
#pragma once

#include "lower/stmt.h"

namespace autosched {

Stmt AutoUnroll(const Stmt& s);

}  // namespace autosched
