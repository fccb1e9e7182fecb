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
  void VisitExpr(const Expr& e) override {
    PostOrderVisit(e, [&](const Expr& x) { size_ = std::min(kHuge, size_ + Weight(x)); });
  }

  void VisitFor(const ForNode* n) override {
    size_ = std::min(kHuge, size_ + 1);
    int64_t before = size_;
    StmtVisitor::VisitFor(n);
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
  int64_t size_ = 0;
  int64_t left_;
};

}  // namespace

std::unordered_set<const ForNode*> LoopsToUnroll(const Stmt& body, int64_t budget) {
  UnrollPlanner planner(budget);
  planner.Visit(body);
  return std::move(planner.chosen);
}

}  // namespace autosched
