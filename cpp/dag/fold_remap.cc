#include "dag/fold_remap.h"

#include <optional>

#include "ir/functor.h"
#include "ir/interval.h"
#include "ir/simplify.h"
#include "ir/structural.h"
#include "support/error.h"

namespace autosched {
namespace {

bool IsReduction(const TensorNode* t) { return t->is_compute() && !t->reduce_axis.empty(); }

// `body` with every load of a compute tensor without a reduction replaced by
// that tensor's body at the load's indices, down to placeholders and
// reductions.
Expr InlineElementWise(const Expr& body) {
  return Rewrite(body, [](const Expr& e) -> Expr {
    const auto* load = e.as<TensorLoadNode>();
    if (load == nullptr || !load->tensor->is_compute() || IsReduction(load->tensor.get())) return Expr();
    VarMap map;
    for (size_t k = 0; k < load->tensor->axis.size(); ++k)
      map[load->tensor->axis[k].var_node()] = load->indices[k];
    return InlineElementWise(Substitute(load->tensor->body, map));
  });
}

bool HasFloorDivOrMod(const Expr& e) {
  bool found = false;
  PostOrderVisit(e, [&](const Expr& x) {
    const auto* b = x.as<BinaryNode>();
    if (b != nullptr &&
        (b->op == BinOp::FloorDiv || b->op == BinOp::FloorMod || b->op == BinOp::Div || b->op == BinOp::Mod))
      found = true;
  });
  return found;
}

// The one reduction `body` reads and the indices it reads it at (simplified
// over `ranges`), when every load of a reduction in `body` is of that tensor
// at those indices.
std::optional<std::pair<const TensorLoadNode*, std::vector<Expr>>> SingleReductionRead(
    const Expr& body, const VarRanges& ranges) {
  const TensorLoadNode* first = nullptr;
  std::vector<Expr> indices;
  bool single = true;
  PostOrderVisit(body, [&](const Expr& e) {
    const auto* load = e.as<TensorLoadNode>();
    if (load == nullptr || !IsReduction(load->tensor.get()) || !single) return;
    std::vector<Expr> simplified;
    for (const Expr& index : load->indices) simplified.push_back(Simplify(index, ranges));
    if (first == nullptr) {
      first = load;
      indices = std::move(simplified);
      return;
    }
    if (load->tensor != first->tensor) {
      single = false;
      return;
    }
    for (size_t k = 0; k < indices.size(); ++k) single = single && StructuralEqual(indices[k], simplified[k]);
  });
  if (first == nullptr || !single) return std::nullopt;
  return std::make_pair(first, indices);
}

Tensor Fold(const Tensor& out) {
  const Expr body = InlineElementWise(out->body);
  VarRanges ranges;
  for (const IterVar& iv : out->axis) ranges[iv.var_node()] = Interval::FromExtent(iv.min, iv.extent);
  const auto read = SingleReductionRead(body, ranges);
  if (!read) return out;
  const TensorNode* reduction = read->first->tensor.get();
  const std::vector<Expr>& at = read->second;
  if (out->num_elements() > reduction->num_elements()) return out;  // it would compute elements twice
  bool identity = at.size() == out->axis.size();
  for (size_t k = 0; k < at.size(); ++k) {
    if (HasFloorDivOrMod(at[k])) return out;
    identity = identity && at[k].as<VarNode>() == out->axis[k].var_node();
  }
  if (identity) return out;  // already element-wise: nothing to fold

  // R' over C's domain, with axes of its own.
  std::vector<IterVar> axis;
  VarMap to_new;
  for (const IterVar& iv : out->axis) {
    IterVar fresh = iv;
    fresh.var = VarNode::make(iv.name(), iv.var.dtype());
    to_new[iv.var_node()] = fresh.var;
    axis.push_back(fresh);
  }
  VarMap at_new;
  for (size_t k = 0; k < reduction->axis.size(); ++k) {
    at_new[reduction->axis[k].var_node()] = Substitute(at[k], to_new);
  }
  const Tensor folded =
      compute(reduction->name, axis, Substitute(reduction->body, at_new), reduction->tag, reduction->attrs);
  std::vector<Expr> own;
  for (const IterVar& iv : out->axis) own.push_back(iv.var);
  const Expr folded_at_own = folded(own);
  const Expr new_body = Rewrite(body, [&](const Expr& e) -> Expr {
    const auto* load = e.as<TensorLoadNode>();
    if (load == nullptr) return Expr();
    if (load->tensor.get() == reduction) return folded_at_own;
    std::vector<Expr> indices;  // the inlined remaps' index arithmetic, simplified
    for (const Expr& index : load->indices) indices.push_back(Simplify(index, ranges));
    return TensorLoadNode::make(Tensor(load->tensor), std::move(indices));
  });
  return compute(out->name, out->axis, new_body, out->tag, out->attrs);
}

}  // namespace

Tensor FoldRemapIntoReduction(const Tensor& out) {
  if (!out->is_compute() || IsReduction(out.get())) return out;
  try {
    return Fold(out);
  } catch (const Error&) {  // e.g. the inlined body deeper than kMaxExprDepth: left as it is
    return out;
  }
}

}  // namespace autosched
