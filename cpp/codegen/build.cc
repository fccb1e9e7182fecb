#include "codegen/build.h"

#include "codegen/opencl/default_schedule.h"
#include "lower/lower.h"
#include "schedule/state.h"
#include "support/error.h"
#ifdef AUTOSCHED_HAS_LLVM
#include "codegen/llvm/codegen_llvm.h"
#endif
#ifdef AUTOSCHED_HAS_OPENCL
#include "runtime/opencl/opencl_module.h"
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

Module Build(const LoweredFunc& f, const Target& target) {
  if (target.kind == TargetKind::OpenCL) {
#ifdef AUTOSCHED_HAS_OPENCL
    return BuildOpenCL(f, target);
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

Module BuildState(const State& state, const Target& target) {
  if (target.kind == TargetKind::OpenCL) return Build(Lower(BindDefaultGpuThreads(state)), target);
  return Build(Lower(state), target);
}

}  // namespace autosched
