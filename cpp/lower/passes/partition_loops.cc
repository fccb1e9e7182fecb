#include "lower/passes/partition_loops.h"

#include <algorithm>
#include <vector>

#include "ir/simplify.h"
#include "lower/passes/range_tracking.h"

namespace autosched {
namespace {

void SplitConjunction(const Expr& e, std::vector<Expr>* conjuncts) {
  if (const auto* b = e.as<BinaryNode>(); b && b->op == BinOp::And) {
    SplitConjunction(b->a, conjuncts);
    SplitConjunction(b->b, conjuncts);
  } else {
    conjuncts->push_back(e);
  }
}

// The comparisons of a guard condition, or nothing when it is not a scalar
// conjunction of comparisons.
std::vector<Expr> GuardComparisons(const Expr& condition) {
  std::vector<Expr> conjuncts;
  if (condition.dtype().lanes != 1) return {};
  SplitConjunction(condition, &conjuncts);
  for (const Expr& c : conjuncts) {
    const auto* b = c.as<BinaryNode>();
    if (!b || !IsComparison(b->op)) return {};
  }
  return conjuncts;
}

// Removes, from the guards of a loop body, the comparisons on the loop
// variable that the given ranges (the loop variable's included) prove, and
// counts the comparisons that block vectorization: those using both the loop
// variable and a vectorized variable around them.
class GuardRelaxer : public RangeTrackingMutator {
 public:
  GuardRelaxer(const VarNode* loop_var, VarRanges ranges)
      : RangeTrackingMutator(std::move(ranges)), loop_var_(loop_var) {}

  int blocking() const { return blocking_; }
  int blocking_proven() const { return blocking_proven_; }

 protected:
  Stmt MutateFor(const Stmt& s, const ForNode* n) override {
    bool vectorized = n->for_kind == ForKind::Vectorized;
    if (vectorized) vector_vars_.push_back(n->loop_var.as<VarNode>());
    Stmt r = RangeTrackingMutator::MutateFor(s, n);
    if (vectorized) vector_vars_.pop_back();
    return r;
  }

  Stmt MutateIfThenElse(const Stmt& s, const IfThenElseNode* n) override {
    std::vector<Expr> comparisons =
        n->else_case.defined() ? std::vector<Expr>{} : GuardComparisons(n->condition);
    if (comparisons.empty()) return RangeTrackingMutator::MutateIfThenElse(s, n);
    std::vector<Expr> kept;
    for (const Expr& c : comparisons) {
      if (!UsesVar(c, loop_var_)) {
        kept.push_back(c);
        continue;
      }
      bool proven = CanProve(c, ranges_);
      if (UsesVectorVar(c)) {
        ++blocking_;
        blocking_proven_ += proven;
      }
      if (!proven) kept.push_back(c);
    }
    Stmt then_case = Mutate(n->then_case);
    if (kept.empty()) return then_case;
    if (kept.size() == comparisons.size()) {
      return then_case.same_as(n->then_case) ? s : IfThenElseNode::make(n->condition, then_case);
    }
    Expr condition = kept[0];
    for (size_t i = 1; i < kept.size(); ++i) condition = condition && kept[i];
    return IfThenElseNode::make(condition, then_case);
  }

 private:
  bool UsesVectorVar(const Expr& e) const {
    return std::any_of(vector_vars_.begin(), vector_vars_.end(),
                       [&](const VarNode* v) { return UsesVar(e, v); });
  }

  const VarNode* loop_var_;
  std::vector<const VarNode*> vector_vars_;
  int blocking_ = 0, blocking_proven_ = 0;
};

class LoopPartitioner : public RangeTrackingMutator {
 protected:
  Stmt MutateFor(const Stmt& s, const ForNode* n) override {
    int64_t min = 0, extent = 0;
    bool partitionable = (n->for_kind == ForKind::Serial || n->for_kind == ForKind::Parallel) &&
                         GetConstInt(n->min, &min) && GetConstInt(n->extent, &extent) && extent > 0;
    // Each part would declare the group's shared buffers allocated inside
    // again (OpenCL C declares __local buffers once per kernel).
    PostOrderVisitStmt(n->body, [&](const Stmt& x) {
      if (const auto* a = x.as<AllocateNode>(); a && a->buffer->scope == MemScope::Shared)
        partitionable = false;
    });
    if (!partitionable) return RangeTrackingMutator::MutateFor(s, n);
    const VarNode* var = n->loop_var.as<VarNode>();
    int64_t end = min + extent;

    // The body for v in [min, k) if every blocking comparison is proven
    // there (and there is one), else an undefined Stmt.
    auto relaxed_body = [&](int64_t k) {
      VarRanges ranges = ranges_;
      ranges[var] = Interval{min, k - 1};
      GuardRelaxer relaxer(var, std::move(ranges));
      Stmt body = relaxer.Mutate(n->body);
      bool all_proven = relaxer.blocking() > 0 && relaxer.blocking_proven() == relaxer.blocking();
      return all_proven ? body : Stmt();
    };
    Stmt main_body = relaxed_body(min + 1);
    if (!main_body.defined()) return RangeTrackingMutator::MutateFor(s, n);
    // Largest k in [min + 1, end] with a relaxed body: proving gets harder as
    // the range grows, so the successes form a prefix. Each accepted body is
    // itself the proof for its k.
    int64_t lo = min + 1, hi = end + 1;
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      if (Stmt body = relaxed_body(mid); body.defined()) {
        lo = mid;
        main_body = body;
      } else {
        hi = mid;
      }
    }
    int64_t k = lo;
    Stmt main = MutateWithRange(main_body, var, Interval{min, k - 1});
    std::vector<Stmt> parts = {
        ForNode::make(n->loop_var, n->min, IntImmNode::make(n->extent.dtype(), k - min), n->for_kind, main)};
    if (k < end) {
      Stmt rest = MutateWithRange(n->body, var, Interval{k, end - 1});
      parts.push_back(ForNode::make(n->loop_var, IntImmNode::make(n->min.dtype(), k),
                                    IntImmNode::make(n->extent.dtype(), end - k), n->for_kind, rest));
    }
    return SeqNode::make(parts);
  }
};

}  // namespace

Stmt PartitionLoops(const Stmt& s) { return LoopPartitioner().Mutate(s); }

}  // namespace autosched
