// The LLVM TargetMachine of a target's resolved CPU (internal to the LLVM
// backend): the JIT's (jit.cc) and the one that writes object files for
// export (export.cc) are made by the same function, so both get the same
// CPU, features, float options and code-generation level.
#pragma once

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>

#include "task/target.h"

namespace autosched {

// target.cpu must be resolved (Target::Parse does it). jit: code for the ORC
// JIT of this process; false: position-independent code for a shared library.
std::unique_ptr<llvm::TargetMachine> MakeTargetMachine(const Target& target, bool jit = true);

}  // namespace autosched

namespace autosched {

// The object file (ELF on Linux) of `module` compiled by `tm`, as bytes;
// defined in export.cc.
std::string EmitObjectFile(llvm::Module& module, llvm::TargetMachine& tm);

}  // namespace autosched
