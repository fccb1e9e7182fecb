// LowerStateToStmt: turns a loop state into the loop-nest IR.
//
//  - One Buffer per DAG argument (global scope, in dag.tensors() order) forms
//    LoweredFunc::args. Other computed tensors get an Allocate: root stages
//    around the whole function (global scope, full shape, padded strides from
//    storage_align), stages attached by compute_at at their loop (the region
//    bound inference found, in the stage's scope: local / shared from cache
//    steps; the last two dimensions swapped in storage for pragma
//    storage_transpose). Accesses to such a region subtract its start.
//  - Each stage becomes loops over its iterators, outermost first, with For
//    kinds from the annotations; attached stages are emitted inside their
//    loop before the rest of its body; inlined stages are substituted into
//    their readers; every original axis is an expression of the loop
//    variables (split: outer * factor + inner, fuse: floordiv / floormod).
//  - Where a split does not divide (or a region is cut at the tensor's edge)
//    the store is guarded by an IfThenElse.
//  - A reduction's init store is placed right before its outermost reduce
//    loop, inside loops over the spatial iterators nested in it. A reduction
//    whose accumulation type differs from its dtype (float16 by default)
//    accumulates in a buffer "<stage>.acc" of that type, shaped like the
//    stage's and allocated around its nest; after the outermost reduce loop,
//    the same kind of loops store the accumulator, converted once, into the
//    stage's buffer.
//  - auto_unroll_max_step becomes a Pragma around the stage's loop nest.
//  - A stage with pragma double_buffer, computed at serial loop k of extent
//    E, gets a buffer with a leading dimension of 2 allocated around that
//    loop, indexed by k % 2: its tile for k = 0 is stored before the loop,
//    and each iteration starts with a Pragma "double_buffer" around
//    Seq{if (k + 1 < E) {the stage's nest for k + 1}, the rest of the body}.
// Indices stay multi-dimensional; storage flattening happens in lowering
// passes. Throws Error for a state that cannot be lowered (unknown split
// lengths), naming the problem.
#pragma once

#include "lower/stmt.h"
#include "schedule/state.h"

namespace autosched {

LoweredFunc LowerStateToStmt(const State& state);

}  // namespace autosched
