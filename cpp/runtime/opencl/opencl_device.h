// OpenCL devices through the ICD loader: enumeration, selection from a
// Target, one context and in-order profiling queue per device, a program
// cache keyed by device, source and build options, and named error codes.
//
// Device selection (Target "opencl -device=D -platform=P"):
//  - D all digits: the D-th device of the list (ListOpenCLDevices order:
//    platforms as the loader reports them, then their devices);
//  - D any other text: the first device whose device name, vendor, platform
//    name or platform vendor contains D, case-insensitively ("nvidia", "pocl",
//    "mali", "gfx90a", ...);
//  - no -device: the first GPU, else the first device;
//  - P narrows the search to platforms whose name or vendor contains P.
// No match is an Error listing the devices there are.
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "task/target.h"

namespace autosched {

// "CL_INVALID_WORK_GROUP_SIZE" for -54, ...; "unknown OpenCL error" else.
const char* OpenCLErrorName(cl_int code);
// Throws Error "<what>: OpenCL error NAME (code)" unless code is CL_SUCCESS.
void CheckCL(cl_int code, const std::string& what);

struct OpenCLDevice {
  int index = 0;  // in ListOpenCLDevices()
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  std::string name, vendor, version, driver_version, platform_name, platform_vendor, extensions;
  bool is_gpu = false;
  int64_t compute_units = 0;
  int64_t max_work_group_size = 0;
  std::array<int64_t, 3> max_work_item_sizes{0, 0, 0};
  int64_t local_memory_bytes = 0;
  int64_t global_memory_bytes = 0;
  int64_t clock_mhz = 0;
  int64_t cache_line_bytes = 0;
  int64_t preferred_float_vector_width = 0;
  int64_t warp_size = 1;  // NVIDIA's when the driver tells it (cl_nv_device_attribute_query), else 1
  bool HasExtension(const std::string& ext) const;
  std::string Describe() const;  // "[0] name (platform)"
};

// Every device of every platform; empty when there is no OpenCL platform
// (no ICD installed). Queried once per process.
const std::vector<OpenCLDevice>& ListOpenCLDevices();

// Why the OpenCL ICD loader could not be opened, where this build opens it at
// run time (opencl_loader.cc); empty where it was opened or is linked.
std::string OpenCLLoaderProblem();

// The device a target selects (see above); Error when none matches.
const OpenCLDevice& SelectOpenCLDevice(const Target& target);

// The device's context and queue (made on first use, kept for the process).
cl_context OpenCLContext(const OpenCLDevice& device);
cl_command_queue OpenCLQueue(const OpenCLDevice& device);

// The program built from `source` for the device (cached); Error with the
// build log when it does not compile.
cl_program GetOpenCLProgram(const OpenCLDevice& device, const std::string& source,
                            const std::string& options);

// The program made from a binary that ProgramBinary gave for this device
// (same device and driver), built; Error with the build log when the driver
// refuses it. Not cached: loading a module is done once.
cl_program GetOpenCLProgramFromBinary(const OpenCLDevice& device, const std::string& binary,
                                      const std::string& options);

// The driver's binary of a program built for one device; empty when the
// driver gives none.
std::string OpenCLProgramBinary(cl_program program);

// Programs this process has built from OpenCL C source and from binaries.
struct OpenCLProgramBuilds {
  int64_t from_source = 0;
  int64_t from_binary = 0;
};
OpenCLProgramBuilds OpenCLProgramBuildCounts();

// HardwareParams of the device (compute units, work-group and memory limits,
// vector width, cache line, warp size, clock).
HardwareParams OpenCLHardwareParams(const OpenCLDevice& device);

}  // namespace autosched
