#include "codegen/build.h"

#include <sstream>

#include "ir/error.h"

#ifdef AUTOSCHED_HAS_LLVM
#include "codegen/llvm/codegen_llvm.h"
#endif

namespace autosched {

CodegenTarget CodegenTarget::Parse(const std::string& target) {
  std::istringstream ss(target);
  CodegenTarget t;
  AS_CHECK(ss >> t.kind, "empty target string");
  AS_CHECK(t.kind == "llvm", "cannot build for target kind '" << t.kind << "' in '" << target
                                                              << "': only 'llvm' (CPU) targets can be built");
  std::string opt;
  while (ss >> opt) {
    auto value_of = [&](const std::string& key) -> std::string {
      return opt.rfind(key, 0) == 0 ? opt.substr(key.size()) : std::string();
    };
    if (opt == "-fast-math") {
      t.fast_math = true;
    } else if (!value_of("-mcpu=").empty()) {
      t.mcpu = value_of("-mcpu=");
    } else if (!value_of("-mattr=").empty()) {
      t.mattr = value_of("-mattr=");
    } else if (!value_of("-num-cores=").empty()) {
      std::string v = value_of("-num-cores=");
      try {
        t.num_cores = std::stoi(v);
      } catch (const std::exception&) {
        AS_CHECK(false, "target option -num-cores needs an integer, got '" << v << "'");
      }
      AS_CHECK(t.num_cores >= 1, "target option -num-cores must be at least 1, got " << v);
    } else if (opt.rfind("-keys=", 0) == 0 || opt.rfind("-model=", 0) == 0 ||
               opt.rfind("-mtriple=", 0) == 0 || opt.rfind("-opt-level=", 0) == 0) {
      // Descriptive options of other components; not used by code generation.
    } else {
      AS_CHECK(false, "unknown target option '" << opt << "' in '" << target << "'");
    }
  }
  return t;
}

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
