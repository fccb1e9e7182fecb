// Text form of expressions and tensors, in the notation users know:
//   (A[i, k]*B[k, j]), (i + 1), floordiv(i, 4), max(x, 0f), sum(..., axis=[k])
// Immediates: integers plain (5, -3), bools True / False, floats as the
// shortest decimal that reads back exactly plus a type suffix: 0.5f (float32),
// 0.5h (float16), 0.5d (float64), inff / -inff / nanf. Lowered nodes print as
// ramp(base, stride, lanes), broadcast(value, lanes), (let x = v in body).
#pragma once

#include <ostream>
#include <string>

#include "ir/expr.h"
#include "ir/tensor.h"

namespace autosched {

std::ostream& operator<<(std::ostream& os, const Expr& e);
std::string ToString(const Expr& e);

// One line per compute op, e.g.
//   C(i, j) += (A[i, k]*B[k, j])         (sum reduction)
//   C(i, j) max= A[i, k]                 (other combiners: *=, max=, min=)
//   out(i, j) = (C[i, j] + 1f)
// and "A = PLACEHOLDER [4, 5]" for placeholders.
std::string OpToString(const Tensor& t);

}  // namespace autosched
