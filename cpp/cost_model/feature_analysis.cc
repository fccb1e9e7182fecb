#include "cost_model/feature_analysis.h"

#include <algorithm>

#include "cost_model/buffer_access.h"
#include "cost_model/gpu_access.h"
#include "ir/functor.h"
#include "lower/stmt_functor.h"
#include "support/error.h"

namespace autosched {
namespace {

bool IsMathFunc(Intrinsic op) { return FactsOf(op).expensive; }

// Counts the operations of an expression by kind, lanes included.
class OpCounter {
 public:
  std::array<double, kNumOpKinds> counts{};

  void Count(const Expr& e) {
    if (!e.defined()) return;
    switch (e.kind()) {
      case ExprKind::Binary: return CountBinary(e.as<BinaryNode>(), e.dtype());
      case ExprKind::Not: Add(OpCountKind::BoolOp, e.dtype()); return Count(e.as<NotNode>()->a);
      case ExprKind::Select: {
        const auto* n = e.as<SelectNode>();
        Add(OpCountKind::SelectOp, e.dtype());
        Count(n->condition);
        Count(n->true_value);
        return Count(n->false_value);
      }
      case ExprKind::Cast:
        Add(e.dtype().is_float() ? OpCountKind::FloatOtherFunc : OpCountKind::IntOtherFunc, e.dtype());
        return Count(e.as<CastNode>()->value);
      case ExprKind::Call: return CountCall(e.as<CallNode>(), e.dtype());
      case ExprKind::BufferLoad:
        for (const Expr& i : e.as<BufferLoadNode>()->indices) Count(i);
        return;
      case ExprKind::Ramp: return Count(e.as<RampNode>()->base);
      case ExprKind::Broadcast: return Count(e.as<BroadcastNode>()->value);
      case ExprKind::Let: Count(e.as<LetNode>()->value); return Count(e.as<LetNode>()->body);
      default: return;
    }
  }

  // Floating-point arithmetic (a multiply-add counts two).
  double Flops() const {
    double sum = 0;
    for (int k = static_cast<int>(OpCountKind::FloatMad); k <= static_cast<int>(OpCountKind::FloatOtherFunc);
         ++k) {
      sum += counts[k];
    }
    return sum + counts[static_cast<int>(OpCountKind::FloatMad)];
  }

 private:
  void Add(OpCountKind k, DataType t) { counts[static_cast<int>(k)] += t.lanes; }

  void CountBinary(const BinaryNode* n, DataType t) {
    DataType operand = n->a.dtype();
    bool is_float = operand.is_float();
    if (operand.is_bool()) {
      Add(OpCountKind::BoolOp, t);
    } else if (n->op == BinOp::Add || n->op == BinOp::Sub) {
      // a * b + c: one multiply-add; count the product's operands, not the product.
      const BinaryNode* mul = n->a.as<BinaryNode>();
      const Expr* other = &n->b;
      if (!mul || mul->op != BinOp::Mul) {
        mul = n->b.as<BinaryNode>();
        other = &n->a;
      }
      if (mul && mul->op == BinOp::Mul) {
        Add(is_float ? OpCountKind::FloatMad : OpCountKind::IntMad, t);
        Count(mul->a);
        Count(mul->b);
        return Count(*other);
      }
      Add(is_float ? OpCountKind::FloatAddSub : OpCountKind::IntAddSub, t);
    } else if (n->op == BinOp::Mul) {
      Add(is_float ? OpCountKind::FloatMul : OpCountKind::IntMul, t);
    } else if (n->op == BinOp::Div || n->op == BinOp::Mod || n->op == BinOp::FloorDiv ||
               n->op == BinOp::FloorMod) {
      Add(is_float ? OpCountKind::FloatDivMod : OpCountKind::IntDivMod, t);
    } else if (IsLogical(n->op)) {
      Add(OpCountKind::BoolOp, t);
    } else {  // comparisons, min, max
      Add(is_float ? OpCountKind::FloatCmp : OpCountKind::IntCmp, t);
    }
    Count(n->a);
    Count(n->b);
  }

  void CountCall(const CallNode* n, DataType t) {
    if (n->op == Intrinsic::IfThenElse) {
      Add(OpCountKind::SelectOp, t);
    } else if (IsMathFunc(n->op)) {
      Add(t.is_float() ? OpCountKind::FloatMathFunc : OpCountKind::IntMathFunc, t);
    } else {
      Add(t.is_float() ? OpCountKind::FloatOtherFunc : OpCountKind::IntOtherFunc, t);
    }
    for (const Expr& a : n->args) Count(a);
  }
};

// The flat index of an access (storage flattening leaves one index; several
// are folded by the buffer's strides, or row-major by its shape).
Expr FlatIndex(const std::vector<Expr>& indices, const Buffer& buffer) {
  if (indices.size() == 1) return indices[0];
  if (indices.empty()) return Expr(0);
  const bool strided = buffer->strides.size() == indices.size();
  try {
    Expr sum;
    int64_t row = 1;
    for (size_t d = indices.size() - 1; d-- > 0;) {
      row *= buffer->shape[d + 1];
      const int64_t stride = strided ? buffer->strides[d] : row;
      Expr part = indices[d] * make_const(indices[d].dtype(), static_cast<double>(stride));
      sum = sum.defined() ? sum + part : part;
    }
    const int64_t last_stride = strided ? buffer->strides.back() : 1;
    const Expr& last = indices.back();
    if (const auto* ramp = last.as<RampNode>()) {
      const Expr base = last_stride == 1
                            ? ramp->base
                            : ramp->base * make_const(ramp->base.dtype(), static_cast<double>(last_stride));
      return RampNode::make(base + sum, ramp->stride * last_stride, ramp->lanes);
    }
    if (last_stride != 1) return last * make_const(last.dtype(), static_cast<double>(last_stride)) + sum;
    return last + sum;
  } catch (const Error&) {
    return indices.back();  // mixed index types: the innermost dimension alone
  }
}

void CollectLoads(const Expr& e, std::vector<RawAccess>* out) {
  PostOrderVisit(e, [&](const Expr& x) {
    if (const auto* load = x.as<BufferLoadNode>()) {
      out->push_back({load->buffer, FlatIndex(load->indices, load->buffer), false});
    }
  });
}

bool HasGpuBinding(const Stmt& body) {
  bool found = false;
  PostOrderVisitStmt(body, [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) found = found || IsGpuBinding(loop->for_kind);
  });
  return found;
}

// Walks the loop nest, keeping what encloses the current statement.
class StoreWalker {
 public:
  StoreWalker(const HardwareParams& hardware, bool is_gpu) : hardware_(hardware), is_gpu_(is_gpu) {}

  std::vector<StoreAnalysis> result;

  void Walk(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::For: return WalkFor(s.as<ForNode>());
      case StmtKind::BufferStore: return AnalyzeStore(s.as<BufferStoreNode>());
      case StmtKind::Allocate: {
        const auto* n = s.as<AllocateNode>();
        allocs_.push_back({n->buffer, OuterProduct()});
        Walk(n->body);
        return allocs_.pop_back();
      }
      case StmtKind::IfThenElse: {
        const auto* n = s.as<IfThenElseNode>();
        ++guards_;
        Walk(n->then_case);
        Walk(n->else_case);
        --guards_;
        return;
      }
      case StmtKind::Seq:
        for (const Stmt& x : s.as<SeqNode>()->seq) Walk(x);
        return;
      case StmtKind::LetStmt: {
        const auto* n = s.as<LetStmtNode>();
        lets_.emplace_back(n->var.as<VarNode>(), n->value);
        Walk(n->body);
        return lets_.pop_back();
      }
      case StmtKind::Pragma: {
        const auto* n = s.as<PragmaNode>();
        int64_t saved = unroll_step_;
        if (n->key == "auto_unroll_max_step") unroll_step_ = n->value;
        Walk(n->body);
        unroll_step_ = saved;
        return;
      }
    }
  }

 private:
  struct Alloc {
    Buffer buffer;
    double outer_prod;
  };

  double OuterProduct() const {
    double prod = 1;
    for (const LoopInfo& l : loops_) prod *= static_cast<double>(l.extent);
    return prod;
  }

  void WalkFor(const ForNode* n) {
    int64_t extent = 0;
    if (!GetConstInt(n->extent, &extent)) extent = IndexEvaluator(loops_, lets_).Eval(n->extent);
    loops_.push_back({n->loop_var.as<VarNode>(), std::max<int64_t>(extent, 1), n->for_kind});
    Walk(n->body);
    loops_.pop_back();
  }

  void AnalyzeStore(const BufferStoreNode* n);
  void SetAnnotations(const std::vector<bool>& write_moves, StoreAnalysis* a) const;
  void SetAllocation(const Buffer& buffer, StoreAnalysis* a) const;

  const HardwareParams& hardware_;
  bool is_gpu_;
  std::vector<LoopInfo> loops_;
  std::vector<LetBinding> lets_;
  std::vector<Alloc> allocs_;
  int64_t unroll_step_ = 0;
  int guards_ = 0;
};

void StoreWalker::AnalyzeStore(const BufferStoreNode* n) {
  StoreAnalysis a;
  a.hardware = hardware_;
  a.loops = loops_;
  a.outer_prod = OuterProduct();
  a.lanes = n->value.dtype().lanes;
  a.elem_bytes = n->buffer->dtype.bytes();
  OpCounter value_ops;
  value_ops.Count(n->value);
  OpCounter index_ops;
  for (const Expr& i : n->indices) index_ops.Count(i);
  for (int k = 0; k < kNumOpKinds; ++k) a.ops[k] = (value_ops.counts[k] + index_ops.counts[k]) * a.outer_prod;

  std::vector<RawAccess> accesses;
  CollectLoads(n->value, &accesses);
  for (const Expr& i : n->indices) CollectLoads(i, &accesses);
  a.is_reduction_update = std::any_of(accesses.begin(), accesses.end(), [&](const RawAccess& x) {
    return x.buffer == n->buffer || x.buffer->name == n->buffer->name;
  });
  accesses.push_back({n->buffer, FlatIndex(n->indices, n->buffer), true});
  double flops = value_ops.Flops();
  if (flops == 0) {
    for (double c : value_ops.counts) flops += c;
  }
  std::vector<bool> write_moves = AnalyzeAccesses(accesses, lets_, flops, &a);
  if (is_gpu_) a.gpu_access = AnalyzeGpuAccesses(accesses, loops_, lets_, hardware_.warp_size);

  SetAnnotations(write_moves, &a);
  SetAllocation(n->buffer, &a);
  a.auto_unroll_max_step = unroll_step_;
  a.guard_depth = guards_;
  result.push_back(std::move(a));
}

void StoreWalker::SetAnnotations(const std::vector<bool>& write_moves, StoreAnalysis* a) const {
  if (a->lanes > 1) {  // the vectorized loop became vector lanes
    a->vectorize = {1, static_cast<double>(a->lanes), static_cast<double>(a->lanes), 1, 0};
  }
  size_t depth = loops_.size();
  for (size_t l = 0; l < depth; ++l) {
    const LoopInfo& loop = loops_[l];
    auto extent = static_cast<double>(loop.extent);
    AnnotationStats* stats = loop.kind == ForKind::Vectorized ? &a->vectorize
                             : loop.kind == ForKind::Unrolled ? &a->unroll
                             : loop.kind == ForKind::Parallel ? &a->parallel
                                                              : nullptr;
    if (stats) {
      bool innermost_so_far = !(stats == &a->vectorize && a->lanes > 1);
      stats->num += 1;
      stats->prod = (stats->prod == 0 ? 1 : stats->prod) * extent;
      if (innermost_so_far) {
        stats->len = extent;
        stats->pos = static_cast<double>(depth - l);
        stats->over_reduce = write_moves[l] ? 0 : 1;
      }
    }
    switch (loop.kind) {
      case ForKind::BlockIdxX: a->block_idx[0] = extent; break;
      case ForKind::BlockIdxY: a->block_idx[1] = extent; break;
      case ForKind::BlockIdxZ: a->block_idx[2] = extent; break;
      case ForKind::ThreadIdxX: a->thread_idx[0] = extent; break;
      case ForKind::ThreadIdxY: a->thread_idx[1] = extent; break;
      case ForKind::ThreadIdxZ: a->thread_idx[2] = extent; break;
      case ForKind::VThread: a->vthread *= extent; break;
      default: break;
    }
  }
  a->is_gpu = is_gpu_;
  for (const Alloc& alloc : allocs_) {
    if (alloc.buffer->scope == MemScope::Global) continue;
    double elements = 1;
    for (int64_t d : alloc.buffer->shape) elements *= static_cast<double>(d);
    (alloc.buffer->scope == MemScope::Shared ? a->shared_bytes : a->local_bytes) +=
        elements * alloc.buffer->dtype.bytes();
  }
  a->innermost_loop_extent = depth > 0 ? static_cast<double>(loops_.back().extent) : 0;
}

void StoreWalker::SetAllocation(const Buffer& buffer, StoreAnalysis* a) const {
  for (const Alloc& alloc : allocs_) {
    if (alloc.buffer != buffer && alloc.buffer->name != buffer->name) continue;
    double elements = 1;
    for (int64_t d : buffer->shape) elements *= static_cast<double>(d);
    a->alloc_bytes = elements * buffer->dtype.bytes();
    a->alloc_outer_prod = alloc.outer_prod;
    a->alloc_inner_prod = a->outer_prod / std::max(alloc.outer_prod, 1.0);
    a->alloc_is_local = buffer->scope == MemScope::Global ? 0 : 1;
  }
}

}  // namespace

std::vector<StoreAnalysis> AnalyzeStores(const LoweredFunc& f, const HardwareParams& hardware) {
  StoreWalker walker(hardware, HasGpuBinding(f.body));
  walker.Walk(f.body);
  return std::move(walker.result);
}

}  // namespace autosched
