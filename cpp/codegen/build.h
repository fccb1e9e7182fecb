// Building lowered functions into callable modules: the one entry point of
// code generation, which calls the builder the target's kind has registered
// (task/target_kind.h; codegen/llvm/jit.cc, codegen/opencl/build_opencl.cc).
//
// What code generation takes from a Target (task/target.h, parsed and checked
// there): for llvm, the resolved CPU (target.cpu: name and features, those this
// host lacks already turned off unless -no-host-check), -opt-level, -fast-math
// and num_cores (the tasks a parallel loop asks the thread pool for). A module
// built with -no-host-check for a CPU whose features this host lacks holds
// its sources but refuses to run (Module::cannot_run()). For opencl: the
// device the target selects, -fast-math, and the limits a kernel must keep.
#pragma once

#include <string>
#include <vector>

#include "lower/stmt.h"
#include "runtime/module.h"
#include "task/target.h"

namespace autosched {

class State;

// True when this build of autosched has the LLVM CPU backend (the llvm kind
// has a builder).
bool HasLLVMBackend();
// True when this build of autosched has the OpenCL runtime (the opencl kind
// has a builder).
bool HasOpenCLBackend();

// Compiles f for the target. Throws Error when the target's backend is not
// available in this build, or when f holds something the backend cannot
// generate (the message names it); DeviceLimitError when a kernel needs more
// than its device or `limits` allow (OpenCL).
Module Build(const LoweredFunc& f, const Target& target, const DeviceLimits& limits = {});

// The loop nest a state runs as on the target: for a GPU target, a state
// without GPU bindings gets the default GPU schedule first
// (schedule/default_gpu_schedule.h), then Lower.
LoweredFunc LowerCandidate(const State& state, const Target& target);

// The one way from a state to a module, used by autosched.build, the
// measurement workers and graph builds: Build(LowerCandidate(state)).
Module BuildCandidate(const State& state, const Target& target, const DeviceLimits& limits = {});

}  // namespace autosched
