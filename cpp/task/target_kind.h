// Target kinds: the one registry of what autosched can generate code for.
//
// A kind is a described set of capabilities. The search, the measurement,
// lowering and the Python layer ask these (target.kind->is_gpu, ...), never a
// kind's name or a device's name, so that a new kind (CUDA, Vulkan, Metal) is
// one registration and its backend, not a branch in every layer.
//
// cpp/task registers llvm (target.cc) and opencl (opencl_devices.cc), with
// their options and default HardwareParams, when the registry is first used.
// The backends install what needs their libraries from their own files'
// static initialisers, which run when libautosched_core.so is loaded (before
// the Python extension, the worker or the C++ tests use it): the builder
// (codegen/llvm/jit.cc, codegen/opencl/build_opencl.cc) and the device query
// (runtime/opencl/opencl_device.cc). A kind without a builder refuses to build
// with its missing_backend message.
//
// Another kind is registered with RegisterTargetKind (e.g. a copy of llvm's
// capabilities under another name: tests/cpp/test_target_kind.cc); a
// Target's text then names it like any other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace autosched {

struct Target;
struct HardwareParams;
struct LoweredFunc;
struct DeviceLimits;
class Module;

// How a target's options are checked (Target::Parse): a flag takes no value.
enum class TargetOptionValue : uint8_t { kFlag, kText, kPositiveInt, kOptLevel, kOnOff };
struct TargetOption {
  std::string name;  // without the leading '-'
  TargetOptionValue value;
};

// How the measurement times a run: the host's wall clock around the call, or
// the device's own event timestamps (a GPU's queue).
enum class RunTiming : uint8_t { kHostWallClock, kDeviceEvents };

// What the peak formulas (task/peak.h) and the measurement's plausibility
// bound (measure/verifier.h) need of the hardware beyond HardwareParams.
struct PeakModel {
  // The code runs on the host's CPU cores: the CPU formulas apply.
  bool on_host_cpu = true;
  // Otherwise (a GPU): FP32 lanes per compute unit, and the clock presumed
  // for the upper bound where HardwareParams::clock_mhz is unknown.
  double fp32_lanes_per_unit = 128;
  double assumed_clock_hz = 3e9;
};

struct TargetKind {
  std::string name;     // the first word of a target's text: "llvm", "opencl"
  std::string summary;  // for messages: "CPU code through LLVM"

  // The search uses the GPU sketches, rules and thread bindings, and lowering
  // binds the default GPU threads to a state without bindings.
  bool is_gpu = false;
  RunTiming timing = RunTiming::kHostWallClock;
  // A kernel that fails leaves the worker unusable (a GPU context is poisoned
  // after an out-of-bounds access): the measurement restarts the worker.
  bool fault_restarts_worker = false;
  // Kernels are machine code called in the process that built them: constant
  // arguments can be prepacked, caches set up around runs (cold constants,
  // network caches), and the code may be cross-compiled for another machine.
  // Otherwise kernels are launched on a device (launch faults are possible).
  bool runs_in_host_process = true;
  // CPU code through LLVM: lowering may version loops on their guards and
  // vectorize a guarded loop under a lane mask (LLVM's masked loads and
  // stores; OpenCL C has none, and a GPU's work items would branch apart on
  // versioned bodies). See LowerOptions::cpu_guard_transforms.
  bool cpu_guard_transforms = false;

  // Options the kind accepts; others are refused, naming these.
  std::vector<TargetOption> options;
  // Fills what the options resolve to once they are parsed (e.g. llvm's CPU);
  // throws Error for options that cannot be honoured. nullptr: nothing to do.
  void (*resolve)(Target* target) = nullptr;
  // The HardwareParams the search assumes (DefaultHardwareParams).
  HardwareParams (*default_hardware_params)(const Target& target) = nullptr;
  // For peak estimates and bounds; whether code runs on the host CPU.
  PeakModel (*peak_model)(const Target& target) = nullptr;
  // GPU search: whether inner loops are vectorized into explicit vector
  // types (mobile GPUs whose ALUs are vector units) even unasked.
  bool (*prefers_explicit_vectors)(const Target& target) = nullptr;
  // Target::Describe's line.
  std::string (*describe)(const Target& target) = nullptr;
  // The parameters of the device the target selects on this machine; Error
  // where none matches. nullptr: the kind has no device of its own, or this
  // build has no runtime to ask.
  HardwareParams (*query_device)(const Target& target) = nullptr;

  // The backend (installed by codegen/): compiles a lowered function.
  // nullptr: this build has no such backend (missing_backend says why).
  Module (*build)(const LoweredFunc& f, const Target& target, const DeviceLimits& limits) = nullptr;
  std::string missing_backend;  // "autosched was built without ..., install ... and rebuild"
};

// Adds a kind and returns its entry, whose address stays valid for the
// process. Error when the name is empty, has spaces, or is registered already.
const TargetKind& RegisterTargetKind(TargetKind kind);
// The kind named `name`; Error listing the registered kinds when there is none.
const TargetKind& FindTargetKind(const std::string& name);
// The same, nullptr when none.
const TargetKind* LookupTargetKind(const std::string& name);
// The registered names, in registration order ("llvm", "opencl", ...).
std::vector<std::string> RegisteredTargetKindNames();
// The kind of a Target that names none (a default-constructed one): llvm.
const TargetKind& DefaultTargetKind();

// Backends install their parts on a registered kind (Error when none has
// that name); at load time, before any target is used.
void SetTargetKindBuilder(const std::string& name, decltype(TargetKind::build) build);
void SetTargetKindDeviceQuery(const std::string& name, decltype(TargetKind::query_device) query);

// The kind's answer for a Target (false where the kind gives none).
bool TargetPrefersExplicitVectors(const Target& target);
// The device query's answer (-num-cores= applied); Error when the kind has
// none or no device matches.
HardwareParams QueryTargetDevice(const Target& target);

}  // namespace autosched
