// FlattenStorage: turns every multi-dimensional BufferLoad / BufferStore
// into an access with one flat element index: sum of index[d] * stride[d],
// with the buffer's strides (storage_align padding) or, when it has none,
// compact row-major strides. A vector last index keeps its Ramp / Broadcast
// form so contiguous accesses stay visible to code generation.
#pragma once

#include "lower/stmt.h"

namespace autosched {

Stmt FlattenStorage(const Stmt& s);

// The strides in elements that FlattenStorage uses for a buffer.
std::vector<int64_t> ElementStrides(const BufferNode& buffer);

}  // namespace autosched
