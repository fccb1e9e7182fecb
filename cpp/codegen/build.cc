#include "codegen/build.h"

#include "lower/lower.h"
#include "schedule/default_gpu_schedule.h"
#include "schedule/state.h"
#include "support/error.h"

namespace autosched {

bool HasLLVMBackend() { return FindTargetKind("llvm").build != nullptr; }

bool HasOpenCLBackend() { return FindTargetKind("opencl").build != nullptr; }

Module Build(const LoweredFunc& f, const Target& target, const DeviceLimits& limits) {
  const TargetKind& kind = *target.kind;
  AS_CHECK(kind.build != nullptr,
           "cannot build '" << f.name << "' for target '" << target.str() << "': " << kind.missing_backend);
  return kind.build(f, target, limits);
}

LoweredFunc LowerCandidate(const State& state, const Target& target) {
  LowerOptions options;
  options.cpu_guard_transforms = target.kind->cpu_guard_transforms;
  return Lower(target.kind->is_gpu ? BindDefaultGpuThreads(state) : state, options);
}

Module BuildCandidate(const State& state, const Target& target, const DeviceLimits& limits) {
  return Build(LowerCandidate(state, target), target, limits);
}

}  // namespace autosched
