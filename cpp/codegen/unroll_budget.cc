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

int64_t Capped(int64_t a, int64_t b) { return std::min(kHuge, a + b); }

int64_t Times(int64_t body, int64_t copies) {
  return copies > kHuge / std::max<int64_t>(body, 1) ? kHuge : body * copies;
}

// Weighs a statement (expression nodes, and one per loop) as the
// emitter will produce them, choosing the loops to unroll on the way: a
// loop's body is counted before the loop itself is decided.
//
// Every node counts in full, except in the loops that read a constant
// matrix (a chain of selects of immediates and the unrolled loops'
// variables, as Winograd's transforms read their coefficients): there an
// expression that folds to one value in every copy weighs as one node. Such
// an expression is made of constants and the unrolled loops' variables (the
// select chain, an index), of none of those variables (computed once for
// all copies), or is the address of a load or store (a constant offset from
// one computed before). Elsewhere the full count is kept: schedules tuned
// with it ran slower when the folded count unrolled more of their loops.
class UnrollPlanner : public StmtVisitor {
 public:
  UnrollPlanner(int64_t budget, int64_t matrix_budget) : left_(budget), left_matrix_(matrix_budget) {}

  std::unordered_set<const ForNode*> chosen;

 protected:
  void VisitExpr(const Expr& e) override { Add(Weigh(e, false).size); }

  void VisitBufferStore(const BufferStoreNode* n) override {
    Add(Weigh(n->value, false).size);
    for (const Expr& index : n->indices) Add(Weigh(index, true).size);
  }

  void VisitFor(const ForNode* n) override {
    Add({1, 1});
    const Size before = size_;
    const auto* var = n->loop_var.as<VarNode>();
    const bool unrolled = n->for_kind == ForKind::Unrolled && var != nullptr;
    if (unrolled) unrolled_vars_.insert(var);
    StmtVisitor::VisitFor(n);
    if (unrolled) unrolled_vars_.erase(var);
    const Size body{size_.full - before.full, size_.folded - before.folded};
    int64_t extent = 0;
    if (!unrolled || !GetConstInt(n->extent, &extent) || extent < 1) return;
    const Size added{Times(body.full, extent - 1), Times(body.folded, extent - 1)};
    // A statement shared by two places of the function is emitted twice.
    if (!chosen.count(n)) {
      const bool matrix = matrix_vars_.count(var) > 0;
      int64_t& left = matrix ? left_matrix_ : left_;
      const int64_t cost = matrix ? added.folded : added.full;
      if (cost > left) return;
      left -= cost;
      chosen.insert(n);
    }
    Add(added);
  }

 private:
  struct Size {
    int64_t full;    // every node
    int64_t folded;  // what folds to one value weighing one
  };
  struct Weighed {
    Size size;
    bool constant;   // pure, of immediates and the unrolled loops' variables
    bool invariant;  // pure, of none of those variables
    bool pure;       // no load, call or binding anywhere in it
  };

  void Add(const Size& s) { size_ = {Capped(size_.full, s.full), Capped(size_.folded, s.folded)}; }

  Weighed Weigh(const Expr& e, bool in_index) {
    const int64_t own = Weight(e);
    switch (e.kind()) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm: return {{own, own}, true, true, true};
      case ExprKind::Var: {
        const bool unrolled = unrolled_vars_.count(e.as<VarNode>()) > 0;
        return {{own, own}, unrolled, !unrolled, true};
      }
      default: break;
    }
    const bool pure = e.kind() != ExprKind::BufferLoad && e.kind() != ExprKind::TensorLoad &&
                      e.kind() != ExprKind::Call && e.kind() != ExprKind::Let && e.kind() != ExprKind::Reduce;
    Weighed sum{{own, own}, pure, pure, pure};
    const bool address = in_index || e.kind() == ExprKind::BufferLoad;
    for (const Expr& child : Children(e)) {
      Weighed w = Weigh(child, address);
      sum.size = {Capped(sum.size.full, w.size.full), Capped(sum.size.folded, w.size.folded)};
      sum.constant = sum.constant && w.constant;
      sum.invariant = sum.invariant && w.invariant;
      sum.pure = sum.pure && w.pure;
    }
    if (sum.constant || sum.invariant || (sum.pure && in_index)) sum.size.folded = own;
    if (sum.constant && e.kind() == ExprKind::Select) {
      PostOrderVisit(e, [&](const Expr& x) {
        if (const auto* v = x.as<VarNode>()) matrix_vars_.insert(v);
      });
    }
    return sum;
  }

  Size size_{0, 0};
  int64_t left_;
  int64_t left_matrix_;
  std::unordered_set<const VarNode*> unrolled_vars_;
  std::unordered_set<const VarNode*> matrix_vars_;  // the variables a constant select chain reads
};

}  // namespace

std::unordered_set<const ForNode*> LoopsToUnroll(const Stmt& body, int64_t budget, int64_t matrix_budget) {
  UnrollPlanner planner(budget, matrix_budget);
  planner.Visit(body);
  return std::move(planner.chosen);
}

}  // namespace autosched
