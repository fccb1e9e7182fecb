#include "runtime/module.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <sstream>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "runtime/aligned_alloc.h"
#include "runtime/thread_pool.h"
#include "support/error.h"

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

// TimeOptions::refill_private_caches_bytes and produce_before_run. The
// buffers are the process's, one per pool thread, used by one evaluation at
// a time.
void SetUpNetworkCaches(const TimeOptions& options) {
  static std::mutex mutex;
  static std::vector<AlignedBuffer> buffers;
  static size_t buffer_bytes = 0;
  std::lock_guard<std::mutex> lock(mutex);
  ThreadPool& pool = ThreadPool::Global();
  const int threads = pool.max_tasks();
  const size_t bytes = options.refill_private_caches_bytes;
  if (bytes > 0) {
    if (buffers.size() != static_cast<size_t>(threads) || buffer_bytes != bytes) {
      buffers.clear();
      for (int t = 0; t < threads; ++t) buffers.emplace_back(AlignedAlloc(bytes));
      buffer_bytes = bytes;
    }
    pool.ParallelFor(threads, threads, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        auto* p = static_cast<volatile char*>(buffers[t].get());
        for (size_t i = 0; i < bytes; i += 64) p[i] = static_cast<char>(i);
      }
    });
  }
  for (const auto& [data, size] : options.produce_before_run) {
    const int64_t lines = static_cast<int64_t>((size + 63) / 64);
    auto* p = static_cast<volatile char*>(data);
    pool.ParallelFor(threads, threads, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        for (int64_t line = lines * t / threads; line < lines * (t + 1) / threads; ++line) {
          p[line * 64] = p[line * 64];  // the line is written: this core owns it, modified
        }
      }
    });
  }
}

}  // namespace

void EvictFromCaches(const void* data, size_t bytes) {
  if (bytes == 0) return;
  constexpr size_t kLine = 64;  // the smallest line of the CPUs we run on: no line is skipped
  const auto* begin = static_cast<const char*>(data);
#if defined(__x86_64__) || defined(__i386__)
  for (size_t offset = 0; offset < bytes; offset += kLine) _mm_clflush(begin + offset);
  _mm_clflush(begin + bytes - 1);
  _mm_mfence();
#elif defined(__aarch64__)
  for (size_t offset = 0; offset < bytes; offset += kLine) {
    asm volatile("dc civac, %0" : : "r"(begin + offset) : "memory");
  }
  asm volatile("dc civac, %0" : : "r"(begin + bytes - 1) : "memory");
  asm volatile("dsb ish" : : : "memory");
#else
  (void)begin;
  FlushCaches();
#endif
}

namespace {

// Throws the Error that a kernel's failure status stands for; `when` says
// which run failed (empty for a plain call).
void CheckStatus(int32_t status, const std::string& name, const std::string& when = "") {
  if (status == kKernelOk) return;
  std::string where = when.empty() ? "" : " (" + when + ")";
  AS_CHECK(status != kKernelOutOfMemory,
           "module '" << name << "' could not allocate a temporary buffer" << where);
  AS_CHECK(false, "module '" << name << "' failed with status " << status << where);
}

std::vector<void*> DataPointers(const std::vector<CallArg>& args) {
  std::vector<void*> ptrs;
  for (const CallArg& a : args) ptrs.push_back(a.data);
  return ptrs;
}

}  // namespace

ModuleSources::ModuleSources() : shared_(std::make_shared<Shared>()) {}

void ModuleSources::Add(const std::string& format, std::string text) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->entries[format] = Entry{std::move(text), nullptr, ""};
}

void ModuleSources::AddLazy(const std::string& format, std::function<std::string()> make) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->entries[format] = Entry{"", std::move(make), ""};
}

void ModuleSources::AddAlias(const std::string& alias, const std::string& format) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->entries[alias] = Entry{"", nullptr, format};
}

std::vector<std::string> ModuleSources::Formats() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  std::vector<std::string> formats;
  for (const auto& [format, entry] : shared_->entries) {
    if (entry.alias_of.empty()) formats.push_back(format);
  }
  return formats;
}

std::string ModuleSources::Get(const std::string& requested) const {
  std::unique_lock<std::mutex> lock(shared_->mutex);
  auto it = shared_->entries.find(requested);
  if (it != shared_->entries.end() && !it->second.alias_of.empty())
    it = shared_->entries.find(it->second.alias_of);
  if (it == shared_->entries.end()) {
    lock.unlock();
    std::string known;
    for (const std::string& f : Formats()) known += (known.empty() ? "'" : ", '") + f + "'";
    AS_CHECK(false, "unknown source format '" << requested << "' (this module has " << known << ")");
  }
  // Made under the lock: a second thread asking meanwhile waits for the text.
  if (it->second.make) {
    it->second.text = it->second.make();
    it->second.make = nullptr;
  }
  return it->second.text;
}

Module::Module(std::string name, std::vector<ArgSpec> args, std::shared_ptr<Kernel> kernel,
               ModuleSources sources, double compile_seconds, std::string cannot_run)
    : name_(std::move(name)),
      args_(std::move(args)),
      kernel_(std::move(kernel)),
      sources_(std::move(sources)),
      compile_seconds_(compile_seconds),
      cannot_run_(std::move(cannot_run)) {
  AS_ICHECK(kernel_ != nullptr || !cannot_run_.empty(), "a module without a kernel must say why");
}

void Module::CheckRunnable() const {
  AS_CHECK(cannot_run_.empty(), "module '" << name_ << "' cannot run on this host: " << cannot_run_);
}

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

void Module::Call(const std::vector<CallArg>& args) const {
  CheckRunnable();
  CheckArgs(args);
  std::vector<void*> ptrs = DataPointers(args);
  RunPointers(ptrs.data());
}

void Module::RunPointers(void** data) const {
  CheckStatus(kernel_->Run(data), name_);
  CheckStatus(kernel_->Synchronize(), name_);
}

std::vector<double> Module::TimeEvaluate(const std::vector<CallArg>& args, const TimeOptions& options) const {
  AS_CHECK(options.number >= 1 && options.repeat >= 1,
           "time evaluator needs number >= 1 and repeat >= 1, got " << options.number << " and "
                                                                    << options.repeat);
  AS_CHECK(options.min_repeat_ms >= 0, "min_repeat_ms must not be negative");
  CheckRunnable();
  CheckArgs(args);
  std::vector<void*> ptrs = DataPointers(args);
  int64_t runs = 0;  // counts every run, for the message of a failing one
  auto when = [&] { return "run " + std::to_string(runs) + " of the time evaluator"; };
  auto run = [&] {
    ++runs;
    int32_t status = kernel_->Run(ptrs.data());
    if (status != kKernelOk) CheckStatus(status, name_, when());
  };
  auto synchronize = [&] {
    int32_t status = kernel_->Synchronize();
    if (status != kKernelOk) CheckStatus(status, name_, "after " + when());
  };
  if (options.warm_up) {  // page faults, thread start
    run();
    synchronize();
  }
  int number = options.number;
  std::vector<double> results;
  while (static_cast<int>(results.size()) < options.repeat) {
    if (options.flush_cache) FlushCaches();
    double seconds = -1;
    const bool network_caches =
        options.refill_private_caches_bytes > 0 || !options.produce_before_run.empty();
    if (!options.evict_before_run.empty() || network_caches) {  // each run timed alone, after its evictions
      seconds = 0;
      for (int i = 0; i < number; ++i) {
        for (const auto& [data, bytes] : options.evict_before_run) EvictFromCaches(data, bytes);
        if (network_caches) SetUpNetworkCaches(options);
        auto start = Clock::now();
        run();
        synchronize();
        seconds += std::chrono::duration<double>(Clock::now() - start).count();
      }
    } else {
      seconds = kernel_->DeviceSeconds(ptrs.data(), number);
      runs += seconds >= 0 ? number : 0;
    }
    if (seconds < 0) {
      auto start = Clock::now();
      for (int i = 0; i < number; ++i) run();
      synchronize();
      seconds = std::chrono::duration<double>(Clock::now() - start).count();
    }
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

}  // namespace autosched
