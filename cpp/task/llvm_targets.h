// The architectures autosched compiles code for: x86-64, AArch64 and RISC-V
// (64-bit), the host's own and, cross-compiled (host_cpu.h), the others. Only
// their LLVM backends are registered, and, where LLVM is linked statically
// (the self-contained wheel), linked; a -mtriple of another architecture is
// refused (IsForeignTriple). Defined in host_cpu.cc.
#pragma once

#include <string>
#include <vector>

namespace autosched {

// The supported architectures, in words for messages.
extern const char* const kSupportedArchitectures;

// Registers the backend of every supported architecture that this LLVM has
// (once per process; no other backend is ever registered); a no-op without
// LLVM.
void InitializeLLVMTargets();

// The names of the targets in LLVM's registry (e.g. "aarch64", "x86-64"),
// sorted: what InitializeLLVMTargets and InitializeLLVMNativeTarget have
// registered. Empty without LLVM.
std::vector<std::string> RegisteredLLVMTargets();

}  // namespace autosched
