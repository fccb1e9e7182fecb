#include "lower/passes/simplify_stmt.h"

#include "ir/simplify.h"
#include "lower/stmt_functor.h"

namespace autosched {
namespace {

class StmtSimplifier : public StmtMutator {
 protected:
  Expr MutateExpr(const Expr& e) override { return Simplify(Substitute(e, unit_loops_), ranges_); }

  Stmt MutateFor(const Stmt& s, const ForNode* n) override {
    Expr min = MutateExpr(n->min), extent = MutateExpr(n->extent);
    int64_t min_value = 0, extent_value = 0;
    bool const_min = GetConstInt(min, &min_value), const_extent = GetConstInt(extent, &extent_value);
    if (const_extent && extent_value <= 0) return Stmt();
    const VarNode* var = n->loop_var.as<VarNode>();
    if (const_extent && extent_value == 1 && !IsGpuBinding(n->for_kind)) {
      // The body reads the variable as `min`: nested unit loops share one
      // substitution instead of rewriting the body once each.
      unit_loops_[var] = min;
      Stmt body = Mutate(n->body);
      unit_loops_.erase(var);
      return body;
    }
    if (const_min && const_extent) ranges_[var] = Interval::FromExtent(min_value, extent_value);
    Stmt body = Mutate(n->body);
    ranges_.erase(var);
    if (!body.defined()) return Stmt();
    if (min.same_as(n->min) && extent.same_as(n->extent) && body.same_as(n->body)) return s;
    return ForNode::make(n->loop_var, min, extent, n->for_kind, body);
  }

  Stmt MutateIfThenElse(const Stmt& s, const IfThenElseNode* n) override {
    Expr cond = MutateExpr(n->condition);
    int64_t value = 0;
    if (GetConstInt(cond, &value)) return Mutate(value ? n->then_case : n->else_case);
    Stmt then_case = Mutate(n->then_case), else_case = Mutate(n->else_case);
    if (!then_case.defined() && !else_case.defined()) return Stmt();
    if (!then_case.defined()) return IfThenElseNode::make(NotNode::make(cond), else_case);
    if (cond.same_as(n->condition) && then_case.same_as(n->then_case) && else_case.same_as(n->else_case)) {
      return s;
    }
    return IfThenElseNode::make(cond, then_case, else_case);
  }

  Stmt MutateAllocate(const Stmt& s, const AllocateNode* n) override {
    Stmt body = Mutate(n->body);
    if (!body.defined()) return Stmt();
    return body.same_as(n->body) ? s : AllocateNode::make(n->buffer, body);
  }

  Stmt MutateLetStmt(const Stmt& s, const LetStmtNode* n) override {
    Expr value = MutateExpr(n->value);
    Stmt body = Mutate(n->body);
    if (!body.defined()) return Stmt();
    if (value.same_as(n->value) && body.same_as(n->body)) return s;
    return LetStmtNode::make(n->var, value, body);
  }

  Stmt MutatePragma(const Stmt& s, const PragmaNode* n) override {
    Stmt body = Mutate(n->body);
    if (!body.defined()) return Stmt();
    return body.same_as(n->body) ? s : PragmaNode::make(n->key, n->value, body);
  }

 private:
  VarRanges ranges_;
  VarMap unit_loops_;  // variables of the enclosing loops of extent 1 -> their value
};

}  // namespace

Stmt SimplifyStmt(const Stmt& s) {
  Stmt r = StmtSimplifier().Mutate(s);
  // An entirely empty function body still needs a statement.
  return r.defined() ? r : SeqNode::make({});
}

}  // namespace autosched
