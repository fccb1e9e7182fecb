#include "schedule/default_gpu_schedule.h"

#include <algorithm>

#include "support/error.h"

namespace autosched {
namespace {

bool IsGpuAnnotation(IteratorAnnotation a) {
  switch (a) {
    case IteratorAnnotation::BlockIdxX:
    case IteratorAnnotation::BlockIdxY:
    case IteratorAnnotation::BlockIdxZ:
    case IteratorAnnotation::ThreadIdxX:
    case IteratorAnnotation::ThreadIdxY:
    case IteratorAnnotation::ThreadIdxZ: return true;
    default: return false;
  }
}

bool SomeStageAttachedAt(const State& state, int stage, int node) {
  for (const Stage& other : state.stages()) {
    if (other.loc == ComputeLocKind::At && other.attach_stage == stage && other.attach_node == node)
      return true;
  }
  return false;
}

// How many leading iterators of stage s the default binding fuses.
int SpatialPrefix(const State& state, int s) {
  const Stage& st = state.stage(s);
  int n = 0;
  while (n < st.num_iters()) {
    const Iterator& it = st.iter(n);
    if (it.kind != IteratorKind::Spatial || it.annotation != IteratorAnnotation::None || it.extent < 1) break;
    if (SomeStageAttachedAt(state, s, st.leaves[n])) break;
    ++n;
  }
  return n;
}

State BindStage(const State& state, int s, int64_t threads) {
  const int n = SpatialPrefix(state, s);
  if (n == 0) return state;
  std::vector<int> iters(n);
  for (int i = 0; i < n; ++i) iters[i] = i;
  State out = n > 1 ? state.Fuse(s, iters) : state;
  const int64_t extent = out.stage(s).iter(0).extent;
  out = out.Split(s, 0, {std::min(threads, extent)});
  out = out.Annotate(s, 0, IteratorAnnotation::BlockIdxX);
  return out.Annotate(s, 1, IteratorAnnotation::ThreadIdxX);
}

}  // namespace

bool HasGpuBindings(const State& state) {
  for (const Stage& st : state.stages()) {
    for (int i = 0; i < st.num_iters(); ++i) {
      if (IsGpuAnnotation(st.iter(i).annotation)) return true;
    }
  }
  return false;
}

State BindDefaultGpuThreads(const State& state, int64_t threads_per_block) {
  if (HasGpuBindings(state)) return state;
  State out = state;
  for (size_t s = 0; s < state.stages().size(); ++s) {
    const Stage& st = out.stage(static_cast<int>(s));
    if (st.is_placeholder() || st.loc != ComputeLocKind::Root) continue;
    try {
      out = BindStage(out, static_cast<int>(s), std::max<int64_t>(1, threads_per_block));
    } catch (const Error&) {
      // A step refused this stage: it keeps its loops and runs in one work item.
    }
  }
  return out;
}

}  // namespace autosched
