#include "lower/stmt_functor.h"

namespace autosched {

void StmtVisitor::Visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::For: return VisitFor(s.as<ForNode>());
    case StmtKind::BufferStore: return VisitBufferStore(s.as<BufferStoreNode>());
    case StmtKind::Allocate: return VisitAllocate(s.as<AllocateNode>());
    case StmtKind::IfThenElse: return VisitIfThenElse(s.as<IfThenElseNode>());
    case StmtKind::Seq: return VisitSeq(s.as<SeqNode>());
    case StmtKind::LetStmt: return VisitLetStmt(s.as<LetStmtNode>());
    case StmtKind::Pragma: return VisitPragma(s.as<PragmaNode>());
  }
}

void StmtVisitor::VisitFor(const ForNode* n) {
  VisitExpr(n->min);
  VisitExpr(n->extent);
  Visit(n->body);
}
void StmtVisitor::VisitBufferStore(const BufferStoreNode* n) {
  VisitExpr(n->value);
  for (const Expr& i : n->indices) VisitExpr(i);
}
void StmtVisitor::VisitAllocate(const AllocateNode* n) { Visit(n->body); }
void StmtVisitor::VisitIfThenElse(const IfThenElseNode* n) {
  VisitExpr(n->condition);
  Visit(n->then_case);
  Visit(n->else_case);
}
void StmtVisitor::VisitSeq(const SeqNode* n) {
  for (const Stmt& s : n->seq) Visit(s);
}
void StmtVisitor::VisitLetStmt(const LetStmtNode* n) {
  VisitExpr(n->value);
  Visit(n->body);
}
void StmtVisitor::VisitPragma(const PragmaNode* n) { Visit(n->body); }

Stmt StmtMutator::Mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
    case StmtKind::For: return MutateFor(s, s.as<ForNode>());
    case StmtKind::BufferStore: return MutateBufferStore(s, s.as<BufferStoreNode>());
    case StmtKind::Allocate: return MutateAllocate(s, s.as<AllocateNode>());
    case StmtKind::IfThenElse: return MutateIfThenElse(s, s.as<IfThenElseNode>());
    case StmtKind::Seq: return MutateSeq(s, s.as<SeqNode>());
    case StmtKind::LetStmt: return MutateLetStmt(s, s.as<LetStmtNode>());
    case StmtKind::Pragma: return MutatePragma(s, s.as<PragmaNode>());
  }
  return s;
}

Stmt StmtMutator::MutateFor(const Stmt& s, const ForNode* n) {
  Expr min = MutateExpr(n->min);
  Expr extent = MutateExpr(n->extent);
  Stmt body = Mutate(n->body);
  if (min.same_as(n->min) && extent.same_as(n->extent) && body.same_as(n->body)) return s;
  return ForNode::make(n->loop_var, min, extent, n->for_kind, body);
}

Stmt StmtMutator::MutateBufferStore(const Stmt& s, const BufferStoreNode* n) {
  Expr value = MutateExpr(n->value);
  bool changed = !value.same_as(n->value);
  std::vector<Expr> indices;
  for (const Expr& i : n->indices) {
    indices.push_back(MutateExpr(i));
    changed |= !indices.back().same_as(i);
  }
  if (!changed) return s;
  return BufferStoreNode::make(n->buffer, value, indices);
}

Stmt StmtMutator::MutateAllocate(const Stmt& s, const AllocateNode* n) {
  Stmt body = Mutate(n->body);
  if (body.same_as(n->body)) return s;
  return AllocateNode::make(n->buffer, body);
}

Stmt StmtMutator::MutateIfThenElse(const Stmt& s, const IfThenElseNode* n) {
  Expr cond = MutateExpr(n->condition);
  Stmt then_case = Mutate(n->then_case);
  Stmt else_case = Mutate(n->else_case);
  if (cond.same_as(n->condition) && then_case.same_as(n->then_case) && else_case.same_as(n->else_case)) {
    return s;
  }
  return IfThenElseNode::make(cond, then_case, else_case);
}

Stmt StmtMutator::MutateSeq(const Stmt& s, const SeqNode* n) {
  std::vector<Stmt> seq;
  bool changed = false;
  for (const Stmt& x : n->seq) {
    seq.push_back(Mutate(x));
    changed |= !seq.back().same_as(x);
  }
  if (!changed) return s;
  return SeqNode::make(seq);
}

Stmt StmtMutator::MutateLetStmt(const Stmt& s, const LetStmtNode* n) {
  Expr value = MutateExpr(n->value);
  Stmt body = Mutate(n->body);
  if (value.same_as(n->value) && body.same_as(n->body)) return s;
  return LetStmtNode::make(n->var, value, body);
}

Stmt StmtMutator::MutatePragma(const Stmt& s, const PragmaNode* n) {
  Stmt body = Mutate(n->body);
  if (body.same_as(n->body)) return s;
  return PragmaNode::make(n->key, n->value, body);
}

namespace {

// Direct sub-statements of s, in order.
std::vector<Stmt> StmtChildren(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::For: return {s.as<ForNode>()->body};
    case StmtKind::Allocate: return {s.as<AllocateNode>()->body};
    case StmtKind::IfThenElse: {
      auto* n = s.as<IfThenElseNode>();
      if (n->else_case.defined()) return {n->then_case, n->else_case};
      return {n->then_case};
    }
    case StmtKind::Seq: return s.as<SeqNode>()->seq;
    case StmtKind::LetStmt: return {s.as<LetStmtNode>()->body};
    case StmtKind::Pragma: return {s.as<PragmaNode>()->body};
    case StmtKind::BufferStore: return {};
  }
  return {};
}

class LambdaExprVisitor : public StmtVisitor {
 public:
  explicit LambdaExprVisitor(const std::function<void(const Expr&)>& fn) : fn_(fn) {}

 protected:
  void VisitExpr(const Expr& e) override { fn_(e); }

 private:
  const std::function<void(const Expr&)>& fn_;
};

class LambdaExprMutator : public StmtMutator {
 public:
  explicit LambdaExprMutator(const std::function<Expr(const Expr&)>& fn) : fn_(fn) {}

 protected:
  Expr MutateExpr(const Expr& e) override { return fn_(e); }

 private:
  const std::function<Expr(const Expr&)>& fn_;
};

// Rewrites the children of s with `rewrite`, keeping s when none changed.
class ChildRewriter : public StmtMutator {
 public:
  explicit ChildRewriter(const std::function<Stmt(const Stmt&)>& fn) : fn_(fn) {}
  Stmt RewriteChildren(const Stmt& s) { return StmtMutator::Mutate(s); }

 protected:
  // Called for the children of the node being rebuilt: recurse through RewriteStmt.
  Stmt MutateFor(const Stmt& s, const ForNode* n) override { return Rebuild(s, n); }
  Stmt MutateAllocate(const Stmt& s, const AllocateNode* n) override { return Rebuild(s, n); }
  Stmt MutateIfThenElse(const Stmt& s, const IfThenElseNode* n) override { return Rebuild(s, n); }
  Stmt MutateSeq(const Stmt& s, const SeqNode* n) override { return Rebuild(s, n); }
  Stmt MutateLetStmt(const Stmt& s, const LetStmtNode* n) override { return Rebuild(s, n); }
  Stmt MutatePragma(const Stmt& s, const PragmaNode* n) override { return Rebuild(s, n); }

 private:
  template <typename Node>
  Stmt Rebuild(const Stmt& s, const Node* n);
  const std::function<Stmt(const Stmt&)>& fn_;
};

template <typename Node>
Stmt ChildRewriter::Rebuild(const Stmt& s, const Node* n) {
  auto rw = [&](const Stmt& c) { return c.defined() ? RewriteStmt(c, fn_) : c; };
  if constexpr (std::is_same_v<Node, ForNode>) {
    Stmt body = rw(n->body);
    return body.same_as(n->body) ? s : ForNode::make(n->loop_var, n->min, n->extent, n->for_kind, body);
  } else if constexpr (std::is_same_v<Node, AllocateNode>) {
    Stmt body = rw(n->body);
    return body.same_as(n->body) ? s : AllocateNode::make(n->buffer, body);
  } else if constexpr (std::is_same_v<Node, IfThenElseNode>) {
    Stmt t = rw(n->then_case), e = rw(n->else_case);
    return t.same_as(n->then_case) && e.same_as(n->else_case) ? s : IfThenElseNode::make(n->condition, t, e);
  } else if constexpr (std::is_same_v<Node, SeqNode>) {
    std::vector<Stmt> seq;
    bool changed = false;
    for (const Stmt& x : n->seq) {
      seq.push_back(rw(x));
      changed |= !seq.back().same_as(x);
    }
    return changed ? SeqNode::make(seq) : s;
  } else if constexpr (std::is_same_v<Node, LetStmtNode>) {
    Stmt body = rw(n->body);
    return body.same_as(n->body) ? s : LetStmtNode::make(n->var, n->value, body);
  } else {
    Stmt body = rw(n->body);
    return body.same_as(n->body) ? s : PragmaNode::make(n->key, n->value, body);
  }
}

}  // namespace

void PostOrderVisitStmt(const Stmt& s, const std::function<void(const Stmt&)>& fn) {
  if (!s.defined()) return;
  for (const Stmt& c : StmtChildren(s)) PostOrderVisitStmt(c, fn);
  fn(s);
}

void VisitStmtExprs(const Stmt& s, const std::function<void(const Expr&)>& fn) {
  LambdaExprVisitor v(fn);
  v.Visit(s);
}

Stmt RewriteStmt(const Stmt& s, const std::function<Stmt(const Stmt&)>& fn) {
  if (!s.defined()) return s;
  Stmt r = fn(s);
  if (r.defined()) return r;
  ChildRewriter rewriter(fn);
  return rewriter.RewriteChildren(s);
}

Stmt MutateStmtExprs(const Stmt& s, const std::function<Expr(const Expr&)>& fn) {
  LambdaExprMutator m(fn);
  return m.Mutate(s);
}

Stmt SubstituteStmt(const Stmt& s, const VarMap& map) {
  if (map.empty()) return s;
  return MutateStmtExprs(s, [&](const Expr& e) { return Substitute(e, map); });
}

bool StmtUsesVar(const Stmt& s, const VarNode* v) {
  bool found = false;
  VisitStmtExprs(s, [&](const Expr& e) { found = found || UsesVar(e, v); });
  return found;
}

}  // namespace autosched
