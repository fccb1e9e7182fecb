// Visitors and mutators over statements of the loop-nest IR, plus lambda
// helpers so that a small pass needs no new class.
//
//   PostOrderVisitStmt(s, [&](const Stmt& x) { ... });      // children first
//   Stmt r = RewriteStmt(s, [&](const Stmt& x) -> Stmt { ... or Stmt() });
//   Stmt r = MutateStmtExprs(s, [&](const Expr& e) { return Simplify(e); });
//   Stmt r = SubstituteStmt(s, {{var_node, replacement}});
//
// Expressions inside statements are reached through VisitExpr / MutateExpr,
// which a subclass overrides (an ExprVisitor / ExprMutator, a lambda, ...).
#pragma once

#include <functional>

#include "ir/functor.h"
#include "lower/stmt.h"

namespace autosched {

// Walks a statement; override a Visit* method to act on one kind of node and
// call the base method to keep recursing. Every expression held by a visited
// statement (loop bounds, indices, values, conditions) goes to VisitExpr.
class StmtVisitor {
 public:
  virtual ~StmtVisitor() = default;
  void Visit(const Stmt& s);

 protected:
  virtual void VisitExpr(const Expr&) {}
  virtual void VisitFor(const ForNode* n);
  virtual void VisitBufferStore(const BufferStoreNode* n);
  virtual void VisitAllocate(const AllocateNode* n);
  virtual void VisitIfThenElse(const IfThenElseNode* n);
  virtual void VisitSeq(const SeqNode* n);
  virtual void VisitLetStmt(const LetStmtNode* n);
  virtual void VisitPragma(const PragmaNode* n);
};

// Rebuilds a statement bottom-up; a node whose children and expressions are
// unchanged is returned as is (same pointer). Expressions go through
// MutateExpr (identity by default); binders (loop and let variables) do not.
class StmtMutator {
 public:
  virtual ~StmtMutator() = default;
  Stmt Mutate(const Stmt& s);

 protected:
  virtual Expr MutateExpr(const Expr& e) { return e; }
  virtual Stmt MutateFor(const Stmt& s, const ForNode* n);
  virtual Stmt MutateBufferStore(const Stmt& s, const BufferStoreNode* n);
  virtual Stmt MutateAllocate(const Stmt& s, const AllocateNode* n);
  virtual Stmt MutateIfThenElse(const Stmt& s, const IfThenElseNode* n);
  virtual Stmt MutateSeq(const Stmt& s, const SeqNode* n);
  virtual Stmt MutateLetStmt(const Stmt& s, const LetStmtNode* n);
  virtual Stmt MutatePragma(const Stmt& s, const PragmaNode* n);
};

// Calls fn on every statement of s, children before parents.
void PostOrderVisitStmt(const Stmt& s, const std::function<void(const Stmt&)>& fn);

// Calls fn on every expression held directly by a statement of s (not on
// sub-expressions; use PostOrderVisit on each for those).
void VisitStmtExprs(const Stmt& s, const std::function<void(const Expr&)>& fn);

// Rewrites s top-down: where fn returns a defined Stmt, that replaces the node
// (and is not visited further); elsewhere children are rewritten.
Stmt RewriteStmt(const Stmt& s, const std::function<Stmt(const Stmt&)>& fn);

// Replaces every expression held by a statement of s by fn(expression).
Stmt MutateStmtExprs(const Stmt& s, const std::function<Expr(const Expr&)>& fn);

// Replaces variables by expressions everywhere in s.
Stmt SubstituteStmt(const Stmt& s, const VarMap& map);

// True if any expression of s uses the variable v.
bool StmtUsesVar(const Stmt& s, const VarNode* v);

}  // namespace autosched
