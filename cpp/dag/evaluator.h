// The reference evaluator: computes a DAG's outputs directly from the
// definition of each operation, interpreting expressions point by point. It
// shares no code with lowering or code generation and is the oracle that
// correctness tests and the tuner's verifier compare against.
//
// Floats are computed in double and rounded to the tensor's dtype when an
// element is stored (float16 by round-to-nearest-even); integers wrap to their
// dtype. A reduction follows its accumulation type (ir/expr.h): the
// accumulator is a double, rounded to float16 after every step when the
// reduction accumulates in float16, and the result is rounded once. A load out of a tensor's bounds is an
// Error naming the tensor and the index, never a silent read.
#pragma once

#include <cstdint>
#include <vector>

#include "dag/compute_dag.h"

namespace autosched {

// A view of caller-owned memory holding one tensor (row-major, compact).
// float16 data is 16-bit IEEE half; bool is one byte.
struct HostTensor {
  void* data = nullptr;
  std::vector<int64_t> shape;
  DataType dtype;
};

// Fills every compute tensor of dag.tensors() from the placeholders; `args`
// follows dag.tensors() order. Checks shapes and dtypes (Error names the
// argument).
void EvaluateReference(const ComputeDAG& dag, const std::vector<HostTensor>& args);

// Values of output dag.tensors()[arg_index] at the given points (each a full
// index), computing only what those points need; as doubles. Inputs are taken
// from `args` (compute entries may be null).
std::vector<double> EvaluateReferencePoints(const ComputeDAG& dag, const std::vector<HostTensor>& args,
                                            int arg_index, const std::vector<std::vector<int64_t>>& points);

}  // namespace autosched
