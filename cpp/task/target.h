// Target: where generated code runs, parsed from a string such as
//   "llvm"                                      the host CPU, all its cores
//   "llvm -mcpu=sapphirerapids -num-cores=2 -fast-math"
//   "opencl -device=mali"
// The first word is the kind (llvm: CPU code through LLVM; opencl: OpenCL C for
// a GPU); each further word is an option "-name" or "-name=value"; a '#' starts
// a comment that runs to the end. Unknown kinds, unknown options, malformed
// values and options that cannot be honoured throw Error naming them.
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
// vendor or platform contains; nvidia, mali and pocl also pick the default
// HardwareParams below), -platform=NAME, -num-cores=N (compute units),
// -fast-math. Which device a name selects is decided when code is built
// (runtime/opencl/opencl_device.h); a name no device matches is an Error then.
//
// HardwareParams: the machine facts the search needs, one typed field each with
// a documented default; DefaultHardwareParams(target) fills them per target.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "task/host_cpu.h"

namespace autosched {

enum class TargetKind : uint8_t { LLVM, OpenCL };
const char* TargetKindName(TargetKind kind);  // "llvm", "opencl"

struct Target {
  TargetKind kind = TargetKind::LLVM;
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
  // Every option as given, without the leading '-'; flags map to "".
  std::map<std::string, std::string> options;

  // Throws Error naming the offending word.
  static Target Parse(const std::string& text);
  // Parse("llvm"): the host CPU with all its cores.
  static Target Host();
  bool HasOption(const std::string& name) const { return options.count(name) != 0; }
  // Canonical text: kind, then the options sorted by name. Parse(str()) == *this.
  std::string str() const;
  // One line on what code is built for and what the search assumes, e.g.
  // "host CPU znver3 (avx2, fma), 2 cores, vector_unit_bytes=32".
  std::string Describe() const;
  bool operator==(const Target& o) const { return kind == o.kind && options == o.options; }
};

// One line per field: X(name, default, doc). The struct, its JSON form and the
// Python keywords all come from this list. Values of 0 mean "does not apply"
// (e.g. thread limits on a CPU).
#define AUTOSCHED_HARDWARE_PARAMS_FIELDS(X)                                                               \
  X(num_cores, 1, "parallel cores (CPU) or compute units (GPU)")                                          \
  X(vector_unit_bytes, 32, "width of one SIMD register in bytes (AVX2: 32, AVX-512: 64)")                 \
  X(cache_line_bytes, 64, "bytes per cache line")                                                         \
  X(max_shared_memory_per_block, 0, "GPU: bytes of shared (OpenCL local) memory per block")               \
  X(max_local_memory_per_block, 0, "GPU: bytes of per-thread (private) memory per block")                 \
  X(max_threads_per_block, 0, "GPU: most threads (work items) in one block (work group)")                 \
  X(max_vthread_extent, 0, "GPU: largest virtual-thread split")                                           \
  X(warp_size, 0, "GPU: threads that run in lock step; 1 where the device has no such unit")              \
  X(l1_cache_bytes, 0, "CPU: bytes of level-1 data cache per core; 0 where unknown")                      \
  X(l2_cache_bytes, 0, "CPU: bytes of level-2 cache per core; 0 where unknown")                           \
  X(l3_cache_bytes, 0, "CPU: bytes of the level-3 cache (shared); 0 where unknown")                       \
  X(clock_mhz, 0, "GPU: the compute units' maximum clock in MHz; 0 where unknown")                        \
  X(peak_gflops, 0, "GFLOP/s no run can beat (measurement's plausibility check); 0: derive it")           \
  X(peak_bandwidth_gbs, 0, "GB/s of memory traffic no run can beat (plausibility); 0: derive it")         \
  X(num_vector_registers, 0, "CPU: SIMD registers per core (AVX-512: 32, AVX/AVX2: 16); 0 where unknown") \
  X(fma_units, 0, "CPU: vector multiply-add (FMA) pipes per core; 0 where unknown")

struct HardwareParams {
#define AUTOSCHED_DECLARE_FIELD(name, default_value, doc) int64_t name = default_value;
  AUTOSCHED_HARDWARE_PARAMS_FIELDS(AUTOSCHED_DECLARE_FIELD)
#undef AUTOSCHED_DECLARE_FIELD
  bool operator==(const HardwareParams& o) const;
};

// Defaults per target:
//  llvm:   num_cores: the target's (given or the machine's); vector_unit_bytes
//          from the features the target keeps: 64 with avx512f, 32 with avx2
//          or avx, else 16; cache line and cache sizes as the OS reports them
//          when the target's CPU is the host's (else line 64, sizes 0); GPU
//          fields 0.
//  opencl: cache line 64, vector unit 16 bytes (float4), and per device:
//          nvidia: 132 compute units, warp 32, 1024 threads, 48 KiB shared,
//                  64 KiB private, vthread 8;
//          mali:   4 compute units (pass -num-cores= for the real count), warp 1
//                  (no lock-step groups exposed), 256 threads, 32 KiB shared,
//                  64 KiB private, vthread 4;
//          pocl (OpenCL on the CPU) and generic (no -device): host cores
//                  (generic: 16 units), warp 1, 256 threads, 32 KiB shared,
//                  64 KiB private, vthread 4; clock_mhz 0 (unknown).
//          a -device= naming a device of this machine otherwise (an index,
//                  or other text, e.g. "opencl -device=0"): queried from it
//                  (runtime/opencl/opencl_device.h, OpenCLHardwareParams).
//          -num-cores= overrides the number of compute units.
//          num_vector_registers from the features too: 32 with avx512f (or on
//          AArch64), 16 otherwise on x86-64; fma_units: 2 where full-width
//          FMAs issue on two pipes (AVX-512 server parts, Zen, AVX2 cores
//          since Haswell, AArch64), 1 on AVX-512 client parts (one 512-bit
//          FMA pipe) and without FMA.
//  opencl: num_vector_registers and fma_units 0 (no such unit is modelled).
//  peak_gflops and peak_bandwidth_gbs are 0 everywhere: the measurement
//  derives its bounds (measure/verifier.h) unless they are set.
HardwareParams DefaultHardwareParams(const Target& target);

// How DefaultHardwareParams learns the parameters of an OpenCL device of this
// machine. Querying devices is the OpenCL runtime's (a layer above this one),
// which installs the query when it is linked in (runtime/opencl/
// opencl_device.cc); the driver is loaded only when a target names such a
// device. Without it, such a target is refused with an Error.
using OpenCLDeviceQuery = HardwareParams (*)(const Target& target);
void SetOpenCLDeviceQuery(OpenCLDeviceQuery query);

}  // namespace autosched
