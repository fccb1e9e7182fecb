#include "runtime/module.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <sstream>

#include "ir/error.h"
#include "runtime/aligned_alloc.h"

namespace autosched {
namespace {

std::string ShapeStr(const std::vector<int64_t>& shape) {
  std::ostringstream ss;
  ss << "(";
  for (size_t i = 0; i < shape.size(); ++i) ss << (i ? ", " : "") << shape[i];
  ss << (shape.size() == 1 ? ",)" : ")");
  return ss.str();
}

// Overwrites a buffer larger than any last-level cache, so that a measured
// run starts with cold caches. One buffer for the process, written by one
// thread at a time (modules are timed from several threads at once).
void FlushCaches() {
  constexpr size_t kBytes = size_t{64} << 20;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  static AlignedBuffer buffer(AlignedAlloc(kBytes));
  auto* p = static_cast<volatile char*>(buffer.get());
  for (size_t i = 0; i < kBytes; i += 64) p[i] = static_cast<char>(i);
}

using Clock = std::chrono::steady_clock;

// Throws the Error that a kernel's failure status stands for.
void CheckStatus(int32_t status, const std::string& name) {
  if (status == kKernelOk) return;
  AS_CHECK(status != kKernelOutOfMemory, "module '" << name << "' could not allocate a temporary buffer");
  AS_CHECK(status != kKernelDivideByZero, "integer division by zero in module '" << name << "'");
  AS_CHECK(false, "module '" << name << "' failed with status " << status);
}

}  // namespace

Module::Module(std::string name, std::vector<ArgSpec> args, PackedKernel kernel, std::shared_ptr<void> owner,
               ModuleSources sources, double compile_seconds)
    : name_(std::move(name)),
      args_(std::move(args)),
      kernel_(kernel),
      owner_(std::move(owner)),
      sources_(std::make_shared<ModuleSources>(std::move(sources))),
      asm_cache_(std::make_shared<std::string>()),
      compile_seconds_(compile_seconds) {}

void Module::CheckArgs(const std::vector<CallArg>& args) const {
  AS_CHECK(args.size() == args_.size(),
           "module '" << name_ << "' takes " << args_.size() << " arguments, got " << args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSpec& spec = args_[i];
    const CallArg& a = args[i];
    std::string which = "argument " + std::to_string(i) + " ('" + spec.name + "')";
    AS_TYPE_CHECK(a.dtype == spec.dtype,
                  which << " must have dtype " << spec.dtype.str() << ", got " << a.dtype.str());
    AS_CHECK(a.shape == spec.shape,
             which << " must have shape " << ShapeStr(spec.shape) << ", got " << ShapeStr(a.shape));
    AS_CHECK(a.c_contiguous, which << " must be C-contiguous (use numpy.ascontiguousarray)");
    AS_CHECK(a.data != nullptr, which << " has no data");
    AS_CHECK(!spec.written || a.writeable, which << " is an output but its array is read-only");
  }
  // Generated code assumes its arguments do not alias (noalias): an output
  // overlapping another argument would give wrong results silently.
  auto bytes_of = [](const CallArg& a) {
    int64_t n = a.dtype.bytes();
    for (int64_t d : a.shape) n *= d;
    return n;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args_[i].written) continue;
    auto* begin_i = static_cast<const char*>(args[i].data);
    for (size_t j = 0; j < args.size(); ++j) {
      if (j == i) continue;
      auto* begin_j = static_cast<const char*>(args[j].data);
      bool overlap = begin_i < begin_j + bytes_of(args[j]) && begin_j < begin_i + bytes_of(args[i]);
      AS_CHECK(!overlap, "argument " << i << " ('" << args_[i].name
                                     << "') is an output and shares memory with argument " << j << " ('"
                                     << args_[j].name << "'); pass separate arrays");
    }
  }
}

std::vector<void*> Module::DataPointers(const std::vector<CallArg>& args) const {
  std::vector<void*> ptrs;
  for (const CallArg& a : args) ptrs.push_back(a.data);
  return ptrs;
}

void Module::Call(const std::vector<CallArg>& args) const {
  CheckArgs(args);
  std::vector<void*> ptrs = DataPointers(args);
  CheckStatus(kernel_(ptrs.data()), name_);
}

std::vector<double> Module::TimeEvaluate(const std::vector<CallArg>& args, const TimeOptions& options) const {
  AS_CHECK(options.number >= 1 && options.repeat >= 1,
           "time evaluator needs number >= 1 and repeat >= 1, got " << options.number << " and "
                                                                    << options.repeat);
  AS_CHECK(options.min_repeat_ms >= 0, "min_repeat_ms must not be negative");
  CheckArgs(args);
  std::vector<void*> ptrs = DataPointers(args);
  // Warm-up (page faults, thread start) and status check.
  CheckStatus(kernel_(ptrs.data()), name_);
  int number = options.number;
  std::vector<double> results;
  while (static_cast<int>(results.size()) < options.repeat) {
    if (options.flush_cache) FlushCaches();
    auto start = Clock::now();
    for (int i = 0; i < number; ++i) kernel_(ptrs.data());
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    double ms = seconds * 1e3;
    if (ms < options.min_repeat_ms && number < (1 << 30)) {
      // Too short to trust: scale `number` to reach min_repeat_ms and retry.
      double scale = ms > 0 ? options.min_repeat_ms / ms * 1.1 : 10.0;
      number = static_cast<int>(std::min<double>(number * std::max(scale, 2.0), 1 << 30));
      continue;
    }
    results.push_back(seconds / number);
  }
  return results;
}

std::string Module::GetSource(const std::string& format) const {
  if (format == "ll" || format == "llvm") return sources_->llvm_ir;
  if (format == "lowered") return sources_->lowered;
  if (format == "asm" || format == "s") {
    if (asm_cache_->empty() && sources_->make_asm) *asm_cache_ = sources_->make_asm();
    return *asm_cache_;
  }
  AS_CHECK(false, "unknown source format '" << format << "' (use 'll', 'asm' or 'lowered')");
  return {};
}

}  // namespace autosched
