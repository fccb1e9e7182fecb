#include "codegen/build.h"

#include "lower/lower.h"
#include "schedule/state.h"
#include "support/error.h"

#ifdef AUTOSCHED_HAS_LLVM
#include "codegen/llvm/codegen_llvm.h"
#endif

namespace autosched {

bool HasLLVMBackend() {
#ifdef AUTOSCHED_HAS_LLVM
  return true;
#else
  return false;
#endif
}

Module Build(const LoweredFunc& f, const Target& target) {
  AS_CHECK(
      target.kind != TargetKind::OpenCL,
      "cannot build '" << f.name << "' for target '" << target.str()
                       << "': OpenCL code generation is not available yet (only 'llvm' CPU targets can be "
                          "built)");
  AS_ICHECK(target.kind == TargetKind::LLVM, "Build: unhandled target kind");
#ifdef AUTOSCHED_HAS_LLVM
  // A Target made without Parse has no resolved CPU yet.
  return BuildLLVM(f, target.cpu.name.empty() ? Target::Parse(target.str()) : target);
#else
  throw Error("cannot build '" + f.name + "' for target '" + target.str() +
              "': this autosched was built without LLVM 19 (the CPU backend)");
#endif
}

Module BuildState(const State& state, const Target& target) { return Build(Lower(state), target); }

}  // namespace autosched
