#include "lower/passes/range_tracking.h"

#include <optional>

namespace autosched {

Stmt RangeTrackingMutator::MutateFor(const Stmt& s, const ForNode* n) {
  int64_t min = 0, extent = 0;
  Interval range = Interval::Everything();
  if (GetConstInt(n->min, &min) && GetConstInt(n->extent, &extent) && extent > 0) {
    range = Interval::FromExtent(min, extent);
  }
  return WithRange(n->loop_var.as<VarNode>(), range, [&] { return StmtMutator::MutateFor(s, n); });
}

Stmt RangeTrackingMutator::MutateLetStmt(const Stmt& s, const LetStmtNode* n) {
  const VarNode* var = n->var.as<VarNode>();
  Interval range = var->dtype.is_integer() ? EvalInterval(n->value, ranges_) : Interval::Everything();
  return WithRange(var, range, [&] { return StmtMutator::MutateLetStmt(s, n); });
}

Stmt RangeTrackingMutator::MutateWithRange(const Stmt& s, const VarNode* var, const Interval& range) {
  return WithRange(var, range, [&] { return Mutate(s); });
}

Stmt RangeTrackingMutator::WithRange(const VarNode* var, const Interval& range,
                                     const std::function<Stmt()>& mutate) {
  std::optional<Interval> saved;
  if (auto it = ranges_.find(var); it != ranges_.end()) saved = it->second;
  ranges_[var] = range;
  Stmt r = mutate();
  if (saved) {
    ranges_[var] = *saved;
  } else {
    ranges_.erase(var);
  }
  return r;
}

}  // namespace autosched
