#include "codegen/unroll_budget.h"

#include <algorithm>
#include <limits>

#include "ir/functor.h"
#include "lower/stmt_functor.h"

namespace autosched {
namespace {

constexpr int64_t kHuge = std::numeric_limits<int64_t>::max() / 4;
constexpr int64_t kCallWeight = 4;

// What one expression node weighs: vector operations count per 256 bits of
// lanes (an AVX2 register), and math functions with no vector instruction,
// which become one library call per lane, count several units per lane.
int64_t Weight(const Expr& e) {
  DataType t = e.dtype();
  if (const auto* call = e.as<CallNode>(); call && FactsOf(call->op).library_call_per_lane) {
    return kCallWeight * t.lanes;
  }
  return std::max<int64_t>(1, int64_t{t.lanes} * t.bits / 256);
}

// Weighs a statement (expression nodes, and one per loop) as the
// emitter will produce them, choosing the loops to unroll on the way: a
// loop's body is counted before the loop itself is decided.
class UnrollPlanner : public StmtVisitor {
 public:
  explicit UnrollPlanner(int64_t budget) : left_(budget) {}

  std::unordered_set<const ForNode*> chosen;

 protected:
  void VisitExpr(const Expr& e) override { size_ = std::min(kHuge, size_ + Weigh(e, false).weight); }

  void VisitBufferStore(const BufferStoreNode* n) override {
    size_ = std::min(kHuge, size_ + Weigh(n->value, false).weight);
    for (const Expr& index : n->indices) size_ = std::min(kHuge, size_ + Weigh(index, true).weight);
  }

  void VisitFor(const ForNode* n) override {
    size_ = std::min(kHuge, size_ + 1);
    int64_t before = size_;
    const auto* var = n->loop_var.as<VarNode>();
    const bool unrolled = n->for_kind == ForKind::Unrolled && var != nullptr;
    if (unrolled) unrolled_vars_.insert(var);
    StmtVisitor::VisitFor(n);
    if (unrolled) unrolled_vars_.erase(var);
    int64_t body = size_ - before;
    int64_t extent = 0;
    if (n->for_kind != ForKind::Unrolled || !GetConstInt(n->extent, &extent) || extent < 1) return;
    int64_t added = extent - 1 > kHuge / std::max<int64_t>(body, 1) ? kHuge : body * (extent - 1);
    // A statement shared by two places of the function is emitted twice.
    if (!chosen.count(n)) {
      if (added > left_) return;
      left_ -= added;
      chosen.insert(n);
    }
    size_ = std::min(kHuge, size_ + added);
  }

 private:
  struct Weighed {
    int64_t weight;
    bool constant;   // pure, of immediates and the variables of the unrolled loops around it
    bool invariant;  // pure, of no variable of those loops
    bool pure;       // no load, call or binding anywhere in it
  };

  // What an expression adds to each copy of the unrolled loops around it. A
  // constant one folds to one immediate in every copy (an index, or a
  // constant matrix's select chain), an invariant one is computed once for
  // all copies (the emitted copies share it), and an index (`in_index`: the
  // address of a load or store) becomes an address with a constant offset
  // from one computed before; so each weighs as one node.
  Weighed Weigh(const Expr& e, bool in_index) {
    switch (e.kind()) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm: return {Weight(e), true, true, true};
      case ExprKind::Var: {
        const bool unrolled = unrolled_vars_.count(e.as<VarNode>()) > 0;
        return {Weight(e), unrolled, !unrolled, true};
      }
      default: break;
    }
    const bool pure = e.kind() != ExprKind::BufferLoad && e.kind() != ExprKind::TensorLoad &&
                      e.kind() != ExprKind::Call && e.kind() != ExprKind::Let && e.kind() != ExprKind::Reduce;
    Weighed sum{Weight(e), pure, pure, pure};
    const bool address = in_index || e.kind() == ExprKind::BufferLoad;
    for (const Expr& child : Children(e)) {
      Weighed w = Weigh(child, address);
      sum.weight = std::min(kHuge, sum.weight + w.weight);
      sum.constant = sum.constant && w.constant;
      sum.invariant = sum.invariant && w.invariant;
      sum.pure = sum.pure && w.pure;
    }
    if (sum.constant || sum.invariant || (sum.pure && in_index)) sum.weight = Weight(e);
    return sum;
  }

  int64_t size_ = 0;
  int64_t left_;
  std::unordered_set<const VarNode*> unrolled_vars_;
};

}  // namespace

std::unordered_set<const ForNode*> LoopsToUnroll(const Stmt& body, int64_t budget) {
  UnrollPlanner planner(budget);
  planner.Visit(body);
  return std::move(planner.chosen);
}

}  // namespace autosched
