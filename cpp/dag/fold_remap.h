// Folding an index remap after a reduction into the reduction.
//
// A fused group often ends in a reduction (a dense layer, a batched matmul)
// followed by ops that only move its elements (a reshape, a transpose) and
// map them one by one (a bias, a scale): BERT's query projection is
// dense -> add -> reshape -> transpose -> multiply. Scheduled as it stands,
// the reduction writes its result to memory and the remap reads it back:
// on a GPU two kernels. Here the output op C, whose body reads the
// reduction R once per element at indices g(i) that are affine in C's axes
// (no floordiv or floormod left once simplified over their ranges), becomes
//   R'(i) = R's body at g(i)      (a reduction over C's own domain)
//   C'(i) = C's body with R[g(i)] replaced by R'(i)
// with the ops between them inlined into C'. C' then reads R' element-wise,
// so the tiling rules fuse it into R''s tiles, and R' computes no more
// elements than R did (C has at most as many as R). Anything else is
// returned unchanged.
#pragma once

#include "ir/tensor.h"

namespace autosched {

// `out` with the remap after its reduction folded into it, or `out` itself
// when the group does not have that shape.
Tensor FoldRemapIntoReduction(const Tensor& out);

}  // namespace autosched
