// EliminateGuards: removes IfThenElse statements whose condition the loop
// ranges around them prove (keeping the then branch) or refute (keeping the
// else branch), e.g. the bound check of a split that divides its extent.
// Ranges come from enclosing loops with constant bounds and from let
// bindings, through interval analysis.
#pragma once

#include "lower/stmt.h"

namespace autosched {

Stmt EliminateGuards(const Stmt& s);

}  // namespace autosched
