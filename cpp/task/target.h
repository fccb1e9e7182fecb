// Target: where generated code runs, parsed from a string such as
//   "llvm -mcpu=sapphirerapids -num-cores=2 -fast-math"
//   "opencl -device=mali"
// The first word is the kind (llvm: CPU code through LLVM; opencl: OpenCL C for
// a GPU); each further word is an option "-name" or "-name=value". Unknown
// kinds, unknown options and malformed values throw Error naming them.
//
// HardwareParams: the machine facts the search needs, one typed field each with
// a documented default; DefaultHardwareParams(target) fills them per target.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace autosched {

enum class TargetKind : uint8_t { LLVM, OpenCL };
const char* TargetKindName(TargetKind kind);  // "llvm", "opencl"

struct Target {
  TargetKind kind = TargetKind::LLVM;
  std::string mcpu;    // llvm: -mcpu= (empty: the host CPU)
  std::string device;  // opencl: -device= (empty: a generic GPU)
  int num_cores = 0;   // -num-cores= (0: not given, use the machine's)
  // Every option as given, without the leading '-'; flags map to "".
  std::map<std::string, std::string> options;

  // Throws Error naming the offending word.
  static Target Parse(const std::string& text);
  bool HasOption(const std::string& name) const { return options.count(name) != 0; }
  // Canonical text: kind, then the options sorted by name. Parse(str()) == *this.
  std::string str() const;
  bool operator==(const Target& o) const { return kind == o.kind && options == o.options; }
};

// One line per field: X(name, default, doc). The struct, its JSON form and the
// Python keywords all come from this list. Values of 0 mean "does not apply"
// (e.g. thread limits on a CPU).
#define AUTOSCHED_HARDWARE_PARAMS_FIELDS(X)                                                 \
  X(num_cores, 1, "parallel cores (CPU) or compute units (GPU)")                            \
  X(vector_unit_bytes, 32, "width of one SIMD register in bytes (AVX2: 32, AVX-512: 64)")   \
  X(cache_line_bytes, 64, "bytes per cache line")                                           \
  X(max_shared_memory_per_block, 0, "GPU: bytes of shared (OpenCL local) memory per block") \
  X(max_local_memory_per_block, 0, "GPU: bytes of per-thread (private) memory per block")   \
  X(max_threads_per_block, 0, "GPU: most threads (work items) in one block (work group)")   \
  X(max_vthread_extent, 0, "GPU: largest virtual-thread split")                             \
  X(warp_size, 0, "GPU: threads that run in lock step; 1 where the device has no such unit")

struct HardwareParams {
#define AUTOSCHED_DECLARE_FIELD(name, default_value, doc) int64_t name = default_value;
  AUTOSCHED_HARDWARE_PARAMS_FIELDS(AUTOSCHED_DECLARE_FIELD)
#undef AUTOSCHED_DECLARE_FIELD
  bool operator==(const HardwareParams& o) const;
};

// Defaults per target:
//  llvm:   num_cores from -num-cores= else the host's hardware threads;
//          vector_unit_bytes 64 for AVX-512 CPUs (sapphirerapids, skylake-avx512,
//          icelake-*, cascadelake, cooperlake, tigerlake, znver4; an empty or
//          "native" -mcpu asks the host), else 32; cache line 64; GPU fields 0.
//  opencl: cache line 64, vector unit 16 bytes (float4), and per device:
//          nvidia: 132 compute units, warp 32, 1024 threads, 48 KiB shared,
//                  64 KiB private, vthread 8;
//          mali:   4 compute units (pass -num-cores= for the real count), warp 1
//                  (no lock-step groups exposed), 256 threads, 32 KiB shared,
//                  64 KiB private, vthread 4;
//          pocl (OpenCL on the CPU) and generic (no -device): host cores
//                  (generic: 16 units), warp 1, 256 threads, 32 KiB shared,
//                  64 KiB private, vthread 4.
//          -num-cores= overrides the number of compute units.
HardwareParams DefaultHardwareParams(const Target& target);

}  // namespace autosched
