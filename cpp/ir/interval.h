// Interval (bound) analysis: a conservative [min, max] for an integer
// expression given ranges of its variables. Used by simplification, by bound
// inference of schedules and by guard elimination in lowering.
#pragma once

#include <cstdint>
#include <limits>
#include <unordered_map>

#include "ir/expr.h"

namespace autosched {

// Closed integer interval; an unknown side is the int64 limit.
struct Interval {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();

  static Interval Point(int64_t v) { return {v, v}; }
  static Interval Everything() { return {}; }
  // [min, min + extent - 1]
  static Interval FromExtent(int64_t min, int64_t extent) { return {min, min + extent - 1}; }
  bool has_lower() const { return min != std::numeric_limits<int64_t>::min(); }
  bool has_upper() const { return max != std::numeric_limits<int64_t>::max(); }
  bool bounded() const { return has_lower() && has_upper(); }
  bool is_point() const { return bounded() && min == max; }
};

using VarRanges = std::unordered_map<const VarNode*, Interval>;

// Bounds of an integer (or bool: 0..1) expression. Loads and unknown
// variables give an unbounded interval (or the dtype's range). Arithmetic
// saturates instead of overflowing.
Interval EvalInterval(const Expr& e, const VarRanges& ranges);

}  // namespace autosched
