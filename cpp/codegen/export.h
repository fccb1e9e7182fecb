// Exporting built CPU modules as object code, for a shared library that
// runtime/library_module.h loads without compiling anything.
//
// EmitKernelLibraryObject links the optimised LLVM IR of several modules
// (their "ll" source, as BuildLLVM made it) into one LLVM module and writes
// it as one relocatable object file for the target's CPU:
//  - kernel i is the exported function `symbols[i]` (int32_t (void**), the
//    calling convention of codegen_llvm.h); every other function is local;
//  - the runtime entry points that generated code calls (autosched_alloc,
//    autosched_free, autosched_parallel_for) are local trampolines through
//    exported pointers named kLibraryRuntimeSlots, which the loader sets to
//    this process's runtime after dlopen: the library needs no symbol of the
//    extension module, which Python loads privately;
//  - `autosched_library_version` (int32) holds kKernelLibraryVersion.
// Linking the object into a shared library is the system linker's job
// (python/autosched/runtime.py). Throws Error without the LLVM backend, for a
// module without LLVM IR (another backend) or IR that does not parse.
#pragma once

#include <string>
#include <vector>

#include "runtime/library_module.h"
#include "runtime/module.h"
#include "task/target.h"

namespace autosched {

std::string EmitKernelLibraryObject(const std::vector<const Module*>& modules,
                                    const std::vector<std::string>& symbols, const Target& target);

}  // namespace autosched
