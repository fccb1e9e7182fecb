// Tensors and the operations that produce them.
//
// A tensor is the single output of one operation: a placeholder (an input
// supplied by the caller) or a compute operation, whose element at
// (axis[0], ..., axis[n-1]) is `body`. Shapes are static. A body is either an
// expression without reductions, or a single Reduce node at the top.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace autosched {

enum class OpKind : uint8_t { Placeholder, Compute };

struct TensorNode {
  std::string name;
  OpKind op_kind = OpKind::Placeholder;
  std::vector<int64_t> shape;
  DataType dtype;
  // Compute only: one spatial axis per dimension, the reduce axes of the body
  // (empty without reduction), and the body.
  std::vector<IterVar> axis;
  std::vector<IterVar> reduce_axis;
  Expr body;
  std::string tag;  // free-form label, e.g. "conv2d_nhwc", "injective"
  std::map<std::string, std::string> attrs;
  // Compute only: the depth of the body with the body of every computed
  // tensor it reads standing in for the load (placeholders: 0). At most
  // kMaxExprDepth: it bounds what inlining builds and how deep the evaluator
  // recurses through producers.
  int depth = 0;

  bool is_placeholder() const { return op_kind == OpKind::Placeholder; }
  bool is_compute() const { return op_kind == OpKind::Compute; }
  int64_t num_elements() const;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<const TensorNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const TensorNode* operator->() const { return node_.get(); }
  const TensorNode* get() const { return node_.get(); }
  const std::shared_ptr<const TensorNode>& ptr() const { return node_; }
  bool same_as(const Tensor& o) const { return node_ == o.node_; }
  int ndim() const { return static_cast<int>(node_->shape.size()); }

  // Element access; throws when the number of indices differs from the rank
  // or an index is not an integer expression.
  Expr operator()(std::vector<Expr> indices) const;

 private:
  std::shared_ptr<const TensorNode> node_;
};

// An input tensor. Throws for an unsupported dtype or a non-positive extent.
Tensor placeholder(const std::vector<int64_t>& shape, DataType dtype, const std::string& name);

// A compute tensor. `axis` holds one spatial IterVar per dimension of `shape`
// (with matching extents, starting at 0); the reduce axes are taken from the
// body's Reduce node. A reduce axis over [min, min + extent) with min != 0 is
// normalised to a fresh axis over [0, extent), its uses replaced by
// `axis + min`, so that every later stage (schedule, lowering) sees axes that
// start at 0. Throws when a Reduce is not at the top of the body, when the body
// uses a variable that is neither an axis nor a reduce axis of this op, when a
// reduce axis is not used, or when the op's depth passes kMaxExprDepth.
Tensor compute(const std::string& name, const std::vector<IterVar>& axis, Expr body,
               const std::string& tag = "", const std::map<std::string, std::string>& attrs = {});

// Direct producers of a compute tensor (tensors its body loads), in order of
// first use, without duplicates. Empty for placeholders.
std::vector<Tensor> InputTensors(const Tensor& t);

}  // namespace autosched
