// The fold of a cross-thread reduction's partial results, recognised in a
// kernel so that the work items of the group combine them as a tree (log2 T
// steps between barriers) instead of work item 0 reading all T in turn.
//
// The cross-thread sketches (search/rules/gpu/gpu_sketch_rules.cc) lower the
// sum of a row's T partial results, held in a __local buffer, to a serial
// loop that every work item runs and work item 0 writes:
//
//   for (v = 0; v < T; ++v) X[i] = X[i] op P[b + v];
//
// with op one of +, *, max, min (associative and commutative, so the order
// of the fold is free; a float sum may round differently, as the cross-thread
// split itself does), i and b free of v, and P read nowhere else in the
// kernel (the tree overwrites it).
#pragma once

#include <cstdint>
#include <optional>

#include "ir/expr.h"
#include "lower/stmt.h"

namespace autosched {

struct TreeFold {
  const BufferStoreNode* store = nullptr;  // X[i] = X[i] op P[b + v]
  BinOp op = BinOp::Add;
  Buffer partials;    // P
  Expr base;          // b
  int64_t count = 0;  // T
};

// The fold loop `loop` is, or nothing; `kernel` is the whole kernel's body,
// where P must be read only inside `loop` (and by its own updates). The caller checks what the
// printer knows: P is __local, every work item of a one-dimensional group of
// at least T reaches the loop, and no barrier would be divergent.
std::optional<TreeFold> MatchTreeFold(const ForNode* loop, const Stmt& kernel);

}  // namespace autosched
