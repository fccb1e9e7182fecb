// IREmitter: tile blocks (codegen/llvm/amx_tile.h), as AMX tile loads, tile
// multiplies and a tile store. LLVM's AMX passes write the tile configuration
// (ldtilecfg) from the shapes given here and release the tiles on return.
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <vector>

#include "codegen/llvm/ir_emitter.h"
#include "ir/functor.h"
#include "ir/simplify.h"
#include "support/arith.h"
#include "support/error.h"

namespace autosched {
namespace {

constexpr int64_t kTileGroups = 16;  // groups of 4 bytes in a row of 64 bytes
constexpr int64_t kTileRows = 16;
constexpr int64_t kRowBytes = 64;

}  // namespace

bool IREmitter::EmitZeroedTileLoop(const Stmt& init, const Stmt& next) {
  if (next.kind() != StmtKind::For || lane_mask_ != nullptr || load_guard_ != nullptr ||
      dot_block_ != nullptr)
    return false;
  const auto tile = MatchTileLoop(next.as<ForNode>(), target_);
  if (!tile || !ZeroesTilesOfC(init, *tile)) return false;
  EmitTileLoop(*tile, /*zero_c=*/true);
  return true;
}

void IREmitter::EmitTileLoop(const TileLoop& tile, bool zero_c) {
  const DotProductStore& d = tile.store;
  auto shape = [&](int64_t v) { return b_.getInt16(static_cast<uint16_t>(v)); };
  auto stride = [&](int64_t elements, const Buffer& buffer) {
    return b_.getInt64(elements * buffer->dtype.bytes());
  };
  auto pointer = [&](const Buffer& buffer, const Expr& index) {
    bool contiguous = false, broadcast = false;
    return ElementPointers(buffer, index, &contiguous, &broadcast);
  };
  llvm::Function* load = llvm::Intrinsic::getDeclaration(module_, llvm::Intrinsic::x86_tileloadd64_internal);
  llvm::Function* store =
      llvm::Intrinsic::getDeclaration(module_, llvm::Intrinsic::x86_tilestored64_internal);
  llvm::Function* zero = llvm::Intrinsic::getDeclaration(module_, llvm::Intrinsic::x86_tilezero_internal);
  llvm::Intrinsic::ID multiply_id = llvm::Intrinsic::x86_tdpbf16ps_internal;
  if (d.kind == DotProductKind::U8S8ToI32) {
    // tdpbusd takes A's bytes as unsigned and B's as signed, tdpbsud the other way round.
    multiply_id = d.broadcast_is_unsigned ? llvm::Intrinsic::x86_tdpbusd_internal
                                          : llvm::Intrinsic::x86_tdpbsud_internal;
  }
  llvm::Function* multiply = llvm::Intrinsic::getDeclaration(module_, multiply_id);

  const Buffer& c_buffer = tile.node->buffer;
  const int64_t row_tiles = CeilDiv(tile.rows, kTileRows);
  auto rows_of = [&](int64_t r) { return std::min(kTileRows, tile.rows - r * kTileRows); };
  auto offset = [](const Expr& index, int64_t elements) {
    return Simplify(index + make_const(index.dtype(), static_cast<double>(elements)));
  };
  llvm::Value* c_stride = stride(tile.row_stride_c, c_buffer);
  std::vector<llvm::Value*> c_ptrs, c_tiles;  // row tile-major
  for (int64_t r = 0; r < row_tiles; ++r) {
    for (int64_t p = 0; p < tile.panels; ++p) {
      const int64_t first = r * kTileRows * tile.row_stride_c + p * tile.panel_stride_c;
      c_ptrs.push_back(pointer(c_buffer, offset(tile.c_index, first)));
      c_tiles.push_back(
          zero_c ? b_.CreateCall(zero, {shape(rows_of(r)), shape(kRowBytes)})
                 : b_.CreateCall(load, {shape(rows_of(r)), shape(kRowBytes), c_ptrs.back(), c_stride}));
    }
  }
  const auto* group_var = tile.group_var.as<VarNode>();
  for (int64_t first = 0; first < tile.groups; first += kTileGroups) {
    const int64_t groups = std::min(kTileGroups, tile.groups - first);
    const int64_t k_bytes = groups * kRowBytes / kTileGroups;  // 4 bytes per group
    const VarMap at{{group_var, tile.group_min + make_const(group_var->dtype, static_cast<double>(first))}};
    const Expr x_index = Simplify(Substitute(tile.x_index, at)),
               w_index = Simplify(Substitute(tile.w_index, at));
    std::vector<llvm::Value*> a_tiles, b_tiles;
    for (int64_t r = 0; r < row_tiles; ++r) {
      llvm::Value* a_ptr = pointer(d.broadcast->buffer, offset(x_index, r * kTileRows * tile.row_stride_x));
      a_tiles.push_back(b_.CreateCall(
          load, {shape(rows_of(r)), shape(k_bytes), a_ptr, stride(tile.row_stride_x, d.broadcast->buffer)}));
    }
    for (int64_t p = 0; p < tile.panels; ++p) {
      llvm::Value* b_ptr = pointer(d.vector->buffer, offset(w_index, p * tile.panel_stride_w));
      b_tiles.push_back(b_.CreateCall(
          load, {shape(groups), shape(kRowBytes), b_ptr, stride(tile.group_stride_w, d.vector->buffer)}));
    }
    for (int64_t r = 0; r < row_tiles; ++r) {
      for (int64_t p = 0; p < tile.panels; ++p) {
        llvm::Value*& c = c_tiles[r * tile.panels + p];
        c = b_.CreateCall(multiply,
                          {shape(rows_of(r)), shape(kRowBytes), shape(k_bytes), c, a_tiles[r], b_tiles[p]});
      }
    }
  }
  for (int64_t r = 0; r < row_tiles; ++r) {
    for (int64_t p = 0; p < tile.panels; ++p) {
      const size_t t = r * tile.panels + p;
      b_.CreateCall(store, {shape(rows_of(r)), shape(kRowBytes), c_ptrs[t], c_stride, c_tiles[t]});
    }
  }
}

}  // namespace autosched
