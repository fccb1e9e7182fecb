// The opencl target kind, and what autosched presumes of OpenCL devices: the
// one table of device families and the description of the device a target
// selects, which everyone else asks (through the kind's capabilities:
// DefaultHardwareParams, the peak model, the GPU search's vector preference).
//
// A target's -device= names a family (exactly, as below) or a device of this
// machine (an index or other text: runtime/opencl/opencl_device.h):
//   nvidia  132 compute units, warp 32, 1024 threads, 48 KiB shared memory,
//           vthread 8; a GPU of 128 FP32 lanes per unit
//   mali    4 compute units (pass -num-cores= for the real count), warp 1,
//           256 threads, 32 KiB shared, vthread 4; a GPU of 64 FP32 lanes per
//           core presumed at most 1.5 GHz, whose ALUs are vector units: the
//           search vectorizes inner loops into explicit vector types
//   pocl    OpenCL on the host CPU: the host's cores, otherwise as mali's
//           limits without vector preference
//   cpu     the first CPU device here: its parameters queried, runs on the CPU
//   gpu     the first GPU device here: its parameters queried
//   (none)  a generic GPU: 16 compute units, otherwise as pocl
// Every family: cache line 64, vector unit 16 bytes (float4), 4 KiB private
// memory per work item (kGpuPrivateBytesPerWorkItem). A device of this
// machine is described by the installed device query (its own parameters, and
// the traits of the family its name, vendor or platform contains).
#pragma once

#include <string>

#include "task/target.h"

namespace autosched {

struct OpenCLDeviceDescription {
  HardwareParams params;  // what the search assumes (before -num-cores=)
  bool on_host_cpu = false;
  bool prefers_explicit_vectors = false;
  double fp32_lanes_per_unit = 128;
  double assumed_clock_hz = 3e9;  // the highest clock presumed where clock_mhz is unknown
};

// The description of a device of this machine from what its driver reports:
// `names` is its name, vendor and platform (family traits are matched in it,
// case-insensitively), `params` its queried parameters.
OpenCLDeviceDescription DescribeQueriedOpenCLDevice(const std::string& names, const HardwareParams& params,
                                                    bool is_cpu);

// How the task layer learns about a device of this machine. Querying devices
// is the OpenCL runtime's (a layer above this one), which installs the query
// when it is linked in (runtime/opencl/opencl_device.cc); the driver is loaded
// only when a target names such a device. The query throws Error when no
// device matches.
using OpenCLDeviceQuery = OpenCLDeviceDescription (*)(const Target& target);
void SetOpenCLDeviceQuery(OpenCLDeviceQuery query);

// The opencl kind's capabilities (target_kind.h), which the registry
// registers.
TargetKind OpenCLTargetKind();

}  // namespace autosched
