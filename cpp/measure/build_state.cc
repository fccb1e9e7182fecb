#include "measure/build_state.h"

#include <exception>

#include "codegen/build.h"
#include "codegen/opencl/default_schedule.h"
#include "lower/lower.h"
#include "support/error.h"
#ifdef AUTOSCHED_HAS_OPENCL
#include "runtime/opencl/opencl_module.h"
#endif

namespace autosched {
namespace {

BuiltCandidate Failed(MeasureError error, const std::string& stage, const std::exception& e) {
  BuiltCandidate out;
  out.error = error;
  out.error_msg = stage + ": " + e.what();
  return out;
}

Module BuildFor(const LoweredFunc& f, const Target& target, const HardwareParams& params) {
#ifdef AUTOSCHED_HAS_OPENCL
  if (target.kind == TargetKind::OpenCL) {
    OpenCLLimits limits;
    limits.max_threads_per_block = params.max_threads_per_block;
    limits.max_local_memory_bytes = params.max_shared_memory_per_block;
    return BuildOpenCL(f, target, limits);
  }
#endif
  return Build(f, target);
}

}  // namespace

BuiltCandidate LowerAndBuild(const State& state, const Target& target, const HardwareParams& params) {
  LoweredFunc f;
  try {
    // As autosched.build does: a state without GPU bindings gets the default
    // GPU schedule on an OpenCL target.
    f = Lower(target.kind == TargetKind::OpenCL ? BindDefaultGpuThreads(state) : state);
  } catch (const std::exception& e) {
    return Failed(MeasureError::Lower, "lowering failed", e);
  }
  try {
    BuiltCandidate out;
    out.module = BuildFor(f, target, params);
    return out;
#ifdef AUTOSCHED_HAS_OPENCL
  } catch (const OpenCLLimitError& e) {
    return Failed(MeasureError::Compile, "refused: the candidate exceeds the device's limits", e);
#endif
  } catch (const std::exception& e) {
    return Failed(MeasureError::Compile, "code generation failed", e);
  }
}

}  // namespace autosched
