// RangeTrackingMutator: a statement mutator that knows, at every node, the
// ranges of the loop and let variables around it (loops with constant bounds
// and integer lets, through interval analysis), for passes that prove
// conditions with CanProve.
#pragma once

#include <functional>

#include "ir/interval.h"
#include "lower/stmt_functor.h"

namespace autosched {

class RangeTrackingMutator : public StmtMutator {
 public:
  explicit RangeTrackingMutator(VarRanges ranges = {}) : ranges_(std::move(ranges)) {}

 protected:
  // Both bind their variable while the body is mutated; a loop without
  // constant bounds (or a non-integer let) hides any outer range of it.
  Stmt MutateFor(const Stmt& s, const ForNode* n) override;
  Stmt MutateLetStmt(const Stmt& s, const LetStmtNode* n) override;

  // Mutates s with var bound to range, then restores the previous binding.
  Stmt MutateWithRange(const Stmt& s, const VarNode* var, const Interval& range);

  VarRanges ranges_;

 private:
  Stmt WithRange(const VarNode* var, const Interval& range, const std::function<Stmt()>& mutate);
};

}  // namespace autosched
