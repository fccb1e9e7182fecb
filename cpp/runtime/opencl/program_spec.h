// What an OpenCL program is made of, as code generation (codegen/opencl/)
// produces it and the runtime (runtime/opencl/) builds and launches it: the
// source, the buffers, and each kernel's launch shape. Header only: code
// generation and the search use it in builds without an OpenCL library.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace autosched {

struct OpenCLKernelSpec {
  std::string name;
  std::vector<int> buffers;  // indices into OpenCLProgramSpec::buffers, in parameter order
  std::array<int64_t, 3> num_groups{1, 1, 1};
  std::array<int64_t, 3> group_size{1, 1, 1};  // work items per group
  int64_t local_memory_bytes = 0;              // of its __local arrays
};

struct OpenCLProgramSpec {
  std::string source;
  std::vector<Buffer> buffers;  // the function's arguments, then device temporaries
  size_t num_args = 0;
  std::vector<OpenCLKernelSpec> kernels;
  bool uses_fp64 = false;
};

// Bytes a buffer holds (its strides included).
inline int64_t BufferBytes(const BufferNode& b) {
  int64_t count = 1;
  if (b.strides.empty()) {
    for (int64_t d : b.shape) count *= d;
  } else {
    count = 1;
    for (size_t d = 0; d < b.shape.size(); ++d) count += (b.shape[d] - 1) * b.strides[d];
  }
  return count * b.dtype.bytes();
}

}  // namespace autosched
