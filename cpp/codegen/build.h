// Building lowered functions into callable modules: the one entry point of
// code generation, dispatching on the target's kind.
//
// What code generation takes from a Target (task/target.h, parsed and checked
// there): for llvm, the resolved CPU (target.cpu: name and features, those this
// host lacks already turned off unless -no-host-check), -opt-level, -fast-math
// and num_cores (the tasks a parallel loop asks the thread pool for). A module
// built with -no-host-check for a CPU whose features this host lacks holds
// its sources but refuses to run (Module::cannot_run()). opencl targets are
// refused for now: their backend is not written yet.
#pragma once

#include <string>
#include <vector>

#include "lower/stmt.h"
#include "runtime/module.h"
#include "task/target.h"

namespace autosched {

class State;

// True when this build of autosched has the LLVM CPU backend.
bool HasLLVMBackend();
// True when this build of autosched has the OpenCL runtime.
bool HasOpenCLBackend();

// Compiles f for the target. Throws Error when the target's backend is not
// available in this build, or when f holds something the backend cannot
// generate (the message names it).
Module Build(const LoweredFunc& f, const Target& target);

// Lower(state), then Build. For an opencl target, a state without GPU
// bindings gets the default GPU schedule first (BindDefaultGpuThreads).
Module BuildState(const State& state, const Target& target);

}  // namespace autosched
