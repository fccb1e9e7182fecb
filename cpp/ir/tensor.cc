#include "ir/tensor.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/functor.h"
#include "support/error.h"

namespace autosched {

int64_t TensorNode::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Expr Tensor::operator()(std::vector<Expr> indices) const {
  return TensorLoadNode::make(*this, std::move(indices));
}

namespace {

// Index arithmetic (te's index variables, flattened addresses in generated
// code) is 32-bit, so a tensor holds fewer than 2^31 elements.
constexpr int64_t kMaxElements = (int64_t{1} << 31) - 1;

void CheckShape(const std::vector<int64_t>& shape, const std::string& name) {
  int64_t elements = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    AS_CHECK(shape[i] > 0,
             "tensor '" << name << "' has non-positive extent " << shape[i] << " in dimension " << i);
    AS_CHECK(shape[i] <= kMaxElements / elements, "tensor '"
                                                      << name << "' is too large: more than " << kMaxElements
                                                      << " elements (tensor indices are 32-bit integers)");
    elements *= shape[i];
  }
}

// Throws if e contains a Reduce anywhere (used on what must be reduction-free).
void CheckNoReduce(const Expr& e, const std::string& name, const char* where) {
  PostOrderVisit(e, [&](const Expr& x) {
    AS_CHECK(
        x.kind() != ExprKind::Reduce,
        "compute '" << name << "': a reduction may only appear at the top of the body, found one " << where);
  });
}

// The body with its reduce axes moved to start at 0 (see tensor.h).
Expr NormalizeReduceAxes(const Expr& body) {
  const auto* red = body.as<ReduceNode>();
  if (!red) return body;
  VarMap shift;
  std::vector<IterVar> axes;
  for (const IterVar& iv : red->axis) {
    if (iv.min == 0) {
      axes.push_back(iv);
      continue;
    }
    const DataType t = iv.var.dtype();
    Expr fresh = VarNode::make(iv.name(), t);
    shift[iv.var_node()] = fresh + IntImmNode::make(t, iv.min);
    axes.push_back(IterVar{fresh, 0, iv.extent, IterKind::Reduce});
  }
  if (shift.empty()) return body;
  Expr cond = red->condition.defined() ? Substitute(red->condition, shift) : Expr();
  return ReduceNode::make(red->combiner, Substitute(red->source, shift), axes, cond, red->acc_dtype,
                          red->dtype);
}

// The depth of e with every load of a computed tensor counting that tensor's
// depth below it (TensorNode::depth). Recursion is bounded by e's depth.
int NestedDepth(const Expr& e, std::unordered_map<const ExprNode*, int>* memo) {
  auto it = memo->find(e.get());
  if (it != memo->end()) return it->second;
  int below = 0;
  for (const Expr& kid : Children(e)) below = std::max(below, NestedDepth(kid, memo));
  if (const auto* load = e.as<TensorLoadNode>()) below = std::max(below, load->tensor->depth);
  (*memo)[e.get()] = below + 1;
  return below + 1;
}

}  // namespace

Tensor placeholder(const std::vector<int64_t>& shape, DataType dtype, const std::string& name) {
  AS_TYPE_CHECK(IsSupportedScalar(dtype),
                "placeholder '" << name << "' has unsupported dtype " << dtype.str());
  CheckShape(shape, name);
  auto node = std::make_shared<TensorNode>();
  node->name = name;
  node->op_kind = OpKind::Placeholder;
  node->shape = shape;
  node->dtype = dtype;
  return Tensor(node);
}

Tensor compute(const std::string& name, const std::vector<IterVar>& axis, Expr body, const std::string& tag,
               const std::map<std::string, std::string>& attrs) {
  AS_CHECK(body.defined(), "compute '" << name << "' has an undefined body");
  body = NormalizeReduceAxes(body);
  AS_TYPE_CHECK(IsSupportedScalar(body.dtype()),
                "compute '" << name << "' has unsupported dtype " << body.dtype().str());
  auto node = std::make_shared<TensorNode>();
  node->name = name;
  node->op_kind = OpKind::Compute;
  node->dtype = body.dtype();
  node->tag = tag;
  node->attrs = attrs;
  for (const IterVar& iv : axis) {
    AS_CHECK(iv.kind == IterKind::Spatial,
             "compute '" << name << "': axis '" << iv.name() << "' must be a spatial axis");
    AS_CHECK(iv.min == 0, "compute '" << name << "': axis '" << iv.name() << "' must start at 0");
    node->shape.push_back(iv.extent);
  }
  CheckShape(node->shape, name);
  node->axis = axis;

  std::unordered_set<const VarNode*> bound;
  for (const IterVar& iv : axis) bound.insert(iv.var_node());
  if (const auto* red = body.as<ReduceNode>()) {
    CheckNoReduce(red->source, name, "inside another reduction");
    if (red->condition.defined()) CheckNoReduce(red->condition, name, "in a reduction condition");
    node->reduce_axis = red->axis;
    for (const IterVar& iv : red->axis) bound.insert(iv.var_node());
  } else {
    CheckNoReduce(body, name, "below the top");
  }
  PostOrderVisit(body, [&](const Expr& x) {
    if (const auto* v = x.as<VarNode>()) {
      AS_CHECK(bound.count(v), "compute '" << name << "' uses variable '" << v->name
                                           << "', which is neither one of its axes nor a reduce axis");
    }
  });
  std::unordered_map<const ExprNode*, int> memo;
  node->depth = NestedDepth(body, &memo);
  AS_CHECK(
      node->depth <= kMaxExprDepth,
      "compute '" << name << "' is " << node->depth
                  << " levels deep (its expression, with the expressions of the computed tensors it reads "
                     "in place of their loads), more than the limit of "
                  << kMaxExprDepth
                  << "; write long sums as a reduction over a reduce axis, or compute intermediate "
                     "results in fewer steps");
  node->body = std::move(body);
  return Tensor(node);
}

std::vector<Tensor> InputTensors(const Tensor& t) {
  std::vector<Tensor> result;
  if (!t->is_compute()) return result;
  std::unordered_set<const TensorNode*> seen;
  PostOrderVisit(t->body, [&](const Expr& x) {
    if (const auto* load = x.as<TensorLoadNode>()) {
      if (seen.insert(load->tensor.get()).second) result.emplace_back(load->tensor);
    }
  });
  return result;
}

}  // namespace autosched
