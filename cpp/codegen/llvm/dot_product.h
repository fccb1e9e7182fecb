// Dot-product blocks: the loops a CPU's dot-product instructions compute.
//
// An x86 dot-product instruction adds, to each 32-bit lane of an accumulator
// vector, the sum of `group` products of narrow elements: VNNI's vpdpbusd 4
// products of an unsigned and a signed byte into int32, AVX512-BF16's
// vdpbf16ps 2 products of bfloat16 into float32. A schedule reaches one when
// a reduction loop of extent `group` (the inner part of the reduction, over
// the packed operand's innermost axis) sits directly outside the register
// block, whose stores after vectorization read
//
//   acc[ramp(c, 1, L)] = acc[ramp(c, 1, L)]
//                        + cast(broadcast(X[a + t])) * cast(W[ramp(w + t, group, L)])
//
// for t in [min, min + group): the broadcast operand's `group` elements are
// consecutive (a + t), and the vector operand's elements for one lane are
// consecutive too (w + t, lanes `group` apart), so the loop reads group x L
// contiguous elements of W: one register. MatchDotProductLoop finds such a
// loop, where every store of its body (through loops and sequences) has this
// form and the target has the instruction for that lane count (for uint8 x
// int8, or its widening form: WideningDotProductLanes); the code generator
// then emits each store once per loop, as one instruction (or two
// multiply-adds) per register of lanes (emit_dot_product.cc). Anything else
// is left to the ordinary code, which computes the same sums (integer sums
// are exact; the float path differs only by the instruction's rounding of
// the pair's sum).
#pragma once

#include <optional>
#include <unordered_map>

#include "lower/stmt.h"
#include "task/target.h"

namespace autosched {

enum class DotProductKind : uint8_t {
  U8S8ToI32,  // vpdpbusd: 4 x (uint8 * int8) per int32 lane
  BF16ToF32,  // vdpbf16ps: 2 x (bfloat16 * bfloat16) per float32 lane
};

// One store of a dot-product block. The index expressions are those of the
// loop's first iteration once its variable is bound to the loop's min.
struct DotProductStore {
  DotProductKind kind = DotProductKind::U8S8ToI32;
  int lanes = 0;                              // L: accumulator lanes
  Expr accumulator;                           // acc[ramp(c, 1, L)], the load
  const BufferLoadNode* broadcast = nullptr;  // X[a + t]
  Expr broadcast_index;                       // a + t (scalar)
  const BufferLoadNode* vector = nullptr;     // W[ramp(w + t, group, L)]
  Expr vector_base;                           // w + t (scalar)
  bool broadcast_is_unsigned = true;          // U8S8: which operand is the uint8 one
};

struct DotProductLoop {
  int group = 0;  // elements per lane per instruction: the loop's extent
  std::unordered_map<const BufferStoreNode*, DotProductStore> stores;
};

// The lanes of the widest dot-product instruction of `kind` that `target` may
// use (its CPU features) and that divides an accumulator of `lanes` 32-bit
// lanes; 0 when there is none. A wider accumulator takes several.
int DotProductInstructionLanes(const Target& target, DotProductKind kind, int lanes);

// Where the CPU has no uint8 x int8 dot-product instruction for `lanes` but
// has AVX2 (or AVX512-BW), the block is emitted with the widening
// multiply-add vpmaddwd instead: each lane's 4 bytes as the pairs (0, 1) and
// (2, 3) widened to 16 bits, two vpmaddwd per register of lanes, each adding
// a pair's two products into the lane. Exact, as vpdpbusd is (a product of a
// uint8 and an int8 fits 16 bits, a pair's sum 32). The lanes of one such
// step (8 or 16); 0 where there is an instruction or neither extension.
int WideningDotProductLanes(const Target& target, DotProductKind kind, int lanes);

// `store` as one store of a dot-product loop over `var` of extent `group`
// (the form above), or nullopt.
std::optional<DotProductStore> MatchDotProductStore(const BufferStoreNode* store, const Expr& var, int group,
                                                    const Target& target);

// The block `loop` is, or nullopt (then the loop is emitted as it is).
std::optional<DotProductLoop> MatchDotProductLoop(const ForNode* loop, const Target& target);

}  // namespace autosched
