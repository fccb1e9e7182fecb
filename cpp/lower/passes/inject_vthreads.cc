#include "lower/passes/inject_vthreads.h"

#include <unordered_map>
#include <unordered_set>

#include "lower/stmt_functor.h"

namespace autosched {
namespace {

// Private buffers allocated inside s (where each virtual thread may need its
// own copy).
std::unordered_set<const BufferNode*> PrivateAllocations(const Stmt& s) {
  std::unordered_set<const BufferNode*> out;
  PostOrderVisitStmt(s, [&](const Stmt& x) {
    if (const auto* a = x.as<AllocateNode>(); a && a->buffer->scope != MemScope::Shared)
      out.insert(a->buffer.get());
  });
  return out;
}

// The buffer with a leading dimension of `copies`.
Buffer Expanded(const BufferNode& b, int64_t copies) {
  std::vector<int64_t> shape{copies};
  shape.insert(shape.end(), b.shape.begin(), b.shape.end());
  std::vector<int64_t> strides;
  if (!b.strides.empty()) {
    int64_t span = 1;
    for (size_t d = 0; d < b.shape.size(); ++d) span += (b.shape[d] - 1) * b.strides[d];
    strides.push_back(span);
    strides.insert(strides.end(), b.strides.begin(), b.strides.end());
  }
  return MakeBuffer(b.name, b.dtype, shape, b.scope, strides);
}

// Moves one virtual-thread loop (variable `var`, extent `extent`) from
// around `body` down to the statements that depend on it.
class Injector {
 public:
  Injector(const VarNode* var, int64_t extent) : var_(var), extent_(extent) { variant_vars_.insert(var); }

  // The injected body, or an undefined Stmt when a shared buffer is written
  // per virtual thread.
  Stmt Run(const Stmt& body) {
    private_ = PrivateAllocations(body);
    do {
      changed_ = false;
      Mark(body, false);
    } while (changed_ && !shared_variant_);
    if (shared_variant_) return Stmt();
    for (const BufferNode* b : expanded_) copies_[b] = Expanded(*b, extent_);
    return Inject(body);
  }

 private:
  bool ExprVariant(const Expr& e) const {
    bool found = false;
    PostOrderVisit(e, [&](const Expr& x) {
      if (const auto* v = x.as<VarNode>(); v && variant_vars_.count(v)) found = true;
      if (const auto* l = x.as<BufferLoadNode>(); l && expanded_.count(l->buffer.get())) found = true;
    });
    return found;
  }

  bool StmtVariant(const Stmt& s) const {
    bool found = false;
    VisitStmtExprs(s, [&](const Expr& e) { found = found || ExprVariant(e); });
    PostOrderVisitStmt(s, [&](const Stmt& x) {
      if (const auto* st = x.as<BufferStoreNode>(); st && expanded_.count(st->buffer.get())) found = true;
    });
    return found;
  }

  void NoteVariantVar(const Expr& var) {
    if (variant_vars_.insert(var.as<VarNode>()).second) changed_ = true;
  }

  // One pass of the fixed point: which variables and private buffers depend
  // on the virtual thread (`control`: s runs under a condition or loop
  // bound that does).
  void Mark(const Stmt& s, bool control) {
    if (!s.defined()) return;
    if (const auto* f = s.as<ForNode>()) {
      const bool v = control || ExprVariant(f->min) || ExprVariant(f->extent);
      if (v) NoteVariantVar(f->loop_var);
      Mark(f->body, v);
    } else if (const auto* st = s.as<BufferStoreNode>()) {
      bool v = control || ExprVariant(st->value);
      for (const Expr& i : st->indices) v = v || ExprVariant(i);
      if (!v) return;
      if (private_.count(st->buffer.get())) {
        if (expanded_.insert(st->buffer.get()).second) changed_ = true;
      } else if (st->buffer->scope == MemScope::Shared) {
        shared_variant_ = true;
      }
    } else if (const auto* a = s.as<AllocateNode>()) {
      Mark(a->body, control);
    } else if (const auto* c = s.as<IfThenElseNode>()) {
      const bool v = control || ExprVariant(c->condition);
      Mark(c->then_case, v);
      Mark(c->else_case, v);
    } else if (const auto* q = s.as<SeqNode>()) {
      for (const Stmt& x : q->seq) Mark(x, control);
    } else if (const auto* l = s.as<LetStmtNode>()) {
      if (control || ExprVariant(l->value)) NoteVariantVar(l->var);
      Mark(l->body, control);
    } else if (const auto* p = s.as<PragmaNode>()) {
      Mark(p->body, control);
    }
  }

  Stmt Inject(const Stmt& s) {
    if (!s.defined() || !StmtVariant(s)) return s;
    if (const auto* f = s.as<ForNode>()) {
      if (f->for_kind == ForKind::Vectorized || ExprVariant(f->min) || ExprVariant(f->extent)) return Wrap(s);
      return ForNode::make(f->loop_var, f->min, f->extent, f->for_kind, Inject(f->body));
    }
    if (const auto* q = s.as<SeqNode>()) {
      std::vector<Stmt> seq;
      for (const Stmt& x : q->seq) seq.push_back(Inject(x));
      return SeqNode::make(seq);
    }
    if (const auto* a = s.as<AllocateNode>()) {
      const auto copy = copies_.find(a->buffer.get());
      return AllocateNode::make(copy != copies_.end() ? copy->second : a->buffer, Inject(a->body));
    }
    if (const auto* c = s.as<IfThenElseNode>()) {
      if (ExprVariant(c->condition)) return Wrap(s);
      return IfThenElseNode::make(c->condition, Inject(c->then_case), Inject(c->else_case));
    }
    if (const auto* l = s.as<LetStmtNode>()) {
      if (ExprVariant(l->value)) return Wrap(s);
      return LetStmtNode::make(l->var, l->value, Inject(l->body));
    }
    if (const auto* p = s.as<PragmaNode>()) return PragmaNode::make(p->key, p->value, Inject(p->body));
    return Wrap(s);
  }

  // s inside its own virtual-thread loop: a fresh variable, and the expanded
  // buffers indexed by it.
  Stmt Wrap(const Stmt& s) {
    const Expr var = VarNode::make(var_->name, var_->dtype);
    Stmt body = SubstituteStmt(s, {{var_, var}});
    body = CopyIndexer(copies_, var).Mutate(body);
    return ForNode::make(var, Expr(0), Expr(static_cast<int>(extent_)), ForKind::VThread, body);
  }

  // Accesses to expanded buffers get the virtual thread's copy as their
  // first index.
  class CopyIndexer : public StmtMutator {
   public:
    CopyIndexer(const std::unordered_map<const BufferNode*, Buffer>& copies, Expr var)
        : copies_(copies), var_(std::move(var)) {}

   protected:
    Expr MutateExpr(const Expr& e) override {
      return Rewrite(e, [&](const Expr& x) -> Expr {
        const auto* load = x.as<BufferLoadNode>();
        if (!load) return Expr();
        const auto copy = copies_.find(load->buffer.get());
        std::vector<Expr> indices;
        if (copy != copies_.end()) indices.push_back(var_);
        for (const Expr& i : load->indices) indices.push_back(MutateExpr(i));
        return BufferLoadNode::make(copy != copies_.end() ? copy->second : load->buffer, indices);
      });
    }
    Stmt MutateBufferStore(const Stmt& s, const BufferStoreNode* n) override {
      const auto copy = copies_.find(n->buffer.get());
      if (copy == copies_.end()) return StmtMutator::MutateBufferStore(s, n);
      std::vector<Expr> indices{var_};
      for (const Expr& i : n->indices) indices.push_back(MutateExpr(i));
      return BufferStoreNode::make(copy->second, MutateExpr(n->value), indices);
    }
    Stmt MutateAllocate(const Stmt& s, const AllocateNode* n) override {
      const auto copy = copies_.find(n->buffer.get());
      if (copy == copies_.end()) return StmtMutator::MutateAllocate(s, n);
      return AllocateNode::make(copy->second, Mutate(n->body));
    }

   private:
    const std::unordered_map<const BufferNode*, Buffer>& copies_;
    Expr var_;
  };

  const VarNode* var_ = nullptr;
  int64_t extent_;
  std::unordered_set<const VarNode*> variant_vars_;
  std::unordered_set<const BufferNode*> private_, expanded_;
  std::unordered_map<const BufferNode*, Buffer> copies_;
  bool changed_ = false, shared_variant_ = false;
};

class VirtualThreadPass : public StmtMutator {
 protected:
  Stmt MutateFor(const Stmt& s, const ForNode* n) override {
    Stmt r = StmtMutator::MutateFor(s, n);  // virtual threads nested inside first
    const auto* f = r.as<ForNode>();
    int64_t min = -1, extent = 0;
    if (f->for_kind != ForKind::VThread || !GetConstInt(f->min, &min) || min != 0 ||
        !GetConstInt(f->extent, &extent))
      return r;
    Stmt injected = Injector(f->loop_var.as<VarNode>(), extent).Run(f->body);
    return injected.defined() ? injected : r;
  }
};

}  // namespace

Stmt InjectVirtualThreads(const Stmt& s) { return VirtualThreadPass().Mutate(s); }

}  // namespace autosched
