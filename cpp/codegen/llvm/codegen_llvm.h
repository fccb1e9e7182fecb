// The LLVM CPU backend: lowered loop nests to native code, compiled in
// process by the ORC JIT (see build.h for the entry point most code uses).
//
// Roadmap of this folder (with task/host_cpu.cc, which detects the host CPU
// and resolves -mcpu / -mattr, the only places that include LLVM headers):
//  - ir_emitter.h / emit_expr.cc / emit_stmt.cc: IREmitter turns one
//    LoweredFunc into LLVM IR. Vector dtypes become LLVM vector types;
//    float16 is stored as `half` and computed in float; bool is stored as
//    one byte and computed as i1. Parallel loops are outlined into a function
//    run through the runtime thread pool (autosched_parallel_for).
//  - jit.cc: target machine for the target's resolved CPU, the pipeline of
//    the new pass manager at -opt-level (default O3), ORC LLJIT, assembly
//    printing on request, BuildLLVM. The JIT-compiled function is the
//    module's Kernel (runtime/module.h); a module whose CPU features this host
//    lacks (-no-host-check) is not JIT-compiled: it keeps its sources only.
//  - cross_compile.cc: a module for another architecture (-mtriple, cpu.foreign)
//    is not JIT-compiled either: its source "obj" is the object file.
//
// Calling convention of a kernel: int32_t name(void** args), args[i] being
// the data pointer of LoweredFunc::args[i]; returns a KernelStatus
// (runtime/module.h). Arguments must not alias each other.
#pragma once

#include "codegen/build.h"

namespace autosched {

// target.cpu must be resolved (Target::Parse does it).
Module BuildLLVM(const LoweredFunc& f, const Target& target);

// Kernels this process has JIT-compiled so far (a process that only loads
// exported libraries keeps it at 0).
int64_t JitCompilations();

}  // namespace autosched
