// Building a lowered function into a Module that runs on an OpenCL device:
// OpenCL C from GenerateOpenCL (codegen_opencl.h), compiled and launched by
// the runtime (runtime/opencl/opencl_module.h). Needs a build with OpenCL.
#pragma once

#include "lower/stmt.h"
#include "runtime/module.h"
#include "task/target.h"

namespace autosched {

// Throws DeviceLimitError when a kernel needs more than the device or
// `limits` allow, Error for anything else the backend refuses.
Module BuildOpenCL(const LoweredFunc& f, const Target& target, const DeviceLimits& limits = {});

}  // namespace autosched
