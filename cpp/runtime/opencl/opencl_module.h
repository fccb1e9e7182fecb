// Building a lowered function into a Module that runs on an OpenCL device:
// OpenCL C from codegen/opencl/, compiled for the device the target selects
// (runtime/opencl/opencl_device.h), launched kernel after kernel.
//
// A run copies every argument to the device, launches the kernels in order
// and copies the outputs back (all on the device's in-order queue; Module's
// Synchronize waits for it). The time evaluator times the kernels with
// profiling events: the copies are not counted.
//
// Checked before a module is made (OpenCLLimitError naming the kernel and
// the limit): work items per group against the device's and the kernel's
// maximum and against the maximum per dimension, __local memory against the
// device's, and both against the caller's OpenCLLimits.
#pragma once

#include <cstdint>

#include "lower/stmt.h"
#include "runtime/module.h"
#include "support/error.h"
#include "task/target.h"

namespace autosched {

// A kernel needs more work items per group or more __local memory than the
// device (or the caller's OpenCLLimits) allows; raised before the program is
// built, or right after for the kernel's own work-group maximum.
class OpenCLLimitError : public Error {
 public:
  using Error::Error;
};

// Limits to keep besides the device's own; 0: none. Measurement passes the
// task's HardwareParams (max_threads_per_block, max_shared_memory_per_block),
// so that a tuned schedule fits the hardware the task describes.
struct OpenCLLimits {
  int64_t max_threads_per_block = 0;
  int64_t max_local_memory_bytes = 0;
};

Module BuildOpenCL(const LoweredFunc& f, const Target& target, const OpenCLLimits& limits = {});

// Fault injection for tests of the measurement: while on, every kernel launch
// of this process asks for a work group one work item larger than the device
// allows (and than the kernel's reqd_work_group_size), so that the driver's
// clEnqueueNDRangeKernel fails as a real launch error does.
void SetOpenCLLaunchFaultForTesting(bool on);

}  // namespace autosched
