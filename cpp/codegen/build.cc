#include "codegen/build.h"

#include "lower/lower.h"
#include "schedule/default_gpu_schedule.h"
#include "schedule/state.h"
#include "support/error.h"
#ifdef AUTOSCHED_HAS_LLVM
#include "codegen/llvm/codegen_llvm.h"
#endif
#ifdef AUTOSCHED_HAS_OPENCL
#include "codegen/opencl/build_opencl.h"
#endif

namespace autosched {

bool HasLLVMBackend() {
#ifdef AUTOSCHED_HAS_LLVM
  return true;
#else
  return false;
#endif
}

bool HasOpenCLBackend() {
#ifdef AUTOSCHED_HAS_OPENCL
  return true;
#else
  return false;
#endif
}

Module Build(const LoweredFunc& f, const Target& target, const DeviceLimits& limits) {
  if (target.kind == TargetKind::OpenCL) {
#ifdef AUTOSCHED_HAS_OPENCL
    return BuildOpenCL(f, target, limits);
#else
    throw Error("cannot build '" + f.name + "' for target '" + target.str() +
                "': autosched was built without OpenCL (install ocl-icd-opencl-dev and opencl-headers, then "
                "rebuild)");
#endif
  }
  AS_ICHECK(target.kind == TargetKind::LLVM, "Build: unhandled target kind");
#ifdef AUTOSCHED_HAS_LLVM
  // A Target made without Parse has no resolved CPU yet.
  return BuildLLVM(f, target.cpu.name.empty() ? Target::Parse(target.str()) : target);
#else
  throw Error("cannot build '" + f.name + "' for target '" + target.str() +
              "': this autosched was built without LLVM 19 (the CPU backend)");
#endif
}

LoweredFunc LowerCandidate(const State& state, const Target& target) {
  return Lower(target.kind == TargetKind::OpenCL ? BindDefaultGpuThreads(state) : state);
}

Module BuildCandidate(const State& state, const Target& target, const DeviceLimits& limits) {
  return Build(LowerCandidate(state, target), target, limits);
}

}  // namespace autosched
