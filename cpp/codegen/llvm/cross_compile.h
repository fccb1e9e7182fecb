// Cross-compilation: the object file of a kernel for a target of another
// architecture (-mtriple=aarch64-linux-gnu -mcpu=cortex-a76 on an x86-64
// host). Such code never runs in this process; the object file is what a
// machine of that architecture links and runs. Its undefined symbols are the
// runtime's (autosched_parallel_for, autosched_alloc, autosched_free).
#pragma once

#include <string>

#include "task/target.h"

namespace autosched {

// An ELF (or the triple's own format) relocatable object, position
// independent, holding the kernel of `ir_text` (LLVM IR as BuildLLVM leaves it)
// compiled for target.cpu. Throws Error when LLVM cannot read the IR or emit
// code for the triple.
std::string EmitObjectFile(const std::string& ir_text, const Target& target);

}  // namespace autosched
