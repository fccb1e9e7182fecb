// SimplifyStmt: simplifies every expression of a statement, knowing the
// range of each enclosing loop with constant bounds (so floordiv / floormod
// and comparisons on loop variables fold). Loops of extent 1 are replaced by
// their body with the variable set to the loop's min; loops of extent 0 and
// IfThenElse with a constant condition disappear.
#pragma once

#include "lower/stmt.h"

namespace autosched {

Stmt SimplifyStmt(const Stmt& s);

}  // namespace autosched
