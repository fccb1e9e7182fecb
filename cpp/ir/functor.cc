#include "ir/functor.h"

#include "support/error.h"

namespace autosched {

std::vector<Expr> Children(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::Var: return {};
    case ExprKind::Binary: return {e.as<BinaryNode>()->a, e.as<BinaryNode>()->b};
    case ExprKind::Not: return {e.as<NotNode>()->a};
    case ExprKind::Select: {
      auto* n = e.as<SelectNode>();
      return {n->condition, n->true_value, n->false_value};
    }
    case ExprKind::Cast: return {e.as<CastNode>()->value};
    case ExprKind::Call: return e.as<CallNode>()->args;
    case ExprKind::TensorLoad: return e.as<TensorLoadNode>()->indices;
    case ExprKind::Reduce: {
      auto* n = e.as<ReduceNode>();
      std::vector<Expr> kids;
      for (const IterVar& iv : n->axis) kids.push_back(iv.var);
      kids.push_back(n->source);
      if (n->condition.defined()) kids.push_back(n->condition);
      return kids;
    }
    case ExprKind::BufferLoad: return e.as<BufferLoadNode>()->indices;
    case ExprKind::Ramp: return {e.as<RampNode>()->base};
    case ExprKind::Broadcast: return {e.as<BroadcastNode>()->value};
    case ExprKind::Let: {
      auto* n = e.as<LetNode>();
      return {n->var, n->value, n->body};
    }
  }
  return {};
}

namespace {

// Rebuilds e with new children (same order as Children(e)); returns e itself
// when every child is unchanged.
Expr WithChildren(const Expr& e, const std::vector<Expr>& kids) {
  std::vector<Expr> old = Children(e);
  bool changed = false;
  for (size_t i = 0; i < kids.size(); ++i) changed |= !kids[i].same_as(old[i]);
  if (!changed) return e;
  switch (e.kind()) {
    case ExprKind::Binary: return BinaryNode::make(e.as<BinaryNode>()->op, kids[0], kids[1]);
    case ExprKind::Not: return NotNode::make(kids[0]);
    case ExprKind::Select: return SelectNode::make(kids[0], kids[1], kids[2]);
    case ExprKind::Cast: return CastNode::make(e.dtype(), kids[0]);
    case ExprKind::Call: return CallNode::make(e.as<CallNode>()->op, kids);
    case ExprKind::TensorLoad: return TensorLoadNode::make(Tensor(e.as<TensorLoadNode>()->tensor), kids);
    case ExprKind::Reduce: {
      // Axes keep their identity; only source and condition are rewritten.
      auto* n = e.as<ReduceNode>();
      size_t first = n->axis.size();
      Expr cond = n->condition.defined() ? kids[first + 1] : Expr();
      // Built directly: a rewrite may leave an axis unused, which make() refuses.
      return Expr(
          std::make_shared<ReduceNode>(n->dtype, n->combiner, kids[first], n->axis, cond, n->acc_dtype));
    }
    case ExprKind::BufferLoad: return BufferLoadNode::make(e.as<BufferLoadNode>()->buffer, kids);
    case ExprKind::Ramp: return RampNode::make(kids[0], e.as<RampNode>()->stride, e.as<RampNode>()->lanes);
    case ExprKind::Broadcast: return BroadcastNode::make(kids[0], e.as<BroadcastNode>()->lanes);
    case ExprKind::Let: return LetNode::make(kids[0], kids[1], kids[2]);
    default: return e;
  }
}

}  // namespace

void ExprVisitor::Visit(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::IntImm: return VisitIntImm(e.as<IntImmNode>());
    case ExprKind::FloatImm: return VisitFloatImm(e.as<FloatImmNode>());
    case ExprKind::Var: return VisitVar(e.as<VarNode>());
    case ExprKind::Binary: return VisitBinary(e.as<BinaryNode>());
    case ExprKind::Not: return VisitNot(e.as<NotNode>());
    case ExprKind::Select: return VisitSelect(e.as<SelectNode>());
    case ExprKind::Cast: return VisitCast(e.as<CastNode>());
    case ExprKind::Call: return VisitCall(e.as<CallNode>());
    case ExprKind::TensorLoad: return VisitTensorLoad(e.as<TensorLoadNode>());
    case ExprKind::Reduce: return VisitReduce(e.as<ReduceNode>());
    case ExprKind::BufferLoad: return VisitBufferLoad(e.as<BufferLoadNode>());
    case ExprKind::Ramp: return VisitRamp(e.as<RampNode>());
    case ExprKind::Broadcast: return VisitBroadcast(e.as<BroadcastNode>());
    case ExprKind::Let: return VisitLet(e.as<LetNode>());
  }
}

void ExprVisitor::VisitBinary(const BinaryNode* n) {
  Visit(n->a);
  Visit(n->b);
}
void ExprVisitor::VisitNot(const NotNode* n) { Visit(n->a); }
void ExprVisitor::VisitSelect(const SelectNode* n) {
  Visit(n->condition);
  Visit(n->true_value);
  Visit(n->false_value);
}
void ExprVisitor::VisitCast(const CastNode* n) { Visit(n->value); }
void ExprVisitor::VisitCall(const CallNode* n) {
  for (const Expr& a : n->args) Visit(a);
}
void ExprVisitor::VisitTensorLoad(const TensorLoadNode* n) {
  for (const Expr& i : n->indices) Visit(i);
}
void ExprVisitor::VisitReduce(const ReduceNode* n) {
  Visit(n->source);
  if (n->condition.defined()) Visit(n->condition);
}
void ExprVisitor::VisitBufferLoad(const BufferLoadNode* n) {
  for (const Expr& i : n->indices) Visit(i);
}
void ExprVisitor::VisitRamp(const RampNode* n) { Visit(n->base); }
void ExprVisitor::VisitBroadcast(const BroadcastNode* n) { Visit(n->value); }
void ExprVisitor::VisitLet(const LetNode* n) {
  Visit(n->value);
  Visit(n->body);
}

Expr ExprMutator::Mutate(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::IntImm: return MutateIntImm(e, e.as<IntImmNode>());
    case ExprKind::FloatImm: return MutateFloatImm(e, e.as<FloatImmNode>());
    case ExprKind::Var: return MutateVar(e, e.as<VarNode>());
    case ExprKind::Binary: return MutateBinary(e, e.as<BinaryNode>());
    case ExprKind::Not: return MutateNot(e, e.as<NotNode>());
    case ExprKind::Select: return MutateSelect(e, e.as<SelectNode>());
    case ExprKind::Cast: return MutateCast(e, e.as<CastNode>());
    case ExprKind::Call: return MutateCall(e, e.as<CallNode>());
    case ExprKind::TensorLoad: return MutateTensorLoad(e, e.as<TensorLoadNode>());
    case ExprKind::Reduce: return MutateReduce(e, e.as<ReduceNode>());
    case ExprKind::BufferLoad: return MutateBufferLoad(e, e.as<BufferLoadNode>());
    case ExprKind::Ramp: return MutateRamp(e, e.as<RampNode>());
    case ExprKind::Broadcast: return MutateBroadcast(e, e.as<BroadcastNode>());
    case ExprKind::Let: return MutateLet(e, e.as<LetNode>());
  }
  return e;
}

namespace {
// Default mutation: mutate every child except the binders of Reduce / Let.
Expr MutateChildren(ExprMutator*, const Expr& e, size_t num_binders,
                    const std::function<Expr(const Expr&)>& mutate) {
  std::vector<Expr> kids = Children(e);
  for (size_t i = num_binders; i < kids.size(); ++i) kids[i] = mutate(kids[i]);
  return WithChildren(e, kids);
}
}  // namespace

#define AS_DEFAULT_MUTATE(Node, Method, binders)                                          \
  Expr ExprMutator::Method(const Expr& e, const Node* n) {                                \
    (void)n;                                                                              \
    return MutateChildren(this, e, binders, [this](const Expr& x) { return Mutate(x); }); \
  }
AS_DEFAULT_MUTATE(BinaryNode, MutateBinary, 0)
AS_DEFAULT_MUTATE(NotNode, MutateNot, 0)
AS_DEFAULT_MUTATE(SelectNode, MutateSelect, 0)
AS_DEFAULT_MUTATE(CastNode, MutateCast, 0)
AS_DEFAULT_MUTATE(CallNode, MutateCall, 0)
AS_DEFAULT_MUTATE(TensorLoadNode, MutateTensorLoad, 0)
AS_DEFAULT_MUTATE(BufferLoadNode, MutateBufferLoad, 0)
AS_DEFAULT_MUTATE(RampNode, MutateRamp, 0)
AS_DEFAULT_MUTATE(BroadcastNode, MutateBroadcast, 0)
AS_DEFAULT_MUTATE(LetNode, MutateLet, 1)
#undef AS_DEFAULT_MUTATE

Expr ExprMutator::MutateReduce(const Expr& e, const ReduceNode* n) {
  return MutateChildren(this, e, n->axis.size(), [this](const Expr& x) { return Mutate(x); });
}

void PostOrderVisit(const Expr& e, const std::function<void(const Expr&)>& fn) {
  for (const Expr& kid : Children(e)) PostOrderVisit(kid, fn);
  fn(e);
}

Expr Rewrite(const Expr& e, const std::function<Expr(const Expr&)>& fn) {
  Expr r = fn(e);
  if (r.defined()) return r;
  size_t binders = e.kind() == ExprKind::Reduce ? e.as<ReduceNode>()->axis.size()
                   : e.kind() == ExprKind::Let  ? 1
                                                : 0;
  std::vector<Expr> kids = Children(e);
  for (size_t i = binders; i < kids.size(); ++i) kids[i] = Rewrite(kids[i], fn);
  return WithChildren(e, kids);
}

Expr Substitute(const Expr& e, const VarMap& map) {
  if (map.empty()) return e;
  return Rewrite(e, [&](const Expr& x) -> Expr {
    if (const auto* v = x.as<VarNode>()) {
      auto it = map.find(v);
      return it != map.end() ? it->second : x;
    }
    return Expr();
  });
}

bool UsesVar(const Expr& e, const VarNode* v) {
  bool found = false;
  PostOrderVisit(e, [&](const Expr& x) {
    if (x.get() == v) found = true;
  });
  return found;
}

}  // namespace autosched
