// Building a lowered function into a Module that runs on an OpenCL device:
// OpenCL C from codegen/opencl/, compiled for the device the target selects
// (runtime/opencl/opencl_device.h), launched kernel after kernel.
//
// A run copies every argument to the device, launches the kernels in order
// and copies the outputs back (all on the device's in-order queue; Module's
// Synchronize waits for it). The time evaluator times the kernels with
// profiling events: the copies are not counted.
//
// Checked before a module is made (Error naming the kernel and the limit):
// work items per group against the device's and the kernel's maximum and
// against the maximum per dimension, __local memory against the device's.
#pragma once

#include "lower/stmt.h"
#include "runtime/module.h"
#include "task/target.h"

namespace autosched {

Module BuildOpenCL(const LoweredFunc& f, const Target& target);

}  // namespace autosched
