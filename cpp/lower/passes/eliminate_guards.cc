#include "lower/passes/eliminate_guards.h"

#include "ir/simplify.h"
#include "lower/stmt_functor.h"

namespace autosched {
namespace {

class GuardEliminator : public StmtMutator {
 protected:
  Stmt MutateFor(const Stmt& s, const ForNode* n) override {
    const VarNode* var = n->loop_var.as<VarNode>();
    int64_t min = 0, extent = 0;
    if (GetConstInt(n->min, &min) && GetConstInt(n->extent, &extent) && extent > 0) {
      ranges_[var] = Interval::FromExtent(min, extent);
    }
    Stmt r = StmtMutator::MutateFor(s, n);
    ranges_.erase(var);
    return r;
  }

  Stmt MutateLetStmt(const Stmt& s, const LetStmtNode* n) override {
    const VarNode* var = n->var.as<VarNode>();
    if (var->dtype.is_integer()) ranges_[var] = EvalInterval(n->value, ranges_);
    Stmt r = StmtMutator::MutateLetStmt(s, n);
    ranges_.erase(var);
    return r;
  }

  Stmt MutateIfThenElse(const Stmt& s, const IfThenElseNode* n) override {
    if (CanProve(n->condition, ranges_)) return Mutate(n->then_case);
    if (CanProve(NotNode::make(n->condition), ranges_)) {
      return n->else_case.defined() ? Mutate(n->else_case) : SeqNode::make({});
    }
    return StmtMutator::MutateIfThenElse(s, n);
  }

 private:
  VarRanges ranges_;
};

}  // namespace

Stmt EliminateGuards(const Stmt& s) { return GuardEliminator().Mutate(s); }

}  // namespace autosched
