// Structural hash and equality share one walk: an expression is flattened into
// a canonical token stream (kind, dtype, operator, constant bits, variable
// number, tensor number, child counts). The encoding is prefix-free, so two
// expressions are structurally equal exactly when their streams are equal,
// and the hash is a fold of the stream.
//
// Variables are numbered in order of first appearance; binders (reduce axes,
// let variables, the axes of an op) number their variables where they bind.
#include "ir/structural.h"

#include <bit>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "support/error.h"

namespace autosched {

namespace {

// splitmix64 finalizer: every input bit affects every output bit.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class TokenWriter {
 public:
  // abstract_extents: shapes, loop bounds and integer constants are written
  // as a marker without their value (StructureHashOp).
  explicit TokenWriter(const TensorIndexFn& tensor_index, bool abstract_extents = false)
      : tensor_index_(tensor_index), abstract_(abstract_extents) {}

  const std::vector<uint64_t>& tokens() const { return tokens_; }

  void Put(uint64_t v) { tokens_.push_back(v); }
  void PutDType(DataType t) {
    Put((static_cast<uint64_t>(t.code) << 48) | (static_cast<uint64_t>(t.bits) << 32) |
        static_cast<uint32_t>(t.lanes));
  }
  void PutString(const std::string& s) {
    Put(s.size());
    for (char c : s) Put(static_cast<unsigned char>(c));
  }

  // Numbers a variable at its binding site (keeps an earlier number).
  void Bind(const VarNode* v) { var_index_.emplace(v, var_index_.size()); }

  void PutIterVar(const IterVar& iv) {
    AS_CHECK(iv.var_node() != nullptr, "iteration variable without a variable");
    Bind(iv.var_node());
    Put(static_cast<uint64_t>(iv.kind));
    PutExtent(iv.min);
    PutExtent(iv.extent);
    PutExpr(iv.var);
  }

  // A shape or bound: its value, or only a marker when extents are abstract.
  void PutExtent(int64_t v) { Put(abstract_ ? 0x5eULL : static_cast<uint64_t>(v)); }
  void PutShape(const std::vector<int64_t>& shape) {
    Put(shape.size());
    for (int64_t d : shape) PutExtent(d);
  }

  void PutTensor(const TensorNode* t) {
    if (tensor_index_) {
      Put(0x7e);
      Put(static_cast<uint64_t>(tensor_index_(t)));
      return;
    }
    Put(0x7f);
    PutString(t->name);
    PutDType(t->dtype);
    PutShape(t->shape);
  }

  void PutBuffer(const BufferNode& b) {
    PutString(b.name);
    PutDType(b.dtype);
    Put(static_cast<uint64_t>(b.scope));
    Put(b.shape.size());
    for (int64_t d : b.shape) Put(static_cast<uint64_t>(d));
    Put(b.strides.size());
    for (int64_t s : b.strides) Put(static_cast<uint64_t>(s));
  }

  void PutExprs(const std::vector<Expr>& list) {
    Put(list.size());
    for (const Expr& e : list) PutExpr(e);
  }

  void PutExpr(const Expr& e) {
    if (!e.defined()) {
      Put(0xffff);
      return;
    }
    Put(static_cast<uint64_t>(e.kind()));
    PutDType(e.dtype());
    switch (e.kind()) {
      case ExprKind::IntImm: PutExtent(e.as<IntImmNode>()->value); break;
      case ExprKind::FloatImm: Put(std::bit_cast<uint64_t>(e.as<FloatImmNode>()->value)); break;
      case ExprKind::Var: {
        auto [it, inserted] = var_index_.emplace(e.as<VarNode>(), var_index_.size());
        Put(it->second);
        break;
      }
      case ExprKind::Binary: {
        const auto* n = e.as<BinaryNode>();
        Put(static_cast<uint64_t>(n->op));
        PutExpr(n->a);
        PutExpr(n->b);
        break;
      }
      case ExprKind::Not: PutExpr(e.as<NotNode>()->a); break;
      case ExprKind::Select: {
        const auto* n = e.as<SelectNode>();
        PutExpr(n->condition);
        PutExpr(n->true_value);
        PutExpr(n->false_value);
        break;
      }
      case ExprKind::Cast: PutExpr(e.as<CastNode>()->value); break;
      case ExprKind::Call: {
        const auto* n = e.as<CallNode>();
        Put(static_cast<uint64_t>(n->op));
        PutExprs(n->args);
        break;
      }
      case ExprKind::TensorLoad: {
        const auto* n = e.as<TensorLoadNode>();
        PutTensor(n->tensor.get());
        PutExprs(n->indices);
        break;
      }
      case ExprKind::Reduce: {
        const auto* n = e.as<ReduceNode>();
        // A non-default accumulation type sets a flag and follows, so keys of
        // reductions with the default stay as they were.
        const bool custom_acc = n->acc_dtype != DefaultAccumulationType(n->dtype);
        Put(static_cast<uint64_t>(n->combiner) | (custom_acc ? 0x100u : 0u));
        if (custom_acc) PutDType(n->acc_dtype);
        Put(n->axis.size());
        for (const IterVar& iv : n->axis) PutIterVar(iv);
        PutExpr(n->source);
        PutExpr(n->condition);
        break;
      }
      case ExprKind::BufferLoad: {
        const auto* n = e.as<BufferLoadNode>();
        PutBuffer(*n->buffer);
        PutExprs(n->indices);
        break;
      }
      case ExprKind::Ramp: {
        const auto* n = e.as<RampNode>();
        Put(static_cast<uint64_t>(n->stride));
        Put(static_cast<uint64_t>(n->lanes));
        PutExpr(n->base);
        break;
      }
      case ExprKind::Broadcast: {
        const auto* n = e.as<BroadcastNode>();
        Put(static_cast<uint64_t>(n->lanes));
        PutExpr(n->value);
        break;
      }
      case ExprKind::Let: {
        const auto* n = e.as<LetNode>();
        PutExpr(n->value);  // the value is outside the variable's scope
        Bind(n->var.as<VarNode>());
        PutExpr(n->var);
        PutExpr(n->body);
        break;
      }
    }
  }

 private:
  const TensorIndexFn& tensor_index_;
  const bool abstract_ = false;
  std::vector<uint64_t> tokens_;
  std::unordered_map<const VarNode*, uint64_t> var_index_;
};

uint64_t HashTokens(const std::vector<uint64_t>& tokens) {
  uint64_t h = Mix(tokens.size());
  for (uint64_t t : tokens) h = HashCombine(h, t);
  return h;
}

}  // namespace

uint64_t HashCombine(uint64_t seed, uint64_t value) {
  return Mix(seed ^ (Mix(value) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)));
}

uint64_t StructuralHash(const Expr& e, const TensorIndexFn& tensor_index) {
  TokenWriter w(tensor_index);
  w.PutExpr(e);
  return HashTokens(w.tokens());
}

bool StructuralEqual(const Expr& a, const Expr& b, const TensorIndexFn& tensor_index) {
  if (a.same_as(b)) return true;
  TokenWriter wa(tensor_index), wb(tensor_index);
  wa.PutExpr(a);
  wb.PutExpr(b);
  return wa.tokens() == wb.tokens();
}

namespace {

uint64_t HashOp(const Tensor& t, const TensorIndexFn& tensor_index, bool abstract_extents) {
  AS_CHECK(t.defined(), "StructuralHashOp of an undefined tensor");
  TokenWriter w(tensor_index, abstract_extents);
  w.Put(static_cast<uint64_t>(t->op_kind));
  w.PutDType(t->dtype);
  w.PutShape(t->shape);
  if (t->is_compute()) {
    // Axes bind their variables in order, spatial then reduce, before the body.
    w.Put(t->axis.size());
    for (const IterVar& iv : t->axis) w.PutIterVar(iv);
    w.Put(t->reduce_axis.size());
    for (const IterVar& iv : t->reduce_axis) w.PutIterVar(iv);
    w.PutExpr(t->body);
    // Attributes change how an op may be scheduled, so they belong to its identity.
    w.Put(t->attrs.size());
    for (const auto& [key, value] : t->attrs) {
      w.PutString(key);
      w.PutString(value);
    }
  }
  return HashTokens(w.tokens());
}

}  // namespace

uint64_t StructuralHashOp(const Tensor& t, const TensorIndexFn& tensor_index) {
  return HashOp(t, tensor_index, false);
}

uint64_t StructureHashOp(const Tensor& t, const TensorIndexFn& tensor_index) {
  return HashOp(t, tensor_index, true);
}

}  // namespace autosched
