// Visitors and mutators over expressions, plus lambda helpers so that a small
// analysis needs no new class.
//
//   PostOrderVisit(e, [&](const Expr& x) { ... });   // every node, children first
//   Expr r = Substitute(e, {{var_node, replacement}});
//   Expr r = Rewrite(e, [&](const Expr& x) -> Expr { return x.as<...>() ? ... : Expr(); });
#pragma once

#include <functional>
#include <unordered_map>

#include "ir/expr.h"
#include "ir/tensor.h"

namespace autosched {

// Walks an expression; override a Visit* method to act on one kind of node and
// call the base method to keep recursing. Reduce visits its axes' variables
// through VisitReduceAxis (no-op by default), then source and condition.
class ExprVisitor {
 public:
  virtual ~ExprVisitor() = default;
  void Visit(const Expr& e);

 protected:
  virtual void VisitIntImm(const IntImmNode*) {}
  virtual void VisitFloatImm(const FloatImmNode*) {}
  virtual void VisitVar(const VarNode*) {}
  virtual void VisitBinary(const BinaryNode* n);
  virtual void VisitNot(const NotNode* n);
  virtual void VisitSelect(const SelectNode* n);
  virtual void VisitCast(const CastNode* n);
  virtual void VisitCall(const CallNode* n);
  virtual void VisitTensorLoad(const TensorLoadNode* n);
  virtual void VisitReduce(const ReduceNode* n);
  virtual void VisitBufferLoad(const BufferLoadNode* n);
  virtual void VisitRamp(const RampNode* n);
  virtual void VisitBroadcast(const BroadcastNode* n);
  virtual void VisitLet(const LetNode* n);
};

// Rebuilds an expression bottom-up; a node whose children are unchanged is
// returned as is (same pointer), so unchanged trees stay shared.
class ExprMutator {
 public:
  virtual ~ExprMutator() = default;
  Expr Mutate(const Expr& e);

 protected:
  virtual Expr MutateIntImm(const Expr& e, const IntImmNode*) { return e; }
  virtual Expr MutateFloatImm(const Expr& e, const FloatImmNode*) { return e; }
  virtual Expr MutateVar(const Expr& e, const VarNode*) { return e; }
  virtual Expr MutateBinary(const Expr& e, const BinaryNode* n);
  virtual Expr MutateNot(const Expr& e, const NotNode* n);
  virtual Expr MutateSelect(const Expr& e, const SelectNode* n);
  virtual Expr MutateCast(const Expr& e, const CastNode* n);
  virtual Expr MutateCall(const Expr& e, const CallNode* n);
  virtual Expr MutateTensorLoad(const Expr& e, const TensorLoadNode* n);
  virtual Expr MutateReduce(const Expr& e, const ReduceNode* n);
  virtual Expr MutateBufferLoad(const Expr& e, const BufferLoadNode* n);
  virtual Expr MutateRamp(const Expr& e, const RampNode* n);
  virtual Expr MutateBroadcast(const Expr& e, const BroadcastNode* n);
  virtual Expr MutateLet(const Expr& e, const LetNode* n);
};

// The direct children of a node, in evaluation order (Reduce: axis variables,
// source, condition; Let: var, value, body).
std::vector<Expr> Children(const Expr& e);

// Calls fn on every node of e, children before parents.
void PostOrderVisit(const Expr& e, const std::function<void(const Expr&)>& fn);

// Rewrites e top-down: where fn returns a defined Expr, that replaces the node
// (and is not visited further); elsewhere children are rewritten.
Expr Rewrite(const Expr& e, const std::function<Expr(const Expr&)>& fn);

using VarMap = std::unordered_map<const VarNode*, Expr>;

// Replaces variables by expressions.
Expr Substitute(const Expr& e, const VarMap& map);

// True if e uses the variable v (pointer identity).
bool UsesVar(const Expr& e, const VarNode* v);

}  // namespace autosched
