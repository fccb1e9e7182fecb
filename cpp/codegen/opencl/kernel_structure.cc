#include "codegen/opencl/kernel_structure.h"

#include <unordered_set>

#include "ir/functor.h"
#include "lower/stmt_functor.h"
#include "support/error.h"

namespace autosched::opencl_kernels {
namespace {

std::vector<Stmt> Children(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::For: return {s.as<ForNode>()->body};
    case StmtKind::Allocate: return {s.as<AllocateNode>()->body};
    case StmtKind::IfThenElse: return {s.as<IfThenElseNode>()->then_case, s.as<IfThenElseNode>()->else_case};
    case StmtKind::Seq: return s.as<SeqNode>()->seq;
    case StmtKind::LetStmt: return {s.as<LetStmtNode>()->body};
    case StmtKind::Pragma: return {s.as<PragmaNode>()->body};
    case StmtKind::BufferStore: return {};
  }
  return {};
}

// A loop bound to a threadIdx index inside a loop bound to the same index is
// the cooperative fetch of a "shared" stage computed inside the thread loops
// (its region spans the group, infer_bound.cc): the work items split the
// copy among them. It may only write shared buffers, and its extent may not
// exceed the outer loop's (the work items outside that loop would skip their
// part of the copy).
void CheckCooperativeFetch(const ForNode* n, const ForNode* outer, int64_t extent) {
  int64_t outer_extent = 0;
  GetConstInt(outer->extent, &outer_extent);
  bool only_shared = BindingSlot(n->for_kind) >= 3;
  PostOrderVisitStmt(n->body, [&](const Stmt& x) {
    if (const auto* st = x.as<BufferStoreNode>(); st && st->buffer->scope != MemScope::Shared)
      only_shared = false;
  });
  AS_CHECK(only_shared && extent <= outer_extent,
           "OpenCL code generation: loop '"
               << LoopName(n) << "' is bound to " << ForKindName(n->for_kind) << " inside loop '"
               << LoopName(outer) << "', which is bound to it too; a binding nested in the same binding "
               << "is only allowed for a loop that writes \"shared\" buffers (a cooperative fetch) with an "
               << "extent at most the outer loop's (" << outer_extent << ", here " << extent << ")");
}

}  // namespace

int BindingSlot(ForKind k) {
  switch (k) {
    case ForKind::BlockIdxX: return 0;
    case ForKind::BlockIdxY: return 1;
    case ForKind::BlockIdxZ: return 2;
    case ForKind::ThreadIdxX: return 3;
    case ForKind::ThreadIdxY: return 4;
    case ForKind::ThreadIdxZ: return 5;
    default: return -1;
  }
}

std::string IdCall(int slot) {
  return std::string(slot < 3 ? "get_group_id(" : "get_local_id(") + std::to_string(slot % 3) + ")";
}

const std::string& LoopName(const ForNode* n) { return n->loop_var.as<VarNode>()->name; }

void Peel(const Stmt& s, std::vector<Buffer>* temps, std::vector<Stmt>* kernels) {
  if (!s.defined()) return;
  if (const auto* a = s.as<AllocateNode>()) {
    temps->push_back(a->buffer);
    return Peel(a->body, temps, kernels);
  }
  if (const auto* q = s.as<SeqNode>()) {
    for (const Stmt& x : q->seq) Peel(x, temps, kernels);
    return;
  }
  kernels->push_back(s);
}

void AnalyzeLaunch(const Stmt& s, std::array<const ForNode*, 6>* bound, Launch* launch) {
  if (!s.defined()) return;
  if (const auto* n = s.as<ForNode>(); n && IsGpuBinding(n->for_kind)) {
    const int slot = BindingSlot(n->for_kind);
    int64_t extent = 0;
    AS_CHECK(GetConstInt(n->extent, &extent) && extent >= 1,
             "OpenCL code generation: loop '" << LoopName(n) << "' bound to " << ForKindName(n->for_kind)
                                              << " needs a constant positive extent");
    if (const ForNode* outer = (*bound)[slot]) CheckCooperativeFetch(n, outer, extent);
    launch->extent[slot] = std::max(launch->extent[slot], extent);
    const ForNode* saved = (*bound)[slot];
    if (saved == nullptr) (*bound)[slot] = n;
    AnalyzeLaunch(n->body, bound, launch);
    (*bound)[slot] = saved;
    return;
  }
  for (const Stmt& c : Children(s)) AnalyzeLaunch(c, bound, launch);
}

std::vector<const BufferNode*> UsedBuffers(const Stmt& s) {
  std::vector<const BufferNode*> used;
  std::unordered_set<const BufferNode*> seen;
  auto note = [&](const BufferNode* b) {
    if (seen.insert(b).second) used.push_back(b);
  };
  PostOrderVisitStmt(s, [&](const Stmt& x) {
    if (const auto* st = x.as<BufferStoreNode>()) note(st->buffer.get());
  });
  VisitStmtExprs(s, [&](const Expr& e) {
    PostOrderVisit(e, [&](const Expr& x) {
      if (const auto* ld = x.as<BufferLoadNode>()) note(ld->buffer.get());
    });
  });
  return used;
}

void CheckNoBFloat16(const LoweredFunc& f, const std::vector<Buffer>& buffers) {
  std::string found;
  for (const Buffer& b : buffers) {
    if (found.empty() && b->dtype.is_bfloat16()) found = "buffer '" + b->name + "'";
  }
  VisitStmtExprs(f.body, [&](const Expr& e) {
    PostOrderVisit(
        e, [&](const Expr& x) { found = found.empty() && x.dtype().is_bfloat16() ? "a value" : found; });
  });
  AS_CHECK(found.empty(),
           "OpenCL code generation: " << found << " of '" << f.name
                                      << "' is bfloat16, which OpenCL targets do not support; build "
                                         "it for an llvm (CPU) target, or cast to float16 or float32");
}

bool StoresTo(const Stmt& s, const BufferNode* b) {
  bool found = false;
  PostOrderVisitStmt(s, [&](const Stmt& x) {
    if (const auto* st = x.as<BufferStoreNode>(); st && st->buffer.get() == b) found = true;
  });
  return found;
}

const ForNode* BindingAroundStore(const Stmt& s, const BufferNode* b) {
  const ForNode* found = nullptr;
  PostOrderVisitStmt(s, [&](const Stmt& x) {
    const auto* n = x.as<ForNode>();
    if (!found && n && IsGpuBinding(n->for_kind) && StoresTo(n->body, b)) found = n;
  });
  return found;
}

}  // namespace autosched::opencl_kernels
