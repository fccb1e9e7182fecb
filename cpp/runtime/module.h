// A built module, the same for every backend: one compiled kernel, the
// description of its arguments, and the sources it was made from; callable on
// caller-owned memory without copies.
//
//  - Kernel: what a backend implements (the LLVM JIT in codegen/llvm/jit.cc;
//    OpenCL kernels in runtime/opencl/). Run takes the data pointers of the
//    arguments in the order of LoweredFunc::args and returns a KernelStatus;
//    Synchronize waits for work Run left running (a no-op for code that runs
//    to the end). DeviceSeconds lets a device time its own runs.
//  - Module::Call checks every argument (count, shape, dtype, C-contiguity;
//    outputs writeable and sharing no memory with another argument, as kernels
//    assume no aliasing) and names the first wrong one in an Error before the
//    kernel runs, then raises the Error that a failing status stands for.
//  - Module::TimeEvaluate is the timing loop the tuner uses: it checks the
//    status of every run (the warm-up included), so a failing run is an
//    Error, never a time. A kernel with a device timer is timed by it.
//  - ModuleSources: named texts ("lowered", "ll", "asm", later "cl"), given
//    or produced on first request.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "support/error.h"

namespace autosched {

// What a kernel returns. On a failure it has freed what it allocated; the
// outputs may be partly written.
enum KernelStatus : int32_t {
  kKernelOk = 0,
  kKernelOutOfMemory = -1,  // a temporary buffer could not be allocated
};

// Signature of a kernel generated for the CPU: returns a KernelStatus.
using PackedKernel = int32_t (*)(void** args);

// Memory of a device that has its own (an OpenCL GPU): buffers that stay
// there between kernel launches, so that a KernelSequence of the device's
// kernels copies only its inputs in and its outputs out. Copies and launches
// are queued in order; Finish waits for them (host memory given to a copy
// must live until then).
class DeviceArena {
 public:
  virtual ~DeviceArena() = default;
  // A buffer of `bytes` on the device; returns its index.
  virtual int Allocate(size_t bytes) = 0;
  virtual void Upload(int buffer, const void* host, size_t bytes) = 0;
  virtual void Download(int buffer, void* host, size_t bytes) = 0;
  virtual void Finish() = 0;
};

// The compiled code of one module, as a backend provides it.
class Kernel {
 public:
  virtual ~Kernel() = default;
  // Runs (or starts) the kernel once; args[i] is the data of argument i.
  virtual int32_t Run(void** args) = 0;
  // Waits for the work of earlier Runs; returns the first failure status.
  virtual int32_t Synchronize() = 0;
  // Runs `number` times and returns the seconds the device spent in them, by
  // its own timer (OpenCL profiling events), all work finished; negative when
  // the kernel has no such timer (the time evaluator then uses the host's
  // clock around Run and Synchronize).
  virtual double DeviceSeconds(void** args, int number) { return -1; }
  // Whether the kernel runs on a device with memory of its own (then
  // MakeArena gives a new, empty arena on that device; else nullptr).
  virtual bool HasDeviceMemory() const { return false; }
  virtual std::unique_ptr<DeviceArena> MakeArena() const { return nullptr; }
  // Queues the kernel on buffers of `arena` (one per argument, in Run's
  // order) without waiting; only for kernels that make arenas, and an arena
  // of their device.
  virtual void LaunchIn(DeviceArena& arena, const std::vector<int>& buffers) {
    throw Error("this kernel runs on host memory, not in a device arena");
  }
};

// What a kernel expects of one argument.
// Limits a kernel must keep besides its device's own; 0: none. Measurement
// passes the task's HardwareParams (max_threads_per_block,
// max_shared_memory_per_block), so that a tuned schedule fits the hardware
// the task describes.
struct DeviceLimits {
  int64_t max_threads_per_block = 0;
  int64_t max_local_memory_bytes = 0;
};

// A kernel needs more than its device (or the caller's DeviceLimits) allows;
// raised before the kernel is built where the backend can tell.
// kernel_max_threads: the most work items per group the driver runs this
// kernel with (OpenCL's CL_KERNEL_WORK_GROUP_SIZE, known only after building;
// its register use may make it smaller than the device's maximum), when that
// is the limit the kernel exceeds; else 0.
class DeviceLimitError : public Error {
 public:
  explicit DeviceLimitError(const std::string& msg, int64_t kernel_max_threads = 0)
      : Error(msg), kernel_max_threads(kernel_max_threads) {}
  int64_t kernel_max_threads = 0;
};

// The device or its driver ran out of resources (OpenCL's
// CL_OUT_OF_HOST_MEMORY, CL_OUT_OF_RESOURCES, CL_MEM_OBJECT_ALLOCATION_FAILURE):
// not necessarily the fault of the kernel at hand, and the process's device
// state may be unusable from then on (a measurement worker is replaced).
class DeviceResourceError : public Error {
 public:
  using Error::Error;
};

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
  bool warm_up = true;       // one untimed run first (page faults, thread start)
  // Memory evicted from the caches before each run (a network's weights);
  // each run is then timed alone, the evictions left out of the time.
  std::vector<std::pair<const void*, size_t>> evict_before_run;
  // Before each run (timed alone, like evictions): every thread of the pool
  // writes this many bytes of a buffer of its own, pushing the kernel's data
  // out of its core's private caches, ...
  size_t refill_private_caches_bytes = 0;
  // ... then these arrays are rewritten in place, in equal contiguous shares
  // by the pool's threads, as a producing kernel leaves them.
  std::vector<std::pair<void*, size_t>> produce_before_run;
};

// Writes [data, data + bytes) back to memory and drops it from every cache
// level of this CPU (clflush on x86-64, dc civac on AArch64; elsewhere a
// large buffer is overwritten). The contents are kept.
void EvictFromCaches(const void* data, size_t bytes);

// Named texts describing how a module was made. Copies share the texts; a
// lazily produced one is made once, on its first request, from any thread.
class ModuleSources {
 public:
  ModuleSources();
  void Add(const std::string& format, std::string text);
  void AddLazy(const std::string& format, std::function<std::string()> make);
  // Another name for a format, e.g. "s" for "asm".
  void AddAlias(const std::string& alias, const std::string& format);

  // Throws Error naming the known formats when `format` is not one of them.
  std::string Get(const std::string& format) const;
  std::vector<std::string> Formats() const;  // sorted, aliases left out

 private:
  struct Entry {
    std::string text;
    std::function<std::string()> make;  // set until the text is made
    std::string alias_of;
  };
  struct Shared {
    std::mutex mutex;
    std::map<std::string, Entry> entries;
  };
  std::shared_ptr<Shared> shared_;
};

class Module {
 public:
  // kernel may be null only with a non-empty cannot_run: a module that can be
  // read (its sources) but not run on this host; Call and TimeEvaluate then
  // throw Error with cannot_run as the reason.
  Module(std::string name, std::vector<ArgSpec> args, std::shared_ptr<Kernel> kernel, ModuleSources sources,
         double compile_seconds, std::string cannot_run = "");

  const std::string& name() const { return name_; }
  const std::vector<ArgSpec>& args() const { return args_; }
  double compile_seconds() const { return compile_seconds_; }
  const std::string& cannot_run() const { return cannot_run_; }
  // The backend's kernel (null where cannot_run is set); export reads it.
  const std::shared_ptr<Kernel>& kernel() const { return kernel_; }

  // Checks the arguments, then runs the kernel; results are written in place.
  void Call(const std::vector<CallArg>& args) const;
  // Runs the kernel on arguments checked before (CheckArgs) and waits for it;
  // throws the Error its failure status stands for.
  void RunPointers(void** data) const;
  // Throws Error when the module cannot run on this host.
  void CheckRunnable() const;
  // Throws Error naming the first argument that is not what the kernel takes.
  void CheckArgs(const std::vector<CallArg>& args) const;
  // Seconds per run, one entry per repeat (see TimeOptions). Throws Error
  // when any run fails.
  std::vector<double> TimeEvaluate(const std::vector<CallArg>& args, const TimeOptions& options) const;
  // A source by format name (sources().Formats() lists them).
  std::string GetSource(const std::string& format) const { return sources_.Get(format); }
  const ModuleSources& sources() const { return sources_; }

 private:
  std::string name_;
  std::vector<ArgSpec> args_;
  std::shared_ptr<Kernel> kernel_;
  ModuleSources sources_;
  double compile_seconds_;
  std::string cannot_run_;
};

}  // namespace autosched
