#include "codegen/llvm/amx_tile.h"

#include "ir/functor.h"
#include "ir/simplify.h"

namespace autosched {
namespace {

constexpr int64_t kTileRows = 16;    // rows of a tile register
constexpr int64_t kTileGroups = 16;  // groups of 4 bytes in a row of 64 bytes
constexpr int kTileLanes = 16;       // 32-bit lanes in a row of C

// The statement inside loops of extent 1, whose variables `skipped` binds to
// their mins.
const StmtNode* SkipUnitLoops(const Stmt& s, VarMap* skipped) {
  const StmtNode* node = s.get();
  while (node->kind == StmtKind::For) {
    const auto* loop = static_cast<const ForNode*>(node);
    int64_t extent = 0;
    if (!GetConstInt(loop->extent, &extent) || extent != 1) break;
    (*skipped)[loop->loop_var.as<VarNode>()] = loop->min;
    node = loop->body.get();
  }
  return node;
}

// A serial or unrolled loop of constant extent.
const ForNode* PlainLoop(const StmtNode* node, int64_t* extent) {
  if (node->kind != StmtKind::For) return nullptr;
  const auto* loop = static_cast<const ForNode*>(node);
  if (loop->for_kind != ForKind::Serial && loop->for_kind != ForKind::Unrolled) return nullptr;
  return GetConstInt(loop->extent, extent) ? loop : nullptr;
}

// The constant change of `e` when `var` grows by one, where there is one.
std::optional<int64_t> Step(const Expr& e, const Expr& var_expr) {
  const auto* var = var_expr.as<VarNode>();
  int64_t step = 0;
  if (!GetConstInt(Simplify(Substitute(e, {{var, var_expr + make_const(var->dtype, 1)}}) - e), &step))
    return std::nullopt;
  return step;
}

}  // namespace

bool HasTileMultiply(const Target& target, DotProductKind kind) {
  if (!target.cpu.Has("amx-tile")) return false;
  return target.cpu.Has(kind == DotProductKind::U8S8ToI32 ? "amx-int8" : "amx-bf16");
}

std::optional<TileLoop> MatchTileLoop(const ForNode* element_loop, const Target& target) {
  if (!target.cpu.Has("amx-tile")) return std::nullopt;
  int64_t group = 0, groups = 0, rows = 0;
  if (PlainLoop(element_loop, &group) == nullptr || (group != 4 && group != 2)) return std::nullopt;
  VarMap skipped;
  const ForNode* group_loop = PlainLoop(SkipUnitLoops(element_loop->body, &skipped), &groups);
  if (group_loop == nullptr || groups < kTileGroups) return std::nullopt;
  const ForNode* row_loop = PlainLoop(SkipUnitLoops(group_loop->body, &skipped), &rows);
  if (row_loop == nullptr || rows > kTileRows) return std::nullopt;
  const StmtNode* leaf = SkipUnitLoops(row_loop->body, &skipped);
  if (leaf->kind != StmtKind::BufferStore) return std::nullopt;
  const auto* store = static_cast<const BufferStoreNode*>(leaf);
  // The block is emitted once for all its iterations: no inner loop's bounds
  // may depend on an outer loop of the block.
  auto bounds_use = [](const ForNode* loop, const ForNode* outer) {
    const auto* v = outer->loop_var.as<VarNode>();
    return UsesVar(loop->min, v) || UsesVar(loop->extent, v);
  };
  if (bounds_use(group_loop, element_loop) || bounds_use(row_loop, element_loop) ||
      bounds_use(row_loop, group_loop))
    return std::nullopt;
  auto d = MatchDotProductStore(store, element_loop->loop_var, static_cast<int>(group), target);
  if (!d || d->lanes != kTileLanes || !HasTileMultiply(target, d->kind)) return std::nullopt;
  if (d->broadcast->buffer == store->buffer || d->vector->buffer == store->buffer) return std::nullopt;
  const Expr& i = row_loop->loop_var;
  const Expr& k = group_loop->loop_var;
  const Expr c = Substitute(store->indices[0].as<RampNode>()->base, skipped);
  const Expr x = Substitute(d->broadcast_index, skipped);
  const Expr w = Substitute(d->vector_base, skipped);
  // C: rows sC apart, the same for every group; X: K contiguous (4 elements
  // per group), rows sA apart; W: the same for every row, groups sB apart.
  const auto c_row = Step(c, i), c_group = Step(c, k);
  const auto x_row = Step(x, i), x_group = Step(x, k);
  const auto w_row = Step(w, i), w_group = Step(w, k);
  if (!c_row || !c_group || !x_row || !x_group || !w_row || !w_group) return std::nullopt;
  if (*c_group != 0 || *x_group != group || *w_row != 0) return std::nullopt;
  if (*c_row < kTileLanes || *x_row < group * std::min(groups, kTileGroups) || *w_group < group * kTileLanes)
    return std::nullopt;
  TileLoop tile;
  tile.store = *d;
  tile.node = store;
  tile.group = static_cast<int>(group);
  tile.rows = rows;
  tile.groups = groups;
  tile.row_stride_c = *c_row;
  tile.row_stride_x = *x_row;
  tile.group_stride_w = *w_group;
  const VarMap first{{i.as<VarNode>(), row_loop->min},
                     {element_loop->loop_var.as<VarNode>(), element_loop->min}};
  tile.c_index = Simplify(Substitute(c, first));
  tile.x_index = Simplify(Substitute(x, first));
  tile.w_index = Simplify(Substitute(w, first));
  tile.group_var = k;
  tile.group_min = group_loop->min;
  return tile;
}

}  // namespace autosched
