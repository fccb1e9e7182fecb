#include "lower/passes/vectorize_loops.h"

#include <unordered_map>

#include "ir/structural.h"
#include "lower/passes/range_tracking.h"
#include "lower/stmt_functor.h"

namespace autosched {
namespace {

constexpr int kMaxLanes = 64;
constexpr int64_t kMaxFallbackUnroll = 16;
constexpr int64_t kMinGroupLanes = 8;
constexpr int64_t kMaxWholeLanes = 32;

// Thrown (and caught in this file) when a body cannot be vectorized.
struct CannotVectorize {};

Expr Widen(const Expr& e, int lanes) { return e.dtype().lanes == lanes ? e : BroadcastNode::make(e, lanes); }

// True when e is provably a multiple of m for every value of its variables.
bool KnownMultipleOf(const Expr& e, int64_t m) {
  int64_t c = 0;
  if (GetConstInt(e, &c)) return c % m == 0;
  const auto* b = e.as<BinaryNode>();
  if (!b) return false;
  if (b->op == BinOp::Mul) return KnownMultipleOf(b->a, m) || KnownMultipleOf(b->b, m);
  if (b->op == BinOp::Add || b->op == BinOp::Sub) return KnownMultipleOf(b->a, m) && KnownMultipleOf(b->b, m);
  return false;
}

// Rewrites expressions with the loop variable replaced by a ramp.
class ExprVectorizer : public ExprMutator {
 public:
  ExprVectorizer(const VarNode* var, Expr ramp, int lanes)
      : var_(var), ramp_(std::move(ramp)), lanes_(lanes) {}

 protected:
  Expr MutateVar(const Expr& e, const VarNode* n) override { return n == var_ ? ramp_ : e; }

  Expr MutateBinary(const Expr& e, const BinaryNode* n) override {
    Expr a = Mutate(n->a), b = Mutate(n->b);
    if (a.dtype().lanes == 1 && b.dtype().lanes == 1) {
      return a.same_as(n->a) && b.same_as(n->b) ? e : BinaryNode::make(n->op, a, b);
    }
    const auto *ra = a.as<RampNode>(), *rb = b.as<RampNode>();
    const auto *ba = a.as<BroadcastNode>(), *bb = b.as<BroadcastNode>();
    Expr sa = ba ? ba->value : a.dtype().lanes == 1 ? a : Expr();
    Expr sb = bb ? bb->value : b.dtype().lanes == 1 ? b : Expr();
    // Keep ramps as ramps, so that contiguous indices stay recognisable.
    if (n->op == BinOp::Add || n->op == BinOp::Sub) {
      bool add = n->op == BinOp::Add;
      if (ra && sb.defined())
        return RampNode::make(BinaryNode::make(n->op, ra->base, sb), ra->stride, lanes_);
      if (add && rb && sa.defined()) return RampNode::make(sa + rb->base, rb->stride, lanes_);
      if (ra && rb) {
        int64_t stride = add ? ra->stride + rb->stride : ra->stride - rb->stride;
        Expr base = BinaryNode::make(n->op, ra->base, rb->base);
        return stride == 0 ? BroadcastNode::make(base, lanes_) : RampNode::make(base, stride, lanes_);
      }
    }
    if (n->op == BinOp::Mul) {
      int64_t c = 0;
      if (ra && sb.defined() && GetConstInt(sb, &c) && c != 0)
        return RampNode::make(ra->base * sb, ra->stride * c, lanes_);
      if (rb && sa.defined() && GetConstInt(sa, &c) && c != 0)
        return RampNode::make(sa * rb->base, rb->stride * c, lanes_);
    }
    if ((n->op == BinOp::FloorDiv || n->op == BinOp::FloorMod) && ra && ra->stride == 1 && sb.defined()) {
      // Lanes starting at a multiple of `lanes` stay inside one block of a
      // divisor that is a multiple of `lanes`: one quotient, consecutive
      // remainders (packed layouts index like this).
      int64_t c = 0;
      if (GetConstInt(sb, &c) && c > 0 && c % lanes_ == 0 && KnownMultipleOf(ra->base, lanes_)) {
        Expr scalar = BinaryNode::make(n->op, ra->base, sb);
        return n->op == BinOp::FloorDiv ? BroadcastNode::make(scalar, lanes_)
                                        : RampNode::make(scalar, 1, lanes_);
      }
    }
    if (sa.defined() && sb.defined()) return BroadcastNode::make(BinaryNode::make(n->op, sa, sb), lanes_);
    return BinaryNode::make(n->op, Widen(a, lanes_), Widen(b, lanes_));
  }

  Expr MutateSelect(const Expr& e, const SelectNode* n) override {
    Expr c = Mutate(n->condition), t = Mutate(n->true_value), f = Mutate(n->false_value);
    if (c.dtype().lanes == 1 && t.dtype().lanes == 1 && f.dtype().lanes == 1) {
      return c.same_as(n->condition) && t.same_as(n->true_value) && f.same_as(n->false_value)
                 ? e
                 : SelectNode::make(c, t, f);
    }
    return SelectNode::make(Widen(c, lanes_), Widen(t, lanes_), Widen(f, lanes_));
  }

  Expr MutateCall(const Expr& e, const CallNode* n) override {
    std::vector<Expr> args;
    bool vector = false;
    for (const Expr& a : n->args) {
      args.push_back(Mutate(a));
      vector |= args.back().dtype().lanes > 1;
    }
    if (!vector) return ExprMutator::MutateCall(e, n);
    if (n->op == Intrinsic::IfThenElse) {
      // A condition that differs between lanes would evaluate the branch not
      // taken in some lanes. One the same in every lane (the padding of a
      // window, vectorized across channels) picks a whole vector branch, and
      // stays a scalar condition.
      if (args[0].dtype().lanes > 1) throw CannotVectorize();
      return CallNode::make(n->op, {args[0], Widen(args[1], lanes_), Widen(args[2], lanes_)});
    }
    for (Expr& a : args) a = Widen(a, lanes_);
    return CallNode::make(n->op, args);
  }

  Expr MutateCast(const Expr& e, const CastNode* n) override {
    Expr v = Mutate(n->value);
    if (v.dtype().lanes == 1) return v.same_as(n->value) ? e : CastNode::make(n->dtype, v);
    if (const auto* bc = v.as<BroadcastNode>())
      return BroadcastNode::make(CastNode::make(n->dtype, bc->value), lanes_);
    return CastNode::make(n->dtype.with_lanes(lanes_), v);
  }

  Expr MutateNot(const Expr& e, const NotNode* n) override {
    Expr a = Mutate(n->a);
    return a.same_as(n->a) ? e : NotNode::make(a);
  }

  Expr MutateLet(const Expr& e, const LetNode* n) override {
    if (UsesVar(n->value, var_)) throw CannotVectorize();
    return ExprMutator::MutateLet(e, n);
  }
  Expr MutateReduce(const Expr&, const ReduceNode*) override { throw CannotVectorize(); }
  Expr MutateTensorLoad(const Expr&, const TensorLoadNode*) override { throw CannotVectorize(); }
  Expr MutateRamp(const Expr&, const RampNode*) override { throw CannotVectorize(); }  // already vector code
  Expr MutateBroadcast(const Expr&, const BroadcastNode*) override { throw CannotVectorize(); }

  Expr MutateBufferLoad(const Expr& e, const BufferLoadNode* n) override {
    if (n->indices.size() != 1) throw CannotVectorize();
    return ExprMutator::MutateBufferLoad(e, n);
  }

 private:
  const VarNode* var_;
  Expr ramp_;
  int lanes_;
};

// Whether a guarded branch can run in every lane with its memory accesses
// masked: stores only (no loops, lets or allocations), and nothing in the
// values can trap in a lane the guard excludes (an integer division by a
// variable could) or branch per lane.
bool MaskableBranch(const Stmt& then_case) {
  bool ok = true;
  PostOrderVisitStmt(then_case, [&](const Stmt& x) {
    if (x.kind() != StmtKind::BufferStore && x.kind() != StmtKind::Seq) ok = false;
  });
  VisitStmtExprs(then_case, [&](const Expr& e) {
    PostOrderVisit(e, [&](const Expr& x) {
      if (const auto* bin = x.as<BinaryNode>()) {
        if (MayTrapOnDivision(bin)) ok = false;
      } else if (const auto* call = x.as<CallNode>(); call && call->op == Intrinsic::IfThenElse) {
        ok = false;
      } else if (x.as<LetNode>()) {
        ok = false;
      }
    });
  });
  return ok;
}

// Rewrites the statements of one vectorized loop body.
class StmtVectorizer : public StmtMutator {
 public:
  // masked_guards: a guard on the loop variable becomes a vector condition
  // predicating the lanes (see IfThenElseNode) instead of stopping it.
  // ranges: of the variables around the loop (the ramp's base uses them),
  // to find the accesses that stay inside their buffer in every lane.
  StmtVectorizer(const VarNode* var, Expr ramp, int lanes, bool masked_guards, const VarRanges& ranges)
      : var_(var), exprs_(var, ramp, lanes), lanes_(lanes), masked_guards_(masked_guards), ranges_(ranges) {}

 protected:
  Expr MutateExpr(const Expr& e) override { return exprs_.Mutate(e); }

  Stmt MutateBufferStore(const Stmt& s, const BufferStoreNode* n) override {
    if (n->indices.size() != 1) throw CannotVectorize();
    Expr index = MutateExpr(n->indices[0]);
    const auto* ramp = index.as<RampNode>();
    if (!ramp || ramp->stride == 0) throw CannotVectorize();  // not injective: a reduction or a race
    // Lanes may only read a buffer they store at their own element.
    PostOrderVisit(n->value, [&](const Expr& x) {
      const auto* load = x.as<BufferLoadNode>();
      if (!load || load->buffer != n->buffer) return;
      if (!StructuralEqual(load->indices[0], n->indices[0])) throw CannotVectorize();
    });
    stored_.emplace(n->buffer.get(), n->indices[0]);
    Expr value = Widen(MutateExpr(n->value), lanes_);
    if (!in_mask_) return BufferStoreNode::make(n->buffer, value, {index});
    return MaskedStore(n->buffer, GuardLoads(value), index);
  }

  // Under a lane mask: a store to a register tile (a local buffer) that
  // stays inside it in every lane keeps the old value in the lanes the mask
  // excludes (a select, which keeps the tile in registers); any other store
  // is predicated (an if with the vector condition: a masked store).
  Stmt MaskedStore(const Buffer& buffer, const Expr& value, const Expr& index) const {
    if (buffer->scope == MemScope::Local && InBounds(buffer, index)) {
      Expr old = BufferLoadNode::make(buffer, {index});
      return BufferStoreNode::make(buffer, SelectNode::make(mask_, value, old), {index});
    }
    return IfThenElseNode::make(mask_, BufferStoreNode::make(buffer, value, {index}));
  }

  // Loads that might leave their buffer in a lane the mask excludes read
  // only the lanes it holds: if_then_else(mask, load, 0).
  Expr GuardLoads(const Expr& value) const {
    return Rewrite(value, [&](const Expr& x) -> Expr {
      const BufferLoadNode* load = x.as<BufferLoadNode>();
      if (const auto* bc = x.as<BroadcastNode>()) load = bc->value.as<BufferLoadNode>();
      if (!load) return Expr();
      if (InBounds(load->buffer, load->indices[0])) return x;
      if (x.dtype().lanes == 1) throw CannotVectorize();  // a scalar load used otherwise than broadcast
      Expr zero = BroadcastNode::make(make_const(x.dtype().element_of(), 0), lanes_);
      return CallNode::make(Intrinsic::IfThenElse, {mask_, x, zero});
    });
  }

  // Whether every lane of a (flat) index lies inside the buffer.
  bool InBounds(const Buffer& buffer, const Expr& index) const {
    int64_t elements = 1;
    for (int64_t d : buffer->shape) elements *= d;
    Expr first = index, last = index;
    if (const auto* ramp = index.as<RampNode>()) {
      if (ramp->stride < 0) return false;
      first = ramp->base;
      last =
          ramp->base + make_const(ramp->base.dtype(), static_cast<double>(ramp->stride * (ramp->lanes - 1)));
    } else if (const auto* bc = index.as<BroadcastNode>()) {
      first = last = bc->value;
    } else if (index.dtype().lanes > 1) {
      return false;
    }
    Interval lo = EvalInterval(first, ranges_), hi = EvalInterval(last, ranges_);
    return lo.has_lower() && lo.min >= 0 && hi.has_upper() && hi.max < elements;
  }

  Stmt MutateIfThenElse(const Stmt& s, const IfThenElseNode* n) override {
    if (!UsesVar(n->condition, var_)) return StmtMutator::MutateIfThenElse(s, n);
    if (!masked_guards_ || in_mask_ || n->else_case.defined() || !MaskableBranch(n->then_case))
      throw CannotVectorize();
    mask_ = Widen(MutateExpr(n->condition), lanes_);
    in_mask_ = true;
    Stmt then_case = Mutate(n->then_case);
    in_mask_ = false;
    return then_case;
  }
  Stmt MutateFor(const Stmt& s, const ForNode* n) override {
    if (UsesVar(n->min, var_) || UsesVar(n->extent, var_)) throw CannotVectorize();
    return StmtMutator::MutateFor(s, n);
  }
  Stmt MutateLetStmt(const Stmt& s, const LetStmtNode* n) override {
    if (UsesVar(n->value, var_)) throw CannotVectorize();
    return StmtMutator::MutateLetStmt(s, n);
  }
  Stmt MutateAllocate(const Stmt&, const AllocateNode*) override { throw CannotVectorize(); }

 public:
  // After the rewrite: every load of a stored buffer anywhere in the body
  // must read the element its lane stores.
  void CheckLoadsOfStoredBuffers(const Stmt& original) {
    VisitStmtExprs(original, [&](const Expr& e) {
      PostOrderVisit(e, [&](const Expr& x) {
        const auto* load = x.as<BufferLoadNode>();
        if (!load) return;
        auto range = stored_.equal_range(load->buffer.get());
        for (auto it = range.first; it != range.second; ++it) {
          if (!StructuralEqual(load->indices[0], it->second)) throw CannotVectorize();
        }
      });
    });
  }

 private:
  const VarNode* var_;
  ExprVectorizer exprs_;
  int lanes_;
  bool masked_guards_, in_mask_ = false;
  Expr mask_;  // of the guard being vectorized
  const VarRanges& ranges_;
  std::unordered_multimap<const BufferNode*, Expr> stored_;
};

class LoopVectorizer : public RangeTrackingMutator {
 public:
  explicit LoopVectorizer(bool masked_guards) : masked_guards_(masked_guards) {}

 protected:
  // The loop's body with its variable as Ramp(base, 1, lanes); throws
  // CannotVectorize. `ranges` holds the loops around it (and the group
  // variable of base, if any).
  Stmt VectorBody(const ForNode* loop, const Expr& base, int lanes, const VarRanges& ranges) const {
    StmtVectorizer v(loop->loop_var.as<VarNode>(), RampNode::make(base, 1, lanes), lanes, masked_guards_,
                     ranges);
    Stmt body = v.Mutate(loop->body);
    v.CheckLoadsOfStoredBuffers(loop->body);
    return body;
  }

  Stmt MutateFor(const Stmt& s, const ForNode* n) override {
    Stmt r = RangeTrackingMutator::MutateFor(s, n);  // inner loops first
    if (n->for_kind != ForKind::Vectorized) return r;
    const auto* loop = r.as<ForNode>();
    int64_t extent = 0;
    bool const_extent = GetConstInt(loop->extent, &extent);
    if (const_extent && extent >= 2 && extent <= kMaxLanes) {
      try {
        // Vectors of a power of two lanes: an extent such as 48 becomes 3
        // unrolled groups of 16, which LLVM keeps in whole registers (a
        // 48-lane vector it splits into pieces and shuffles). Where that
        // power of two is below kMinGroupLanes, an extent of up to
        // kMaxWholeLanes stays one vector in CPU code, which LLVM widens to
        // whole registers: 14 lanes as 7 groups of 2 took 7 instructions per
        // operation where one 512-bit register does. (OpenCL C has vectors
        // of 2, 3, 4, 8 and 16 lanes only: there the groups stay.)
        const int64_t power_of_two = extent & -extent;
        const bool whole = masked_guards_ && power_of_two < kMinGroupLanes && extent <= kMaxWholeLanes;
        const int lanes = static_cast<int>(whole ? extent : power_of_two);
        const int groups = static_cast<int>(extent) / lanes;
        if (lanes < 2 || groups == 1) return VectorBody(loop, loop->min, static_cast<int>(extent), ranges_);
        const DataType t = loop->loop_var.dtype();
        Expr group = VarNode::make(loop->loop_var.as<VarNode>()->name + ".v", t);
        VarRanges ranges = ranges_;
        ranges[group.as<VarNode>()] = Interval::FromExtent(0, groups);
        Stmt body = VectorBody(loop, loop->min + group * IntImmNode::make(t, lanes), lanes, ranges);
        return ForNode::make(group, IntImmNode::make(t, 0), IntImmNode::make(t, groups), ForKind::Unrolled,
                             body);
      } catch (const CannotVectorize&) {
      }
    }
    // Unrolling pays only for a straight-line body; copies of a loop nest just
    // grow the code (and the compile time) without removing any branch.
    bool straight_line = true;
    PostOrderVisitStmt(loop->body,
                       [&](const Stmt& inner) { straight_line &= inner.kind() != StmtKind::For; });
    ForKind fallback =
        const_extent && extent <= kMaxFallbackUnroll && straight_line ? ForKind::Unrolled : ForKind::Serial;
    return ForNode::make(loop->loop_var, loop->min, loop->extent, fallback, loop->body);
  }

 private:
  bool masked_guards_;
};

}  // namespace

Stmt VectorizeLoops(const Stmt& s, bool masked_access) {
  // A kernel with work-item loops is OpenCL C, which has no masked vector
  // stores, whatever the caller says.
  bool gpu_kernel = false;
  PostOrderVisitStmt(s, [&](const Stmt& x) {
    if (const auto* loop = x.as<ForNode>(); loop && loop->for_kind >= ForKind::VThread) gpu_kernel = true;
  });
  return LoopVectorizer(/*masked_guards=*/masked_access && !gpu_kernel).Mutate(s);
}

}  // namespace autosched
