// The default GPU schedule: what a state without any GPU binding gets when it
// is built for an OpenCL target, so that it runs on many work items instead of
// one. For every root compute stage, the outermost run of spatial iterators
// without annotation (stopping before an iterator other stages are computed
// at, and before the first reduce iterator) is fused, split by
// `threads_per_block` and bound to blockIdx.x (outer) and threadIdx.x
// (inner). A stage where this does not apply, or where a step refuses it,
// stays as it was (it runs in one work item). States with any GPU binding are
// returned unchanged: their author chose the mapping.
#pragma once

#include <cstdint>

#include "schedule/state.h"

namespace autosched {

State BindDefaultGpuThreads(const State& state, int64_t threads_per_block = 64);

// True when some iterator of the state is bound to a GPU block or thread index.
bool HasGpuBindings(const State& state);

}  // namespace autosched
