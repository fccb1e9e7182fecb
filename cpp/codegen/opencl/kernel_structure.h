// The structure of the kernels of a lowered function for the OpenCL code
// generator (codegen_opencl.h): where the kernels are, what each launches
// and which buffers it uses, and the checks made before printing.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lower/stmt.h"

namespace autosched::opencl_kernels {

// blockIdx.x/y/z are slots 0..2, threadIdx.x/y/z slots 3..5; -1 for any other loop.
int BindingSlot(ForKind k);
// "get_group_id(d)" or "get_local_id(d)" of a slot.
std::string IdCall(int slot);
const std::string& LoopName(const ForNode* n);

// The top level of the function: global allocations around the root nests,
// each nest one kernel.
void Peel(const Stmt& s, std::vector<Buffer>* temps, std::vector<Stmt>* kernels);

struct Launch {
  std::array<int64_t, 6> extent{1, 1, 1, 1, 1, 1};  // groups per dimension, then work items per group
};

// The launch of a kernel: per slot, the largest extent of a loop bound to it
// (`bound`: the outermost loop bound to each slot around the code visited).
// Refuses a bound loop without a constant positive extent, and a loop bound
// inside a loop bound to the same index that is no cooperative fetch.
void AnalyzeLaunch(const Stmt& s, std::array<const ForNode*, 6>* bound, Launch* launch);

// Buffers a statement reads or writes, in first-use order.
std::vector<const BufferNode*> UsedBuffers(const Stmt& s);

// OpenCL C has no bfloat16: refused, naming a buffer or value of it, before anything is printed.
void CheckNoBFloat16(const LoweredFunc& f, const std::vector<Buffer>& buffers);

bool StoresTo(const Stmt& s, const BufferNode* b);

// A GPU-bound loop inside s that encloses a store to b (nullptr if none).
const ForNode* BindingAroundStore(const Stmt& s, const BufferNode* b);

}  // namespace autosched::opencl_kernels
