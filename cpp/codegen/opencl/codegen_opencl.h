// OpenCL C generation from a lowered function (no OpenCL library needed; the
// runtime in runtime/opencl/ compiles and launches what this produces).
//
// Kernels. Each top-level statement of the function (one root stage's loop
// nest) becomes one __kernel, launched in order; the global allocations
// around them (intermediate root stages, accumulators) become device buffers
// passed to the kernels that use them. Arguments are __global pointers, in the
// order of OpenCLProgramSpec::buffers.
//
// Bindings. A loop bound to blockIdx.x/y/z reads get_group_id(0/1/2), one
// bound to threadIdx.x/y/z reads get_local_id(0/1/2). A kernel launches, per
// dimension, as many groups as its largest blockIdx extent and as many work
// items per group as its largest threadIdx extent; a bound loop with a smaller
// extent is guarded. A kernel without bindings runs as one work item. Code
// outside the bindings of a launched dimension runs in every work item of it:
// its stores to __global and __local buffers are guarded so that one work
// item (index 0 of that dimension) writes, and private buffers are per work
// item. A shared buffer allocated inside threadIdx loops is one buffer of the
// group (bound inference gives it the group's region); a loop inside that
// rebinds the same threadIdx index is a cooperative fetch into it. Refused
// with an Error naming the loop or buffer: a loop nested in a loop bound to
// the same index (except such a fetch: shared stores only, extent at most
// the outer loop's), a bound loop without a constant extent, a
// private buffer written under a binding made inside
// its allocation (other work items could not read it), a barrier that would
// sit in code only some work items reach.
//
// Loops. Unbound loops are C for loops; an unrolled one (the schedule's
// unroll, auto_unroll_max_step) within the kernel's unroll budget
// (codegen/unroll_budget.h) is preceded by #pragma unroll, so the device's
// compiler unrolls it and private arrays indexed by it can stay in registers.
//
// Scopes. Buffers of scope "shared" are __local arrays at kernel scope, with
// barrier(CLK_LOCAL_MEM_FENCE) before and after each statement that writes
// them; "local" and "global" buffers allocated inside a kernel are private
// arrays.
//
// Types. bool is stored as uchar; float16 is stored as half and computed in
// float (vload_half / vstore_half_rte, core OpenCL: no cl_khr_fp16 needed),
// rounded to half where the IR rounds (stores, casts, immediates), as the LLVM
// backend does; float64 needs cl_khr_fp64. Vector expressions are printed lane
// by lane (codegen/source/c_printer.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lower/stmt.h"
#include "runtime/opencl/program_spec.h"

namespace autosched {

OpenCLProgramSpec GenerateOpenCL(const LoweredFunc& f);

}  // namespace autosched
