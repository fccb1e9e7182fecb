// VectorizeLoops: legalises Vectorized loops. A vectorized loop with a
// constant extent of 2 .. 64 whose body can run all iterations at once is
// replaced by its body with the loop variable as Ramp(min, 1, extent):
// loads and stores become vector accesses (contiguous where the index is a
// ramp of stride 1, gathers / scatters elsewhere) and scalars are broadcast.
// An extent that is not a power of two but has one as a factor becomes an
// unrolled loop over groups of that many lanes (48: 3 groups of 16), which
// code generation keeps in whole registers; in CPU code (masked_access) a
// factor below 8 leaves an extent of up to 32 one vector (14, not 7 x 2). An if_then_else whose condition
// is the same in every lane stays one, with vector branches. On a CPU (no
// work-item loops in the function), a guard (an if without else) on the loop
// variable around stores whose values cannot trap is vectorized under a lane
// mask, e.g. the last column tile of a split that does not divide its extent:
// a store to a local buffer (a register tile) inside it in every lane becomes
// a select with its old value, other stores an if with the vector condition
// (a masked store), and loads that could leave their buffer in an excluded
// lane if_then_else(mask, load, 0) (a masked load).
// Otherwise the loop falls back to an unrolled loop (extent <= 16) or a
// serial one. Bodies that cannot be vectorized: a store whose index is not an
// injective ramp of the loop variable (a reduction over the vectorized loop
// among them), a load of a stored buffer at another index than the store
// (a dependence between lanes), allocations, other conditions, lets and
// if_then_else conditions depending on the loop variable, inner loops with bounds
// depending on it. Run after FlattenStorage.
#pragma once

#include "lower/stmt.h"

namespace autosched {

// masked_access: whether the code generator has masked vector loads and
// stores (without them, or in a function with work-item loops, guards stay
// scalar).
Stmt VectorizeLoops(const Stmt& s, bool masked_access = true);

}  // namespace autosched
