#include "lower/passes/eliminate_guards.h"

#include "ir/simplify.h"
#include "lower/passes/range_tracking.h"

namespace autosched {
namespace {

class GuardEliminator : public RangeTrackingMutator {
 protected:
  Stmt MutateIfThenElse(const Stmt& s, const IfThenElseNode* n) override {
    if (CanProve(n->condition, ranges_)) return Mutate(n->then_case);
    if (CanProve(NotNode::make(n->condition), ranges_)) {
      return n->else_case.defined() ? Mutate(n->else_case) : SeqNode::make({});
    }
    return StmtMutator::MutateIfThenElse(s, n);
  }
};

}  // namespace

Stmt EliminateGuards(const Stmt& s) { return GuardEliminator().Mutate(s); }

}  // namespace autosched
