// Running OpenCL programs: a Kernel (runtime/module.h) that launches the
// kernels of a program on the device the target selects
// (runtime/opencl/opencl_device.h), one after another. Code generation
// (codegen/opencl/build_opencl.h) makes the program and the Module around it.
//
// A run copies every argument to the device, launches the kernels in order
// and copies the outputs back (all on the device's in-order queue; Module's
// Synchronize waits for it). The time evaluator times the kernels with
// profiling events: the copies are not counted.
//
// Checked before the program is built (DeviceLimitError naming the kernel and
// the limit): work items per group against the device's and the kernel's
// maximum and against the maximum per dimension, __local memory against the
// device's, and both against the caller's DeviceLimits.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/module.h"
#include "runtime/opencl/program_spec.h"
#include "task/target.h"

namespace autosched {

// Compiles `spec` for the target's device and returns the kernel that runs it;
// written[i]: buffer i of the spec is an output, copied back after a run.
std::shared_ptr<Kernel> MakeOpenCLKernel(const Target& target, OpenCLProgramSpec spec,
                                         std::vector<bool> written, const DeviceLimits& limits);

// An OpenCL module's kernel as export keeps it: spec_json holds the program
// spec (source, buffers, launch shapes), its build options and the device
// and driver it was built by; binary is that driver's program binary, empty
// where the driver gives none.
struct OpenCLKernelExport {
  std::string spec_json;
  std::string binary;
};
// Error when `kernel` is not an OpenCL kernel.
OpenCLKernelExport ExportOpenCLKernel(const Kernel& kernel);

// The kernel of an exported spec on the device `target` selects: from the
// binary when the same device and driver made it (no compiler runs), else
// from the source. Device limits are checked as for a build.
std::shared_ptr<Kernel> LoadOpenCLKernel(const Target& target, const std::string& spec_json,
                                         const std::string& binary, std::vector<bool> written);

// Fault injection for tests of the measurement: while on, every kernel launch
// of this process asks for a work group one work item larger than the device
// allows (and than the kernel's reqd_work_group_size), so that the driver's
// clEnqueueNDRangeKernel fails as a real launch error does.
void SetOpenCLLaunchFaultForTesting(bool on);

}  // namespace autosched
