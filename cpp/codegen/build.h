// Building lowered functions into callable modules.
//
// The target is a task/target.h Target (parsed and checked there), e.g.
//   "llvm"                                   host CPU, all cores
//   "llvm -mcpu=sapphirerapids -num-cores=2 -fast-math"
// What code generation takes from it: -mcpu=NAME (default: the host CPU;
// features of NAME that this host lacks are turned off, as kernels run in
// this process: see DroppedCpuFeatures), -mattr=+f1,-f2 (extra CPU
// features), -num-cores=N (threads for parallel loops; default all cores),
// -fast-math (allow reassociation, reciprocal and contraction of floats;
// off by default, so results follow IEEE order of operations).
#pragma once

#include <string>
#include <vector>

#include "lower/stmt.h"
#include "runtime/module.h"
#include "task/target.h"

namespace autosched {

struct CodegenTarget {
  std::string kind = "llvm";  // backend name
  std::string mcpu;           // empty = host
  std::string mattr;          // comma-separated +feature / -feature
  int num_cores = 0;          // 0 = every core of the machine
  bool fast_math = false;

  // Throws Error for a target this build cannot generate code for.
  static CodegenTarget FromTarget(const Target& target);
  // Target::Parse, then FromTarget: throws Error naming an unknown kind or option.
  static CodegenTarget Parse(const std::string& target);
  std::string str() const;
};

// True when this build of autosched has the LLVM CPU backend.
bool HasLLVMBackend();

// The CPU features (LLVM names, e.g. "avx512f", "gfni") that the target's
// -mcpu and -mattr ask for but that code generation turns off, because this
// host lacks them and kernels run on it. Throws Error for an unknown -mcpu.
std::vector<std::string> DroppedCpuFeatures(const CodegenTarget& target);

// Compiles f for the target. Throws Error when the target's backend is not
// available in this build, or when f holds something the backend cannot
// generate (the message names it).
Module Build(const LoweredFunc& f, const CodegenTarget& target);

}  // namespace autosched
