// Structural hashing and equality of expressions.
//
// Variables are compared by position of first binding, not by name or node:
// two expressions that differ only in the names (or identities) of their
// variables are equal and hash alike. Tensors referenced by loads are compared
// through a caller-supplied mapping (see TensorIndexFn), so a whole DAG can be
// hashed canonically (ComputeDAG's workload key).
#pragma once

#include <cstdint>
#include <functional>

#include "ir/expr.h"
#include "ir/tensor.h"

namespace autosched {

// Maps a tensor to a canonical number (e.g. its position in a DAG). The
// default compares tensors by name, shape and dtype.
using TensorIndexFn = std::function<int64_t(const TensorNode*)>;

uint64_t StructuralHash(const Expr& e, const TensorIndexFn& tensor_index = nullptr);
bool StructuralEqual(const Expr& a, const Expr& b, const TensorIndexFn& tensor_index = nullptr);

// Hash of an op: kind, shape, dtype and, for compute ops, axis extents, reduce
// axes, body (axis variables bound in order, spatial then reduce) and attrs.
// Names and tag excluded.
uint64_t StructuralHashOp(const Tensor& t, const TensorIndexFn& tensor_index);

// The same without the sizes: shapes, axis bounds and integer constants are
// left out (their presence counts, not their value), so ops that differ only
// in their extents (a convolution of other channels, image size, stride or
// padding) hash alike. Float constants, dtypes, the body's structure and the
// attrs still count.
uint64_t StructureHashOp(const Tensor& t, const TensorIndexFn& tensor_index);

// Combines hashes (order-sensitive).
uint64_t HashCombine(uint64_t seed, uint64_t value);

}  // namespace autosched
