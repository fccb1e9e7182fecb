#include "task/opencl_devices.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "support/error.h"
#include "task/host_cpu.h"
#include "task/target_kind.h"

namespace autosched {
namespace {

// The device families a -device= may name, and the generic GPU (no -device).
struct Family {
  const char* name;
  bool presets;     // parameters from this table; otherwise queried from the device
  int on_host_cpu;  // 1 / 0, or -1: ask the device the target selects here
  bool prefers_explicit_vectors;
  double fp32_lanes_per_unit;
  double assumed_clock_hz;
  int64_t compute_units;  // -1: the host's cores
  int64_t warp_size, max_threads_per_block, shared_kib, max_vthread_extent;
  // Registers one work item may use: 255 on NVIDIA (the most a CUDA thread
  // may address since Kepler), 64 on Mali (Bifrost and Valhall at full
  // occupancy), 0 (unknown) on a CPU device or an unnamed one.
  int64_t max_registers_per_thread;
};

constexpr Family kFamilies[] = {
    {"nvidia", true, 0, false, 128, 3e9, 132, 32, 1024, 48, 8, 255},
    {"mali", true, 0, true, 64, 1.5e9, 4, 1, 256, 32, 4, 64},
    {"pocl", true, 1, false, 128, 3e9, -1, 1, 256, 32, 4, 0},
    {"cpu", false, 1, false, 128, 3e9, 0, 0, 0, 0, 0, 0},
    {"gpu", false, 0, false, 128, 3e9, 0, 0, 0, 0, 0, 0},
    {"", true, -1, false, 128, 3e9, 16, 1, 256, 32, 4, 0},
};

const Family* FamilyNamed(const std::string& device) {
  for (const Family& f : kFamilies) {
    if (device == f.name) return &f;
  }
  return nullptr;
}

std::string Lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

HardwareParams Presets(const Family& f) {
  HardwareParams p;
  p.vector_unit_bytes = 16;
  p.cache_line_bytes = 64;
  p.max_local_memory_per_block = kGpuPrivateBytesPerWorkItem;
  p.num_cores = f.compute_units < 0 ? HostCores() : f.compute_units;
  p.warp_size = f.warp_size;
  p.max_threads_per_block = f.max_threads_per_block;
  p.max_shared_memory_per_block = f.shared_kib * 1024;
  p.max_vthread_extent = f.max_vthread_extent;
  p.max_registers_per_thread = f.max_registers_per_thread;
  return p;
}

void SetTraits(const Family& f, OpenCLDeviceDescription* d) {
  d->prefers_explicit_vectors = f.prefers_explicit_vectors;
  d->fp32_lanes_per_unit = f.fp32_lanes_per_unit;
  d->assumed_clock_hz = f.assumed_clock_hz;
}

// The traits of the first family whose name `names` contains; the generic
// GPU's where none.
void SetTraitsFrom(const std::string& names, OpenCLDeviceDescription* d) {
  const std::string lower = Lowercase(names);
  for (const Family& f : kFamilies) {
    if (*f.name != '\0' && lower.find(f.name) != std::string::npos) return SetTraits(f, d);
  }
  SetTraits(*FamilyNamed(""), d);
}

OpenCLDeviceQuery installed_query = nullptr;

OpenCLDeviceDescription QueryDevice(const Target& target) {
  AS_CHECK(installed_query != nullptr,
           "target '" << target.str()
                      << "' names an OpenCL device of this machine, but autosched was built without OpenCL "
                      << "(install ocl-icd-opencl-dev and opencl-headers, then rebuild)");
  return installed_query(target);
}

// What the family table says of the target's device, else its device here;
// where none matches here, a GPU with the traits its -device= text names.
OpenCLDeviceDescription DeviceTraits(const Target& target) {
  const Family* f = FamilyNamed(target.device);
  OpenCLDeviceDescription d;
  if (f != nullptr && f->on_host_cpu >= 0) {
    SetTraits(*f, &d);
    d.on_host_cpu = f->on_host_cpu == 1;
    return d;
  }
  if (installed_query != nullptr) {
    try {
      return installed_query(target);
    } catch (const std::exception&) {  // no such device here
    }
  }
  SetTraitsFrom(target.device, &d);
  return d;
}

HardwareParams OpenCLDefaults(const Target& target) {
  const Family* f = FamilyNamed(target.device);
  HardwareParams p = f != nullptr && f->presets ? Presets(*f) : QueryDevice(target).params;
  if (target.num_cores > 0) p.num_cores = target.num_cores;
  return p;
}

PeakModel OpenCLPeakModel(const Target& target) {
  const OpenCLDeviceDescription d = DeviceTraits(target);
  return {d.on_host_cpu, d.fp32_lanes_per_unit, d.assumed_clock_hz};
}

bool OpenCLPrefersExplicitVectors(const Target& target) {
  return DeviceTraits(target).prefers_explicit_vectors;
}

HardwareParams QueriedParams(const Target& target) { return QueryDevice(target).params; }

std::string DescribeOpenCL(const Target& target) {
  std::ostringstream os;
  os << "OpenCL " << (target.device.empty() ? "generic GPU" : "device " + target.device);
  if (!target.platform.empty()) os << " on platform " << target.platform;
  const HardwareParams params = DefaultHardwareParams(target);
  os << ", " << params.num_cores << " compute units, vector_unit_bytes=" << params.vector_unit_bytes;
  return os.str();
}

}  // namespace

OpenCLDeviceDescription DescribeQueriedOpenCLDevice(const std::string& names, const HardwareParams& params,
                                                    bool is_cpu) {
  OpenCLDeviceDescription d;
  d.params = params;
  d.on_host_cpu = is_cpu;
  SetTraitsFrom(names, &d);
  return d;
}

void SetOpenCLDeviceQuery(OpenCLDeviceQuery query) {
  installed_query = query;
  SetTargetKindDeviceQuery("opencl", query != nullptr ? &QueriedParams : nullptr);
}

TargetKind OpenCLTargetKind() {
  TargetKind kind;
  kind.name = "opencl";
  kind.summary = "OpenCL C for a GPU";
  kind.is_gpu = true;
  kind.timing = RunTiming::kDeviceEvents;
  kind.fault_restarts_worker = true;
  kind.runs_in_host_process = false;
  kind.options = {{"device", TargetOptionValue::kText},  // index or name (runtime/opencl/opencl_device.h)
                  {"platform", TargetOptionValue::kText},
                  {"num-cores", TargetOptionValue::kPositiveInt},
                  {"fast-math", TargetOptionValue::kFlag}};
  kind.default_hardware_params = &OpenCLDefaults;
  kind.peak_model = &OpenCLPeakModel;
  kind.prefers_explicit_vectors = &OpenCLPrefersExplicitVectors;
  kind.describe = &DescribeOpenCL;
  kind.missing_backend =
      "autosched was built without OpenCL (install ocl-icd-opencl-dev and opencl-headers, then rebuild)";
  return kind;
}

}  // namespace autosched
