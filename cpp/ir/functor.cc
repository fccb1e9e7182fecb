#include "ir/functor.h"

#include "support/error.h"

namespace autosched {

namespace {

// Calls fn on each direct child of e, in the order Children(e) lists, without
// copying them: the rewriters below visit every node of large expressions.
template <typename Fn>
void ForEachChild(const Expr& e, Fn&& fn) {
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::Var: return;
    case ExprKind::Binary:
      fn(e.as<BinaryNode>()->a);
      fn(e.as<BinaryNode>()->b);
      return;
    case ExprKind::Not: return fn(e.as<NotNode>()->a);
    case ExprKind::Select: {
      auto* n = e.as<SelectNode>();
      fn(n->condition);
      fn(n->true_value);
      fn(n->false_value);
      return;
    }
    case ExprKind::Cast: return fn(e.as<CastNode>()->value);
    case ExprKind::Call:
      for (const Expr& a : e.as<CallNode>()->args) fn(a);
      return;
    case ExprKind::TensorLoad:
      for (const Expr& i : e.as<TensorLoadNode>()->indices) fn(i);
      return;
    case ExprKind::Reduce: {
      auto* n = e.as<ReduceNode>();
      for (const IterVar& iv : n->axis) fn(iv.var);
      fn(n->source);
      if (n->condition.defined()) fn(n->condition);
      return;
    }
    case ExprKind::BufferLoad:
      for (const Expr& i : e.as<BufferLoadNode>()->indices) fn(i);
      return;
    case ExprKind::Ramp: return fn(e.as<RampNode>()->base);
    case ExprKind::Broadcast: return fn(e.as<BroadcastNode>()->value);
    case ExprKind::Let: {
      auto* n = e.as<LetNode>();
      fn(n->var);
      fn(n->value);
      fn(n->body);
      return;
    }
  }
}

}  // namespace

std::vector<Expr> Children(const Expr& e) {
  std::vector<Expr> kids;
  ForEachChild(e, [&](const Expr& kid) { kids.push_back(kid); });
  return kids;
}

namespace {

// e rebuilt with new children (same order as Children(e)).
Expr Rebuild(const Expr& e, const std::vector<Expr>& kids) {
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

size_t NumBinders(const Expr& e) {
  return e.kind() == ExprKind::Reduce ? e.as<ReduceNode>()->axis.size() : e.kind() == ExprKind::Let ? 1 : 0;
}

// e with every child but the binders replaced by map(child); e itself when
// each child maps to itself. Children are copied only once one changes.
template <typename Map>
Expr MapChildren(const Expr& e, Map&& map) {
  const size_t binders = NumBinders(e);
  std::vector<Expr> kids;
  bool changed = false;
  size_t index = 0;
  ForEachChild(e, [&](const Expr& kid) {
    const size_t at = index++;
    if (at < binders) return;
    Expr mapped = map(kid);
    if (!changed) {
      if (mapped.same_as(kid)) return;
      kids = Children(e);
      changed = true;
    }
    kids[at] = std::move(mapped);
  });
  return changed ? Rebuild(e, kids) : e;
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

#define AS_DEFAULT_MUTATE(Node, Method)                                 \
  Expr ExprMutator::Method(const Expr& e, const Node* n) {              \
    (void)n;                                                            \
    return MapChildren(e, [this](const Expr& x) { return Mutate(x); }); \
  }
AS_DEFAULT_MUTATE(BinaryNode, MutateBinary)
AS_DEFAULT_MUTATE(NotNode, MutateNot)
AS_DEFAULT_MUTATE(SelectNode, MutateSelect)
AS_DEFAULT_MUTATE(CastNode, MutateCast)
AS_DEFAULT_MUTATE(CallNode, MutateCall)
AS_DEFAULT_MUTATE(TensorLoadNode, MutateTensorLoad)
AS_DEFAULT_MUTATE(BufferLoadNode, MutateBufferLoad)
AS_DEFAULT_MUTATE(RampNode, MutateRamp)
AS_DEFAULT_MUTATE(BroadcastNode, MutateBroadcast)
AS_DEFAULT_MUTATE(LetNode, MutateLet)
#undef AS_DEFAULT_MUTATE

Expr ExprMutator::MutateReduce(const Expr& e, const ReduceNode*) {
  return MapChildren(e, [this](const Expr& x) { return Mutate(x); });
}

void PostOrderVisit(const Expr& e, const std::function<void(const Expr&)>& fn) {
  ForEachChild(e, [&](const Expr& kid) { PostOrderVisit(kid, fn); });
  fn(e);
}

Expr Rewrite(const Expr& e, const std::function<Expr(const Expr&)>& fn) {
  Expr r = fn(e);
  if (r.defined()) return r;
  return MapChildren(e, [&](const Expr& kid) { return Rewrite(kid, fn); });
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
