// The LLVM CPU backend: lowered loop nests to native code, compiled in
// process by the ORC JIT (see build.h for the entry point most code uses).
//
// Roadmap of this folder (the only place that includes LLVM headers):
//  - ir_emitter.h / emit_expr.cc / emit_stmt.cc: IREmitter turns one
//    LoweredFunc into LLVM IR. Vector dtypes become LLVM vector types;
//    float16 is stored as `half` and computed in float; bool is stored as
//    one byte and computed as i1. Parallel loops are outlined into a function
//    run through the runtime thread pool (autosched_parallel_for).
//  - jit.cc: target machine for -mcpu / -mattr, the O3 pipeline of the new
//    pass manager, ORC LLJIT, assembly printing on request, BuildLLVM.
//
// Calling convention of a kernel: int32_t name(void** args), args[i] being
// the data pointer of LoweredFunc::args[i]; returns a KernelStatus
// (runtime/module.h). Arguments must not alias each other.
#pragma once

#include "codegen/build.h"

namespace autosched {

Module BuildLLVM(const LoweredFunc& f, const CodegenTarget& target);
std::vector<std::string> DroppedFeaturesLLVM(const CodegenTarget& target);

}  // namespace autosched
