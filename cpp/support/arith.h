// Integer arithmetic the search and the code generator share.
#pragma once

#include <cstdint>

namespace autosched {

// a / b rounded up, for a >= 0 and b > 0: the tiles of b that cover a.
constexpr int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace autosched
