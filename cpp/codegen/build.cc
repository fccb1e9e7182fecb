#include "codegen/build.h"

#include "ir/error.h"

#ifdef AUTOSCHED_HAS_LLVM
#include "codegen/llvm/codegen_llvm.h"
#endif

namespace autosched {

CodegenTarget CodegenTarget::FromTarget(const Target& target) {
  AS_CHECK(target.kind == TargetKind::LLVM, "cannot build for target kind '"
                                                << TargetKindName(target.kind) << "' in '" << target.str()
                                                << "': only 'llvm' (CPU) targets can be built");
  CodegenTarget t;
  t.mcpu = target.mcpu;
  if (target.HasOption("mattr")) t.mattr = target.options.at("mattr");
  t.num_cores = target.num_cores;
  t.fast_math = target.HasOption("fast-math");
  return t;
}

CodegenTarget CodegenTarget::Parse(const std::string& target) { return FromTarget(Target::Parse(target)); }

std::string CodegenTarget::str() const {
  std::string s = kind;
  if (!mcpu.empty()) s += " -mcpu=" + mcpu;
  if (!mattr.empty()) s += " -mattr=" + mattr;
  if (num_cores > 0) s += " -num-cores=" + std::to_string(num_cores);
  if (fast_math) s += " -fast-math";
  return s;
}

bool HasLLVMBackend() {
#ifdef AUTOSCHED_HAS_LLVM
  return true;
#else
  return false;
#endif
}

std::vector<std::string> DroppedCpuFeatures(const CodegenTarget& target) {
#ifdef AUTOSCHED_HAS_LLVM
  return DroppedFeaturesLLVM(target);
#else
  return {};
#endif
}

Module Build(const LoweredFunc& f, const CodegenTarget& target) {
#ifdef AUTOSCHED_HAS_LLVM
  return BuildLLVM(f, target);
#else
  AS_CHECK(false, "cannot build '" << f.name << "' for target '" << target.str()
                                   << "': this autosched was built without LLVM 19 (the CPU backend)");
  return Module("", {}, nullptr, nullptr, {}, 0);
#endif
}

}  // namespace autosched
