// A built module: one compiled kernel plus the description of its arguments,
// callable on caller-owned memory without copies.
//
// Generated kernels take one argument, an array of data pointers in the order
// of LoweredFunc::args. Module::Call checks every argument (count, shape,
// dtype, C-contiguity; outputs writeable and sharing no memory with another
// argument, as the kernel assumes no aliasing) and names the first wrong one in
// an Error before the kernel runs. The time evaluator measures the kernel the way the tuner does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace autosched {

// Signature of a generated kernel: returns a KernelStatus.
using PackedKernel = int32_t (*)(void** args);

// What a kernel returns. On a failure it has freed what it allocated; the
// outputs may be partly written.
enum KernelStatus : int32_t {
  kKernelOk = 0,
  kKernelOutOfMemory = -1,   // a temporary buffer could not be allocated
  kKernelDivideByZero = -2,  // an integer division or modulo by zero
};

// What a kernel expects of one argument.
struct ArgSpec {
  std::string name;
  DataType dtype;
  std::vector<int64_t> shape;
  bool written = false;  // the kernel stores into it (an output)
};

// One argument as the caller hands it over (a view of caller-owned memory).
struct CallArg {
  void* data = nullptr;
  DataType dtype;
  std::vector<int64_t> shape;
  bool c_contiguous = true;
  bool writeable = true;
};

// Options of the time evaluator.
struct TimeOptions {
  int number = 1;            // runs per repeat; the time of a repeat is divided by it
  int repeat = 1;            // measurements returned
  double min_repeat_ms = 0;  // grow `number` until one repeat takes at least this long
  bool flush_cache = false;  // overwrite a large buffer before each repeat (cold caches)
};

// Texts describing how a module was made, for inspection.
struct ModuleSources {
  std::string lowered;                    // the loop-nest IR that was compiled
  std::string llvm_ir;                    // optimised LLVM IR
  std::function<std::string()> make_asm;  // assembly, produced on first request
};

class Module {
 public:
  Module(std::string name, std::vector<ArgSpec> args, PackedKernel kernel, std::shared_ptr<void> owner,
         ModuleSources sources, double compile_seconds);

  const std::string& name() const { return name_; }
  const std::vector<ArgSpec>& args() const { return args_; }
  double compile_seconds() const { return compile_seconds_; }

  // Checks the arguments, then runs the kernel; results are written in place.
  void Call(const std::vector<CallArg>& args) const;
  // Seconds per run, one entry per repeat (see TimeOptions).
  std::vector<double> TimeEvaluate(const std::vector<CallArg>& args, const TimeOptions& options) const;
  // "ll" (LLVM IR), "asm" (assembly) or "lowered" (loop-nest IR).
  std::string GetSource(const std::string& format) const;

 private:
  void CheckArgs(const std::vector<CallArg>& args) const;
  std::vector<void*> DataPointers(const std::vector<CallArg>& args) const;

  std::string name_;
  std::vector<ArgSpec> args_;
  PackedKernel kernel_;
  std::shared_ptr<void> owner_;  // keeps the compiled code alive
  std::shared_ptr<ModuleSources> sources_;
  std::shared_ptr<std::string> asm_cache_;
  double compile_seconds_;
};

}  // namespace autosched
