// Simplify: constant folding and canonical linear forms for integer index
// expressions.
//
//  - Folds operations on immediates (with the IR's wrap / floordiv semantics).
//  - Integer +, -, * by constants are brought to a canonical sum of
//    coefficient * term plus a constant, terms ordered deterministically, so
//    (i*4 + j) - (j + i*4) simplifies to 0 and ((i + 1) + 2) to (i + 3).
//  - Identities: x*1, x+0, x*0 (integers), min/max of equal terms,
//    select with a constant condition, floordiv/floormod by 1, and
//    floordiv/floormod of linear forms by constants when bounds (from the
//    optional ranges) prove the result.
// The result is equivalent for every value of the free variables.
#pragma once

#include <unordered_map>

#include "ir/expr.h"
#include "ir/interval.h"

namespace autosched {

Expr Simplify(const Expr& e, const VarRanges& ranges = {});

// Proves a bool expression true for every variable value within ranges.
bool CanProve(const Expr& cond, const VarRanges& ranges = {});

}  // namespace autosched
