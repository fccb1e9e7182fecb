#include "lower/passes/partition_loops.h"

#include <algorithm>
#include <vector>

#include "ir/functor.h"
#include "ir/simplify.h"
#include "ir/structural.h"
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

// A mutator over the guards of a loop body: each comparison of a guard that
// uses the loop variable is asked Keep; the others stay. It tracks the loops
// and lets inside the body (inner_) and which loops are vectorized.
class GuardComparisonFilter : public RangeTrackingMutator {
 public:
  GuardComparisonFilter(const VarNode* loop_var, VarRanges ranges)
      : RangeTrackingMutator(std::move(ranges)), loop_var_(loop_var) {}

 protected:
  // Whether comparison c, which uses the loop variable, stays in its guard.
  virtual bool Keep(const Expr& c) = 0;

  bool UsesVectorVar(const Expr& e) const {
    return std::any_of(vector_vars_.begin(), vector_vars_.end(),
                       [&](const VarNode* v) { return UsesVar(e, v); });
  }

  Stmt MutateFor(const Stmt& s, const ForNode* n) override {
    bool vectorized = n->for_kind == ForKind::Vectorized;
    inner_.push_back(n->loop_var);
    if (vectorized) vector_vars_.push_back(n->loop_var.as<VarNode>());
    Stmt r = RangeTrackingMutator::MutateFor(s, n);
    if (vectorized) vector_vars_.pop_back();
    inner_.pop_back();
    return r;
  }

  Stmt MutateLetStmt(const Stmt& s, const LetStmtNode* n) override {
    inner_.push_back(n->var);
    Stmt r = RangeTrackingMutator::MutateLetStmt(s, n);
    inner_.pop_back();
    return r;
  }

  Stmt MutateIfThenElse(const Stmt& s, const IfThenElseNode* n) override {
    std::vector<Expr> comparisons =
        n->else_case.defined() ? std::vector<Expr>{} : GuardComparisons(n->condition);
    if (comparisons.empty()) return RangeTrackingMutator::MutateIfThenElse(s, n);
    std::vector<Expr> kept;
    for (const Expr& c : comparisons) {
      if (!UsesVar(c, loop_var_) || Keep(c)) kept.push_back(c);
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

  const VarNode* loop_var_;
  std::vector<Expr> inner_;
  std::vector<const VarNode*> vector_vars_;
};

// Removes, from the guards of a loop body, the comparisons on the loop
// variable that the given ranges (the loop variable's included) prove, and
// counts the comparisons that block vectorization: those using both the loop
// variable and a vectorized variable around them.
class GuardRelaxer : public GuardComparisonFilter {
 public:
  using GuardComparisonFilter::GuardComparisonFilter;

  int blocking() const { return blocking_; }
  int blocking_proven() const { return blocking_proven_; }

 protected:
  bool Keep(const Expr& c) override {
    bool proven = CanProve(c, ranges_);
    if (UsesVectorVar(c)) {
      ++blocking_;
      blocking_proven_ += proven;
    }
    return !proven;
  }

 private:
  int blocking_ = 0, blocking_proven_ = 0;
};

// The condition on the variables around a loop body under which comparison c
// holds for every value of the loops inside the body (`inner`, with their
// ranges), or an undefined Expr. c must be monotone in each inner variable:
// each is replaced by the end of its range that is worst for c. The result
// may use only variables with known ranges (a guard on a free size is not
// hoisted into a test at run time).
Expr HoistComparison(const BinaryNode* c, const std::vector<Expr>& inner, const VarRanges& ranges) {
  if (!c->a.dtype().is_integer()) return Expr();
  // slack = (what must stay below) - (what must stay above); c holds when
  // slack > 0 (LT, GT) or slack >= 0 (LE, GE).
  Expr slack;
  bool strict = c->op == BinOp::LT || c->op == BinOp::GT;
  if (c->op == BinOp::LT || c->op == BinOp::LE) {
    slack = c->b - c->a;
  } else if (c->op == BinOp::GT || c->op == BinOp::GE) {
    slack = c->a - c->b;
  } else {
    return Expr();
  }
  for (const Expr& var : inner) {
    const VarNode* v = var.as<VarNode>();
    if (!UsesVar(slack, v)) continue;
    auto it = ranges.find(v);
    if (it == ranges.end() || !it->second.bounded()) return Expr();
    Expr step = Simplify(Substitute(slack, {{v, var + make_const(var.dtype(), 1)}}) - slack, ranges);
    Expr zero = make_const(step.dtype(), 0);
    int64_t worst = 0;
    if (CanProve(step <= zero, ranges)) {
      worst = it->second.max;  // slack shrinks as v grows
    } else if (CanProve(step >= zero, ranges)) {
      worst = it->second.min;
    } else {
      return Expr();
    }
    slack = Substitute(slack, {{v, make_const(var.dtype(), static_cast<double>(worst))}});
  }
  Expr zero = make_const(slack.dtype(), 0);
  Expr condition = Simplify(strict ? slack > zero : slack >= zero, ranges);
  bool bounded_vars_only = true;
  PostOrderVisit(condition, [&](const Expr& x) {
    if (const auto* var = x.as<VarNode>()) {
      auto it = ranges.find(var);
      bool inner_var =
          std::any_of(inner.begin(), inner.end(), [&](const Expr& e) { return e.as<VarNode>() == var; });
      if (inner_var || it == ranges.end() || !it->second.bounded()) bounded_vars_only = false;
    }
  });
  return bounded_vars_only ? condition : Expr();
}

// Versions a loop body on the conditions, hoisted out of its guards, under
// which every comparison of the loop variable holds inside:
//   if (conditions) { body without those comparisons } else { body }
// For a loop whose guard-free iterations are not a prefix, e.g. a parallel
// loop fusing row and column tiles where the last tile of every row is
// guarded. The hoisted comparisons are those using the loop variable that
// HoistComparison can lift; a blocking one (with a vectorized variable) that
// it cannot lift leaves the body as is.
class GuardHoister : public GuardComparisonFilter {
 public:
  // blocking_only: hoist only the comparisons that block vectorization; the
  // others stay in the fast body (scalar conditions, which a vector loop can
  // hold).
  GuardHoister(const VarNode* loop_var, VarRanges ranges, bool blocking_only)
      : GuardComparisonFilter(loop_var, std::move(ranges)), blocking_only_(blocking_only) {}

  int hoisted() const { return static_cast<int>(conditions_.size()); }

  // The conjunction of the hoisted conditions, or undefined when the body
  // cannot be versioned (a blocking comparison kept) or would gain little:
  // nothing blocking, and no hoisted guard inside two loops or more (a branch
  // per iteration of a hot loop, around the stores of a register tile).
  Expr condition() const {
    bool gains = blocking_ > 0 || deepest_hoisted_ >= 2;
    if (!gains || blocking_kept_ > 0 || conditions_.empty()) return Expr();
    Expr all = conditions_[0];
    for (size_t i = 1; i < conditions_.size(); ++i) all = all && conditions_[i];
    return all;
  }

 protected:
  bool Keep(const Expr& c) override {
    bool blocking = UsesVectorVar(c);
    blocking_ += blocking;
    Expr hoisted =
        blocking || !blocking_only_ ? HoistComparison(c.as<BinaryNode>(), inner_, ranges_) : Expr();
    if (!hoisted.defined()) {
      blocking_kept_ += blocking;
      return true;
    }
    deepest_hoisted_ = std::max(deepest_hoisted_, static_cast<int>(inner_.size()));
    if (std::none_of(conditions_.begin(), conditions_.end(),
                     [&](const Expr& x) { return StructuralEqual(x, hoisted); })) {
      conditions_.push_back(hoisted);
    }
    return false;
  }

 private:
  bool blocking_only_;
  std::vector<Expr> conditions_;
  int blocking_ = 0, blocking_kept_ = 0, deepest_hoisted_ = 0;
};

class LoopPartitioner : public RangeTrackingMutator {
 public:
  explicit LoopPartitioner(bool versioning) : versioning_(versioning) {}

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
    if (!main_body.defined()) {
      Stmt versioned = VersionedBody(n->body, var, Interval{min, end - 1});
      if (!versioned.defined()) return RangeTrackingMutator::MutateFor(s, n);
      return ForNode::make(n->loop_var, n->min, n->extent, n->for_kind, versioned);
    }
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
      Stmt rest = end - k > 1 ? VersionedBody(n->body, var, Interval{k, end - 1}) : Stmt();
      if (!rest.defined()) rest = MutateWithRange(n->body, var, Interval{k, end - 1});
      parts.push_back(ForNode::make(n->loop_var, IntImmNode::make(n->min.dtype(), k),
                                    IntImmNode::make(n->extent.dtype(), end - k), n->for_kind, rest));
    }
    return SeqNode::make(parts);
  }

 private:
  // The body for v in range versioned by GuardHoister, or an undefined Stmt
  // when it cannot be or its fast version would never run. Loops inside a
  // versioned body are not versioned again: each level would multiply the
  // code (and LLVM's compile time) by up to three.
  Stmt VersionedBody(const Stmt& body, const VarNode* var, const Interval& range) {
    if (!versioning_ || inside_versioned_body_) return Stmt();
    VarRanges ranges = ranges_;
    ranges[var] = range;
    // Two versions at most besides the original: one with every comparison
    // on v hoisted (inner rows and columns in range), and, where that hoists
    // more, one with only the blocking ones (an edge row of full columns
    // stays SIMD, checking its rows as scalars).
    GuardHoister all(var, ranges, /*blocking_only=*/false), blocking(var, ranges, /*blocking_only=*/true);
    Stmt fast_all = all.Mutate(body), fast_blocking = blocking.Mutate(body);
    auto runs = [&](const Expr& c) { return c.defined() && !CanProve(!c, ranges); };
    Expr all_condition = all.condition(), blocking_condition = blocking.condition();
    bool use_blocking = runs(blocking_condition);
    bool use_all = runs(all_condition) && !(use_blocking && all.hoisted() == blocking.hoisted());
    if (!use_blocking && !use_all) return Stmt();
    inside_versioned_body_ = true;
    Stmt versioned = MutateWithRange(body, var, range);
    if (use_blocking) {
      versioned =
          IfThenElseNode::make(blocking_condition, MutateWithRange(fast_blocking, var, range), versioned);
    }
    if (use_all)
      versioned = IfThenElseNode::make(all_condition, MutateWithRange(fast_all, var, range), versioned);
    inside_versioned_body_ = false;
    return versioned;
  }

  bool versioning_;
  bool inside_versioned_body_ = false;
};

}  // namespace

Stmt PartitionLoops(const Stmt& s, bool versioning) {
  bool gpu_kernel = false;
  PostOrderVisitStmt(s, [&](const Stmt& x) {
    if (const auto* loop = x.as<ForNode>(); loop && loop->for_kind >= ForKind::VThread) gpu_kernel = true;
  });
  return LoopPartitioner(versioning && !gpu_kernel).Mutate(s);
}

}  // namespace autosched
