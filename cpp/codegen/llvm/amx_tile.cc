#include "codegen/llvm/amx_tile.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "ir/functor.h"
#include "ir/simplify.h"
#include "support/arith.h"

namespace autosched {
namespace {

constexpr int64_t kTileRows = 16;    // rows of a tile register
constexpr int64_t kTileGroups = 16;  // groups of 4 bytes in a row of 64 bytes
constexpr int kTileLanes = 16;       // 32-bit lanes in a row of C
constexpr int64_t kMaxTilesOfC = 4;  // of the 8 tile registers, the rest for A and B

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

bool IsZero(const Expr& e) {
  if (const auto* i = e.as<IntImmNode>()) return i->value == 0;
  if (const auto* f = e.as<FloatImmNode>()) return f->value == 0.0;
  return false;
}

// The first element of every 16-lane store `s` makes to `buffer`, each loop
// of the nest at each of its values, into `out`; false where `s` is anything
// else or takes more than kMaxInitStores stores.
constexpr size_t kMaxInitStores = 4096;
bool ZeroStoreStarts(const Stmt& s, const Buffer& buffer, VarMap* at, std::vector<int64_t>* out) {
  if (s.kind() == StmtKind::For) {
    const auto* loop = s.as<ForNode>();
    int64_t min = 0, extent = 0;
    if ((loop->for_kind != ForKind::Serial && loop->for_kind != ForKind::Unrolled) ||
        !GetConstInt(loop->min, &min) || !GetConstInt(loop->extent, &extent))
      return false;
    const auto* var = loop->loop_var.as<VarNode>();
    for (int64_t i = min; i < min + extent; ++i) {
      (*at)[var] = make_const(var->dtype, static_cast<double>(i));
      if (!ZeroStoreStarts(loop->body, buffer, at, out) || out->size() > kMaxInitStores) return false;
    }
    at->erase(var);
    return true;
  }
  if (s.kind() != StmtKind::BufferStore) return false;
  const auto* store = s.as<BufferStoreNode>();
  const auto* ramp = store->indices.size() == 1 ? store->indices[0].as<RampNode>() : nullptr;
  const auto* zero = store->value.as<BroadcastNode>();
  int64_t start = 0;
  if (store->buffer != buffer || ramp == nullptr || ramp->stride != 1 || ramp->lanes != kTileLanes ||
      zero == nullptr || !IsZero(zero->value) || !GetConstInt(Simplify(Substitute(ramp->base, *at)), &start))
    return false;
  out->push_back(start);
  return true;
}

}  // namespace

bool ZeroesTilesOfC(const Stmt& init, const TileLoop& tile) {
  int64_t c = 0;
  if (!GetConstInt(tile.c_index, &c)) return false;
  std::vector<int64_t> want, zeroed;
  for (int64_t r = 0; r < tile.rows; ++r) {
    for (int64_t p = 0; p < tile.panels; ++p)
      want.push_back(c + r * tile.row_stride_c + p * tile.panel_stride_c);
  }
  VarMap at;
  if (!ZeroStoreStarts(init, tile.node->buffer, &at, &zeroed)) return false;
  std::sort(want.begin(), want.end());
  std::sort(zeroed.begin(), zeroed.end());
  return want == zeroed;
}

bool HasTileMultiply(const Target& target, DotProductKind kind) {
  if (!target.cpu.Has("amx-tile")) return false;
  return target.cpu.Has(kind == DotProductKind::U8S8ToI32 ? "amx-int8" : "amx-bf16");
}

std::optional<TileLoop> MatchTileLoop(const ForNode* element_loop, const Target& target) {
  if (!target.cpu.Has("amx-tile")) return std::nullopt;
  int64_t group = 0, groups = 0;
  if (PlainLoop(element_loop, &group) == nullptr || (group != 4 && group != 2)) return std::nullopt;
  VarMap skipped;
  const ForNode* group_loop = PlainLoop(SkipUnitLoops(element_loop->body, &skipped), &groups);
  if (group_loop == nullptr || groups < kTileGroups) return std::nullopt;
  // Inside the group loop: one or two loops (the rows, and the panels of C
  // and W), then the store.
  std::vector<const ForNode*> inner;
  const StmtNode* leaf = SkipUnitLoops(group_loop->body, &skipped);
  for (int64_t extent = 0; inner.size() < 2; leaf = SkipUnitLoops(inner.back()->body, &skipped)) {
    const ForNode* loop = PlainLoop(leaf, &extent);
    if (loop == nullptr) break;
    inner.push_back(loop);
  }
  if (inner.empty() || leaf->kind != StmtKind::BufferStore) return std::nullopt;
  const auto* store = static_cast<const BufferStoreNode*>(leaf);
  // The block is emitted once for all its iterations: no loop's bounds may
  // depend on a loop of the block outside it.
  std::vector<const ForNode*> nest{element_loop, group_loop};
  nest.insert(nest.end(), inner.begin(), inner.end());
  for (size_t a = 1; a < nest.size(); ++a) {
    for (size_t b = 0; b < a; ++b) {
      const auto* v = nest[b]->loop_var.as<VarNode>();
      if (UsesVar(nest[a]->min, v) || UsesVar(nest[a]->extent, v)) return std::nullopt;
    }
  }
  auto d = MatchDotProductStore(store, element_loop->loop_var, static_cast<int>(group), target);
  if (!d || d->lanes != kTileLanes || !HasTileMultiply(target, d->kind)) return std::nullopt;
  if (d->broadcast->buffer == store->buffer || d->vector->buffer == store->buffer) return std::nullopt;
  const Expr& k = group_loop->loop_var;
  const Expr c = Substitute(store->indices[0].as<RampNode>()->base, skipped);
  const Expr x = Substitute(d->broadcast_index, skipped);
  const Expr w = Substitute(d->vector_base, skipped);
  // The groups: C the same for every group, X's K contiguous (`group`
  // elements per group), W's groups sB apart.
  const auto c_group = Step(c, k), x_group = Step(x, k), w_group = Step(w, k);
  if (!c_group || !x_group || !w_group || *c_group != 0 || *x_group != group || *w_group < group * kTileLanes)
    return std::nullopt;
  TileLoop tile;
  // The rows: X's and C's rows sA and sC apart, W the same for every row. The
  // panels: C's and W's panels apart, X the same for every panel.
  for (const ForNode* loop : inner) {
    const auto c_step = Step(c, loop->loop_var), x_step = Step(x, loop->loop_var),
               w_step = Step(w, loop->loop_var);
    if (!c_step || !x_step || !w_step) return std::nullopt;
    int64_t extent = 0;
    GetConstInt(loop->extent, &extent);
    if (*x_step != 0 && *w_step == 0 && tile.rows == 0) {
      tile.rows = extent;
      tile.row_stride_c = *c_step;
      tile.row_stride_x = *x_step;
      tile.row_var = loop->loop_var;
      tile.row_min = loop->min;
    } else if (*x_step == 0 && *w_step != 0 && tile.panels == 1 && tile.panel_var.get() == nullptr) {
      tile.panels = extent;
      tile.panel_stride_c = *c_step;
      tile.panel_stride_w = *w_step;
      tile.panel_var = loop->loop_var;
      tile.panel_min = loop->min;
    } else {
      return std::nullopt;
    }
  }
  // Tile registers: a tile of A per 16 rows, of B per panel, of C per both.
  const int64_t row_tiles = CeilDiv(tile.rows, kTileRows);
  if (tile.rows == 0 || row_tiles * tile.panels > kMaxTilesOfC ||
      row_tiles + tile.panels + row_tiles * tile.panels > 8)
    return std::nullopt;
  // One shape per kind of tile: the tile configuration gives each of the 8
  // registers one shape for the whole kernel, and tiles of other shapes (a
  // partial tile of rows, a last chunk of fewer groups) soon need more
  // registers than there are (LLVM fails to allocate them).
  if ((tile.rows > kTileRows && tile.rows % kTileRows != 0) || groups % kTileGroups != 0) return std::nullopt;
  // Whole rows of 64 bytes that do not overlap.
  if (std::abs(tile.row_stride_c) < kTileLanes || tile.row_stride_x < group * std::min(groups, kTileGroups))
    return std::nullopt;
  if (tile.panels > 1 && std::abs(tile.panel_stride_c) < kTileLanes) return std::nullopt;
  tile.store = *d;
  tile.node = store;
  tile.group = static_cast<int>(group);
  tile.groups = groups;
  tile.group_stride_w = *w_group;
  VarMap first{{element_loop->loop_var.as<VarNode>(), element_loop->min},
               {tile.row_var.as<VarNode>(), tile.row_min}};
  if (tile.panel_var.get() != nullptr) first[tile.panel_var.as<VarNode>()] = tile.panel_min;
  tile.c_index = Simplify(Substitute(c, first));
  tile.x_index = Simplify(Substitute(x, first));
  tile.w_index = Simplify(Substitute(w, first));
  tile.group_var = k;
  tile.group_min = group_loop->min;
  return tile;
}

}  // namespace autosched
