#include "codegen/prefetch_plan.h"

#include <vector>

#include "ir/functor.h"
#include "lower/stmt_functor.h"

namespace autosched {
namespace {

struct InnerLoop {
  const VarNode* var;
  int64_t extent;
};

bool Repeats(const ForNode* loop) {
  int64_t extent = 0;
  return loop->for_kind != ForKind::Parallel && !(GetConstInt(loop->extent, &extent) && extent <= 1);
}

// What one iteration of a loop streams (the elements of its prefetchable
// loads) and the arithmetic it does (stored lanes), both over every loop
// inside it. Unknown where an inner loop's extent is not a constant.
class SliceMeter : public StmtVisitor {
 public:
  SliceMeter(const VarNode* loop_var, const std::vector<const VarNode*>& outer_vars,
             const std::unordered_set<const BufferNode*>& read_only)
      : loop_var_(loop_var), outer_vars_(outer_vars), read_only_(read_only) {}

  bool known = true;
  int64_t slice_bytes = 0, slice_elements = 0, stored_lanes = 0;
  std::vector<const BufferLoadNode*> loads;

 protected:
  void VisitFor(const ForNode* n) override {
    VisitExpr(n->min);
    VisitExpr(n->extent);
    int64_t extent = 0;
    if (!GetConstInt(n->extent, &extent)) {
      known = false;
      return;
    }
    inner_.push_back({n->loop_var.as<VarNode>(), extent});
    Visit(n->body);
    inner_.pop_back();
  }

  void VisitBufferStore(const BufferStoreNode* n) override {
    int64_t executions = 1;
    for (const InnerLoop& loop : inner_) executions *= loop.extent;
    stored_lanes += executions * n->value.dtype().lanes;
    StmtVisitor::VisitBufferStore(n);
  }

  void VisitExpr(const Expr& e) override {
    PostOrderVisit(e, [&](const Expr& x) {
      const auto* load = x.as<BufferLoadNode>();
      if (load == nullptr || !Streams(load)) return;
      int64_t elements = load->dtype.lanes;
      for (const InnerLoop& loop : inner_) {
        if (UsesVar(load->indices[0], loop.var)) elements *= loop.extent;
      }
      slice_elements += elements;
      slice_bytes += elements * load->buffer->dtype.bytes();
      loads.push_back(load);
    });
  }

 private:
  bool Streams(const BufferLoadNode* load) const {
    if (!read_only_.count(load->buffer.get()) || load->indices.size() != 1) return false;
    const auto* ramp = load->indices[0].as<RampNode>();
    if (ramp == nullptr || ramp->stride != 1 ||
        load->dtype.bytes() * load->dtype.lanes < kMinPrefetchLoadBytes) {
      return false;
    }
    if (!UsesVar(ramp->base, loop_var_)) return false;
    for (const VarNode* outer : outer_vars_) {
      if (!UsesVar(ramp->base, outer)) return false;
    }
    return true;
  }

  const VarNode* loop_var_;
  const std::vector<const VarNode*>& outer_vars_;
  const std::unordered_set<const BufferNode*>& read_only_;
  std::vector<InnerLoop> inner_;
};

// Top-down: the outermost loop of each nest that qualifies, none inside it.
class PlanWalker : public StmtVisitor {
 public:
  PlanWalker(const std::unordered_set<const BufferNode*>& read_only, PrefetchPlan* plan)
      : read_only_(read_only), plan_(plan) {}

 protected:
  void VisitFor(const ForNode* n) override {
    if (Qualifies(n)) return;
    const bool repeats = Repeats(n);
    if (repeats) outer_vars_.push_back(n->loop_var.as<VarNode>());
    StmtVisitor::VisitFor(n);
    if (repeats) outer_vars_.pop_back();
  }

 private:
  bool Qualifies(const ForNode* loop) {
    int64_t extent = 0;
    if (loop->for_kind != ForKind::Serial || !GetConstInt(loop->extent, &extent) || extent < 2) return false;
    SliceMeter meter(loop->loop_var.as<VarNode>(), outer_vars_, read_only_);
    meter.Visit(loop->body);
    if (!meter.known || meter.slice_bytes < kMinPrefetchSliceBytes ||
        meter.slice_bytes > kMaxPrefetchSliceBytes ||
        meter.stored_lanes < kMinLanesPerSliceElement * meter.slice_elements) {
      return false;
    }
    plan_->loops.insert(loop);
    plan_->loads.insert(meter.loads.begin(), meter.loads.end());
    return true;
  }

  const std::unordered_set<const BufferNode*>& read_only_;
  PrefetchPlan* plan_;
  std::vector<const VarNode*> outer_vars_;  // loops around the one looked at that repeat their body
};

}  // namespace

PrefetchPlan PlanPrefetches(const LoweredFunc& f) {
  PrefetchPlan plan;
  std::unordered_set<const BufferNode*> stored, read_only;
  PostOrderVisitStmt(f.body, [&](const Stmt& s) {
    if (const auto* store = s.as<BufferStoreNode>()) stored.insert(store->buffer.get());
  });
  for (const Buffer& arg : f.args) {
    if (!stored.count(arg.get())) read_only.insert(arg.get());
  }
  if (read_only.empty()) return plan;
  PlanWalker(read_only, &plan).Visit(f.body);
  return plan;
}

}  // namespace autosched
