// Tile blocks: the loops an x86 AMX tile multiply computes.
//
// AMX (Sapphire Rapids and later Xeons) multiplies tiles held in 8 tile
// registers of up to 16 rows x 64 bytes: tdpbusd adds to C (M rows x 16
// int32) the products of A (M rows x 4*KG uint8) and B (KG rows x 16 lanes x 4
// int8, each lane's 4 bytes together), tdpbf16ps the same with bfloat16 pairs
// into float32. That is the dot-product block (dot_product.h) with its rows
// and a run of its groups taken together: a loop over the group's elements
// (extent 4, or 2 for bfloat16), inside it a loop over KG groups, inside that
// a loop over the rows (and maybe one over panels of 16 lanes), whose one store is
//
//   acc[ramp(c + i*sC, 1, 16)] += cast(broadcast(X[a + i*sA + 4*k + t]))
//                                 * cast(W[ramp(w + k*sB + t, 4, 16)])
//
// (i the row, k the group, t the element; X's rows sA apart, the 4 x 16 bytes
// of each group of W contiguous and groups sB apart). MatchTileLoop finds it
// at the element loop, where the target has the tile instructions, the
// group loop holds at least one whole tile of K and the block's tiles fit the
// 8 tile registers (up to 4 tiles of C: 16 rows x 16 lanes each, a tile of A
// per 16 rows, a tile of B per panel); the code generator then loads C once,
// multiplies chunks of 16 groups (64 bytes of K), and stores C
// (emit_amx_tile.cc). Independent tiles of C also hide the multiply's latency.
// Loops of extent 1 between them are allowed. Anything else is left to the
// dot-product block or ordinary code.
#pragma once

#include <optional>

#include "codegen/llvm/dot_product.h"

namespace autosched {

struct TileLoop {
  DotProductStore store;  // the one store, as a dot-product store over the element loop
  const BufferStoreNode* node = nullptr;
  int group = 0;       // elements per lane (4 uint8 / int8, 2 bfloat16)
  int64_t groups = 0;  // the group loop's extent (KG in chunks of 16)
  int64_t rows = 0;    // M: a tile of A and of C per 16 rows
  int64_t panels = 1;  // panels of 16 lanes of C and W: a tile of B and of C each
  // Strides, in elements: C's and X's rows, W's groups, C's and W's panels.
  int64_t row_stride_c = 0, row_stride_x = 0, group_stride_w = 0;
  int64_t panel_stride_c = 0, panel_stride_w = 0;
  // The first element of C, X and W (row 0, panel 0, group 0, element 0), and
  // the group loop's variable, which the emitter binds to each chunk's start.
  Expr c_index, x_index, w_index;
  Expr group_var, group_min;
  Expr row_var, row_min, panel_var, panel_min;
};

// Whether `init` (the statement just before the tile block) sets exactly the
// block's C to zero and nothing else: a nest of loops of constant extent
// around one store of a broadcast zero, 16 lanes at a time, whose elements are
// those of C's tiles. The emitter then starts C as tilezero and skips `init`.
bool ZeroesTilesOfC(const Stmt& init, const TileLoop& tile);

// Whether the target has the tile multiply for `kind` (amx-int8, amx-bf16).
bool HasTileMultiply(const Target& target, DotProductKind kind);

// The tile block `loop` (an element loop) is, or nullopt.
std::optional<TileLoop> MatchTileLoop(const ForNode* loop, const Target& target);

}  // namespace autosched
