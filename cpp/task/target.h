// Target: where generated code runs, parsed from a string such as
//   "llvm"                                      the host CPU, all its cores
//   "llvm -mcpu=sapphirerapids -num-cores=2 -fast-math"
//   "opencl -device=mali"
// The first word names the kind, an entry of the registry of target kinds
// (task/target_kind.h: llvm, CPU code through LLVM; opencl, OpenCL C for a
// GPU; and any other registered kind); each further word is an option "-name"
// or "-name=value" of those the kind accepts; a '#' starts a comment that runs
// to the end. Unknown kinds (the error lists the registered ones), unknown
// options, malformed values and options that cannot be honoured throw Error
// naming them. What a target can do (GPU or CPU, how runs are timed, whether
// kernels run in this process, ...) is its kind's capabilities: code outside
// cpp/task and the backends asks those, never the kind's name.
//
// llvm options:
//   -mcpu=NAME      LLVM CPU name (default: the host's, as LLVM detects it);
//                   features NAME has and this host lacks are turned off
//                   (cpu.dropped) unless -no-host-check is given
//   -mattr=+f,-g    CPU features turned on / off
//   -mtriple=T      this host's architecture and OS (kernels run in this
//                   process), or another architecture (e.g. aarch64-linux-gnu):
//                   then code is cross-compiled for -mcpu (default generic)
//                   to an object file, never run here (cpu.foreign), and
//                   measured on a machine of that architecture (RayRunner)
//   -num-cores=N    threads for parallel loops (default: the cores this
//                   process may use); also HardwareParams::num_cores
//   -opt-level=0..3 LLVM's optimisation level (default 3)
//   -fast-math      allow reassociation, reciprocals and contraction of floats
//   -no-host-check  keep every feature of -mcpu / -mattr even where this host
//                   lacks it: the built module can be read (get_source) but
//                   refuses to run here, naming the missing features
// opencl options: -device=INDEX or NAME (a device's index, or text its name,
// vendor or platform contains; the family names nvidia, mali, pocl, cpu and
// gpu also pick what the search presumes: task/opencl_devices.h),
// -platform=NAME, -num-cores=N (compute units), -fast-math. Which device a
// name selects is decided when code is built (runtime/opencl/
// opencl_device.h); a name no device matches is an Error then.
//
// HardwareParams: the machine facts the search needs, one typed field each with
// a documented default; DefaultHardwareParams(target) asks the target's kind.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "support/fields.h"
#include "task/host_cpu.h"
#include "task/target_kind.h"

namespace autosched {

// The private memory per work item that GPU defaults allow (HardwareParams::
// max_local_memory_per_block). A GPU keeps at most about 1 KiB per work item
// in registers (255 on NVIDIA, 64 on Mali); a private array beyond this lives
// in off-chip memory at every access, and the driver reserves that memory for
// every resident work item at launch: on an H200, candidates with 14-57 KiB
// per work item ran 1000x slower than the best or failed to launch with
// CL_OUT_OF_HOST_MEMORY. OpenCL does not report a limit to query.
constexpr int64_t kGpuPrivateBytesPerWorkItem = 4 * 1024;

struct Target {
  // The registry's entry (never null); a default-constructed Target is llvm's.
  const TargetKind* kind = &DefaultTargetKind();
  // llvm
  std::string mcpu;        // -mcpu= as given (empty: the host CPU)
  std::string mattr;       // -mattr= as given
  std::string mtriple;     // -mtriple= as given (the host's, or foreign: cpu.foreign)
  int opt_level = 3;       // -opt-level=
  bool host_check = true;  // false with -no-host-check
  CpuSpec cpu;             // what -mcpu / -mattr resolve to on this host (Parse fills it)
  // opencl
  std::string device;    // -device= (empty: a generic GPU)
  std::string platform;  // -platform= (empty: the first platform with the device)
  // both
  // llvm: -num-cores= else the cores of this machine (the one value kernels,
  // thread pool and HardwareParams use); opencl: -num-cores= else 0 (the device's).
  int num_cores = 0;
  bool fast_math = false;  // -fast-math
  // -fp-contract=on|off (llvm): whether a * b + c may be computed as one fused
  // multiply-add, rounded once. On by default, as C compilers do; the result
  // then differs from separate rounding by at most one rounding of the product.
  bool fp_contract = true;
  // -prefetch=on|off (llvm): whether loops that stream a slice of read-only
  // arguments prefetch the next one (codegen/prefetch_plan.h). On by default.
  bool prefetch = true;
  // Every option as given, without the leading '-'; flags map to "".
  std::map<std::string, std::string> options;

  // Throws Error naming the offending word.
  static Target Parse(const std::string& text);
  // Parse("llvm"): the host CPU with all its cores.
  static Target Host();
  bool HasOption(const std::string& name) const { return options.count(name) != 0; }
  // Canonical text: the kind's name, then the options sorted by name. Parse(str()) == *this.
  std::string str() const;
  // One line on what code is built for and what the search assumes, e.g.
  // "host CPU znver3 (avx2, fma), 2 cores, vector_unit_bytes=32".
  std::string Describe() const;
  bool operator==(const Target& o) const { return kind == o.kind && options == o.options; }
};

// One line per field: X(type, name, default, range, doc) (support/fields.h).
// The struct, its checks, its JSON form and the Python class (keywords, and
// the first eight fields by position) all come from this list. Values of 0
// mean "does not apply" (e.g. thread limits on a CPU); -1 (kHardwareParamFromTarget
// in task/search_task.h) "take it from the target".
#define AUTOSCHED_HARDWARE_PARAMS_FIELDS(X)                                                    \
  X(int64_t, num_cores, 1, CountOrFromTarget(), "parallel cores (CPU) or compute units (GPU)") \
  X(int64_t, vector_unit_bytes, 32, CountOrFromTarget(),                                       \
    "width of one SIMD register in bytes (AVX2: 32, AVX-512: 64)")                             \
  X(int64_t, cache_line_bytes, 64, CountOrFromTarget(), "bytes per cache line")                \
  X(int64_t, max_shared_memory_per_block, 0, CountOrFromTarget(),                              \
    "GPU: bytes of shared (OpenCL local) memory per block")                                    \
  X(int64_t, max_local_memory_per_block, 0, CountOrFromTarget(),                               \
    "GPU: bytes of private memory per work item (thread)")                                     \
  X(int64_t, max_threads_per_block, 0, CountOrFromTarget(),                                    \
    "GPU: most threads (work items) in one block (work group)")                                \
  X(int64_t, max_vthread_extent, 0, CountOrFromTarget(), "GPU: largest virtual-thread split")  \
  X(int64_t, warp_size, 0, CountOrFromTarget(),                                                \
    "GPU: threads that run in lock step; 1 where the device has no such unit")                 \
  X(int64_t, l1_cache_bytes, 0, CountOrFromTarget(),                                           \
    "CPU: bytes of level-1 data cache per core; 0 where unknown")                              \
  X(int64_t, l2_cache_bytes, 0, CountOrFromTarget(),                                           \
    "CPU: bytes of level-2 cache per core; 0 where unknown")                                   \
  X(int64_t, l3_cache_bytes, 0, CountOrFromTarget(),                                           \
    "CPU: bytes of the level-3 cache (shared); 0 where unknown")                               \
  X(int64_t, clock_mhz, 0, CountOrFromTarget(),                                                \
    "GPU: the compute units' maximum clock in MHz; 0 where unknown")                           \
  X(int64_t, peak_gflops, 0, CountOrFromTarget(),                                              \
    "GFLOP/s no run can beat (measurement's plausibility check); 0: derive it")                \
  X(int64_t, peak_bandwidth_gbs, 0, CountOrFromTarget(),                                       \
    "GB/s of memory traffic no run can beat (plausibility); 0: derive it")                     \
  X(int64_t, num_vector_registers, 0, CountOrFromTarget(),                                     \
    "CPU: SIMD registers per core (AVX-512: 32, AVX/AVX2: 16); 0 where unknown")               \
  X(int64_t, fma_units, 0, CountOrFromTarget(),                                                \
    "CPU: vector multiply-add (FMA) pipes per core; 0 where unknown")                          \
  X(int64_t, max_registers_per_thread, 0, CountOrFromTarget(),                                 \
    "GPU: 32-bit registers one work item may hold (NVIDIA: 255); 0 where unknown")

struct HardwareParams {
  AUTOSCHED_OPTIONS_FIELDS(HardwareParams, AUTOSCHED_HARDWARE_PARAMS_FIELDS)
};

// Defaults per target, the kind's (TargetKind::default_hardware_params):
//  llvm:   num_cores: the target's (given or the machine's); vector_unit_bytes
//          from the features the target keeps: 64 with avx512f, 32 with avx2
//          or avx, else 16; cache line and cache sizes as the OS reports them
//          when the target's CPU is the host's (else line 64, sizes 0);
//          num_vector_registers from the features too: 32 with avx512f (or on
//          AArch64), 16 otherwise on x86-64; fma_units: 2 where full-width
//          FMAs issue on two pipes (AVX-512 server parts, Zen, AVX2 cores
//          since Haswell, AArch64), 1 on AVX-512 client parts (one 512-bit
//          FMA pipe) and without FMA; GPU fields 0.
//  opencl: the device family's presets, or the parameters of the device of
//          this machine the target names (task/opencl_devices.h); -num-cores=
//          overrides the number of compute units; num_vector_registers and
//          fma_units 0 (no such unit is modelled); max_registers_per_thread
//          255 on nvidia (the limit since Kepler), 64 on mali (Bifrost and
//          Valhall at full occupancy), 0 (unknown) on pocl and generic, and
//          on a device of this machine unless the driver names NVIDIA's
//          attributes (cl_nv_device_attribute_query).
//  peak_gflops and peak_bandwidth_gbs are 0 everywhere: the measurement
//  derives its bounds (measure/verifier.h) unless they are set.
HardwareParams DefaultHardwareParams(const Target& target);

// llvm's capabilities, which the registry registers first (target_kind.h).
TargetKind LLVMTargetKind();

}  // namespace autosched
