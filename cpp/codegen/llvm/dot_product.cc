#include "codegen/llvm/dot_product.h"

#include "ir/functor.h"
#include "ir/simplify.h"
#include "ir/structural.h"

namespace autosched {
namespace {

struct Operand {
  const BufferLoadNode* load = nullptr;
  Expr index;  // the scalar index (broadcast operand) or the ramp's base (vector operand)
  int64_t stride = 0;
};

bool IsByte(DataType t) { return t.bits == 8 && (t.is_int() || t.is_uint()); }

// cast(broadcast(X[i])), broadcast(cast(X[i])) or cast(X[broadcast(i)]), of
// type `want` (the accumulator's).
std::optional<Operand> BroadcastOperand(const Expr& e, DataType want) {
  if (e.dtype() != want) return std::nullopt;
  Expr x = e;
  bool cast = false, broadcast = false;
  for (;;) {
    if (const auto* c = x.as<CastNode>(); c && !cast) {
      cast = true;
      x = c->value;
    } else if (const auto* b = x.as<BroadcastNode>(); b && !broadcast) {
      broadcast = true;
      x = b->value;
    } else {
      break;
    }
  }
  const auto* load = x.as<BufferLoadNode>();
  if (!cast || load == nullptr || load->indices.size() != 1) return std::nullopt;
  if (broadcast) {
    if (load->dtype.lanes != 1) return std::nullopt;
    return Operand{load, load->indices[0], 0};
  }
  const auto* index = load->indices[0].as<BroadcastNode>();
  if (index == nullptr) return std::nullopt;
  return Operand{load, index->value, 0};
}

// cast(W[ramp(base, stride, L)]) of type `want`.
std::optional<Operand> VectorOperand(const Expr& e, DataType want) {
  const auto* c = e.as<CastNode>();
  if (e.dtype() != want || c == nullptr) return std::nullopt;
  const auto* load = c->value.as<BufferLoadNode>();
  if (load == nullptr || load->indices.size() != 1) return std::nullopt;
  const auto* ramp = load->indices[0].as<RampNode>();
  if (ramp == nullptr || ramp->lanes != want.lanes) return std::nullopt;
  return Operand{load, ramp->base, ramp->stride};
}

// Whether `index` steps by exactly one element per iteration of the loop
// over `var`.
bool StepsByOne(const Expr& index, const Expr& var_expr) {
  const auto* var = var_expr.as<VarNode>();
  Expr next = Substitute(index, {{var, var_expr + make_const(var->dtype, 1)}});
  int64_t step = 0;
  return GetConstInt(Simplify(next - index), &step) && step == 1;
}

}  // namespace

std::optional<DotProductStore> MatchDotProductStore(const BufferStoreNode* store, const Expr& var_expr,
                                                    int group, const Target& target) {
  const auto* var = var_expr.as<VarNode>();
  const DataType t = store->value.dtype();
  if (store->indices.size() != 1 || t.lanes < 4 || t.bits != 32) return std::nullopt;
  const auto* ramp = store->indices[0].as<RampNode>();
  if (ramp == nullptr || ramp->stride != 1 || UsesVar(store->indices[0], var)) return std::nullopt;
  const auto* sum = store->value.as<BinaryNode>();
  if (sum == nullptr || sum->op != BinOp::Add) return std::nullopt;
  // acc + x * y, in either order.
  for (int side = 0; side < 2; ++side) {
    const Expr& acc = side == 0 ? sum->a : sum->b;
    const Expr& product = side == 0 ? sum->b : sum->a;
    const auto* acc_load = acc.as<BufferLoadNode>();
    const auto* mul = product.as<BinaryNode>();
    if (acc_load == nullptr || mul == nullptr || mul->op != BinOp::Mul || acc_load->buffer != store->buffer ||
        acc_load->indices.size() != 1 || !StructuralEqual(acc_load->indices[0], store->indices[0]))
      continue;
    for (int order = 0; order < 2; ++order) {
      auto bc = BroadcastOperand(order == 0 ? mul->a : mul->b, t);
      auto vec = VectorOperand(order == 0 ? mul->b : mul->a, t);
      if (!bc || !vec || vec->stride != group) continue;
      const DataType x = bc->load->dtype.element_of(), w = vec->load->dtype.element_of();
      DotProductStore d;
      if (t.is_int() && group == 4 && IsByte(x) && IsByte(w) && x.is_uint() != w.is_uint()) {
        d.kind = DotProductKind::U8S8ToI32;
        d.broadcast_is_unsigned = x.is_uint();
      } else if (t.is_float() && group == 2 && x.is_bfloat16() && w.is_bfloat16()) {
        d.kind = DotProductKind::BF16ToF32;
      } else {
        continue;
      }
      if (DotProductInstructionLanes(target, d.kind, t.lanes) == 0 &&
          WideningDotProductLanes(target, d.kind, t.lanes) == 0)
        return std::nullopt;
      if (!StepsByOne(bc->index, var_expr) || !StepsByOne(vec->index, var_expr)) continue;
      d.lanes = t.lanes;
      d.accumulator = acc;
      d.broadcast = bc->load;
      d.broadcast_index = bc->index;
      d.vector = vec->load;
      d.vector_base = vec->index;
      return d;
    }
  }
  return std::nullopt;
}

namespace {

// Every store of `s`, through loops and sequences, as a dot-product store.
bool CollectStores(const Stmt& s, const Expr& var, int group, const Target& target, DotProductLoop* out) {
  switch (s.kind()) {
    case StmtKind::Seq:
      for (const Stmt& x : s.as<SeqNode>()->seq) {
        if (!CollectStores(x, var, group, target, out)) return false;
      }
      return true;
    case StmtKind::For: {
      const auto* loop = s.as<ForNode>();
      if (loop->for_kind != ForKind::Serial && loop->for_kind != ForKind::Unrolled) return false;
      // The body is emitted once, the variable at its min: no inner bound may depend on it.
      const auto* v = var.as<VarNode>();
      if (UsesVar(loop->min, v) || UsesVar(loop->extent, v)) return false;
      return CollectStores(loop->body, var, group, target, out);
    }
    case StmtKind::BufferStore: {
      const auto* store = s.as<BufferStoreNode>();
      auto d = MatchDotProductStore(store, var, group, target);
      if (!d) return false;
      out->stores.emplace(store, std::move(*d));
      return true;
    }
    default: return false;
  }
}

}  // namespace

int DotProductInstructionLanes(const Target& target, DotProductKind kind, int lanes) {
  const CpuSpec& cpu = target.cpu;
  bool has512 = false, has256 = false;  // has256: the 256- and 128-bit forms
  switch (kind) {
    case DotProductKind::U8S8ToI32:
      has512 = cpu.Has("avx512vnni");
      has256 = cpu.Has("avxvnni") || (has512 && cpu.Has("avx512vl"));
      break;
    case DotProductKind::BF16ToF32:
      has512 = cpu.Has("avx512bf16");
      has256 = has512 && cpu.Has("avx512vl");
      break;
  }
  if (has512 && lanes % 16 == 0) return 16;
  if (has256 && lanes % 8 == 0) return 8;
  if (has256 && lanes == 4) return 4;
  return 0;
}

int WideningDotProductLanes(const Target& target, DotProductKind kind, int lanes) {
  // A CPU with VNNI but not for these lanes (avx512vnni without avx512vl, 8
  // lanes) widens too.
  if (kind != DotProductKind::U8S8ToI32 || DotProductInstructionLanes(target, kind, lanes) > 0 ||
      target.cpu.ByteDotProductForm() == CpuSpec::ByteDotProduct::kOrdinary)
    return 0;
  if (target.cpu.Has("avx512bw") && lanes % 16 == 0) return 16;
  if (target.cpu.Has("avx2") && lanes % 8 == 0) return 8;
  return 0;
}

// The loop may sit outside other loops of its body (a schedule that keeps
// the group's axis outermost of the reduction): each store accumulates into
// an element that does not depend on the loop's variable, so merging the
// loop's iterations into each store only reorders a sum (exact for
// integers).
std::optional<DotProductLoop> MatchDotProductLoop(const ForNode* loop, const Target& target) {
  int64_t extent = 0;
  if (!GetConstInt(loop->extent, &extent) || (extent != 4 && extent != 2)) return std::nullopt;
  if (loop->for_kind != ForKind::Serial && loop->for_kind != ForKind::Unrolled) return std::nullopt;
  DotProductLoop block;
  block.group = static_cast<int>(extent);
  if (!CollectStores(loop->body, loop->loop_var, block.group, target, &block)) return std::nullopt;
  if (block.stores.empty()) return std::nullopt;
  // The loop's iterations are merged into one, so no operand may be a buffer
  // the block writes.
  for (const auto& [store, d] : block.stores) {
    for (const auto& [other, unused] : block.stores) {
      if (d.broadcast->buffer == other->buffer || d.vector->buffer == other->buffer) return std::nullopt;
    }
  }
  return block;
}

}  // namespace autosched
