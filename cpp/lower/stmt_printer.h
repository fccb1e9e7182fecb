// Readable text of loop-nest statements and lowered functions, e.g.
//
//   func matmul(A: float32[64, 32], B: float32[32, 48], C: float32[64, 48]) {
//     parallel for (i, 0, 64) {
//       for (j, 0, 48) {
//         C[i, j] = 0f
//         for (k, 0, 32) {
//           C[i, j] = (C[i, j] + (A[i, k]*B[k, j]))
//         }
//       }
//     }
//   }
//
// Loop kinds other than serial prefix the loop; expressions print through the
// expression printer (ir/printer.h).
#pragma once

#include <ostream>
#include <string>

#include "lower/stmt.h"

namespace autosched {

std::string ToString(const Stmt& s);
std::string ToString(const LoweredFunc& f);
std::ostream& operator<<(std::ostream& os, const Stmt& s);
std::ostream& operator<<(std::ostream& os, const LoweredFunc& f);

}  // namespace autosched
