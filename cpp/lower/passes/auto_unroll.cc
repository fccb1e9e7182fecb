#include "lower/passes/auto_unroll.h"

#include <algorithm>
#include <limits>

#include "lower/stmt_functor.h"

namespace autosched {
namespace {

constexpr int64_t kUnknownWork = std::numeric_limits<int64_t>::max() / 4;

int64_t SaturatingMul(int64_t a, int64_t b) {
  return a > kUnknownWork / std::max<int64_t>(b, 1) ? kUnknownWork : a * b;
}

class Unroller : public StmtMutator {
 public:
  // Work of the last statement mutated (stores in it, loops multiplied out).
  int64_t work = 0;

 protected:
  Stmt MutatePragma(const Stmt& s, const PragmaNode* n) override {
    if (n->key != "auto_unroll_max_step") return StmtMutator::MutatePragma(s, n);
    int64_t saved = max_step_;
    max_step_ = n->value;
    Stmt body = Mutate(n->body);
    max_step_ = saved;
    return body;
  }

  Stmt MutateFor(const Stmt& s, const ForNode* n) override {
    Stmt r = StmtMutator::MutateFor(s, n);
    int64_t extent = 0;
    if (!GetConstInt(n->extent, &extent)) {
      work = kUnknownWork;
      return r;
    }
    // A vectorized loop becomes one vector statement per lane group, so it
    // counts as one step, not `extent` of them (vectorize_loops runs later).
    if (n->for_kind != ForKind::Vectorized) work = SaturatingMul(work, extent);
    if (max_step_ > 0 && n->for_kind == ForKind::Serial && work <= max_step_) {
      const auto* f = r.as<ForNode>();
      return ForNode::make(f->loop_var, f->min, f->extent, ForKind::Unrolled, f->body);
    }
    return r;
  }

  Stmt MutateBufferStore(const Stmt& s, const BufferStoreNode* n) override {
    work = 1;
    return s;
  }

  Stmt MutateSeq(const Stmt& s, const SeqNode* n) override {
    std::vector<Stmt> seq;
    int64_t total = 0;
    for (const Stmt& x : n->seq) {
      seq.push_back(Mutate(x));
      total = std::min(kUnknownWork, total + work);
    }
    work = total;
    return SeqNode::make(seq);
  }

  Stmt MutateIfThenElse(const Stmt& s, const IfThenElseNode* n) override {
    Stmt then_case = Mutate(n->then_case);
    int64_t then_work = work;
    work = 0;
    Stmt else_case = Mutate(n->else_case);
    work = std::max(then_work, work);
    return IfThenElseNode::make(n->condition, then_case, else_case);
  }

 private:
  int64_t max_step_ = 0;
};

}  // namespace

Stmt AutoUnroll(const Stmt& s) { return Unroller().Mutate(s); }

}  // namespace autosched
