#include "schedule/infer_bound.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_set>

#include "ir/error.h"
#include "ir/functor.h"

namespace autosched {

Expr ExpandInlined(const StateNode& state, const Expr& body) {
  return Rewrite(body, [&](const Expr& e) -> Expr {
    const auto* load = e.as<TensorLoadNode>();
    if (!load) return Expr();
    std::vector<Expr> indices;
    for (const Expr& i : load->indices) indices.push_back(ExpandInlined(state, i));
    const int op = state.dag.OpIndex(load->tensor.get());
    if (op < 0 || state.stages[op].loc != ComputeLocKind::Inlined) {
      return TensorLoadNode::make(Tensor(load->tensor), indices);
    }
    VarMap sub;
    for (size_t d = 0; d < indices.size(); ++d) sub[load->tensor->axis[d].var_node()] = indices[d];
    return ExpandInlined(state, Substitute(load->tensor->body, sub));
  });
}

namespace {

using VarSet = std::unordered_set<const VarNode*>;
// Coefficient of each outer loop variable (the Expr keeps the variable alive).
using Coeffs = std::map<const VarNode*, std::pair<Expr, int64_t>>;

bool UsesAny(const Expr& e, const VarSet& vars) {
  bool found = false;
  PostOrderVisit(e, [&](const Expr& x) {
    if (const auto* v = x.as<VarNode>()) found = found || vars.count(v);
  });
  return found;
}

// Splits scale * e into sum(coeff * outer var) + rest, where rest uses no
// outer variable. False when an outer variable appears non-linearly.
bool SplitLinear(const Expr& e, int64_t scale, const VarSet& outer, Coeffs* coeffs, Expr* rest) {
  if (!UsesAny(e, outer)) {
    Expr term = scale == 1 ? e : e * make_const(e.dtype(), static_cast<double>(scale));
    *rest = rest->defined() ? *rest + term : term;
    return true;
  }
  if (const auto* v = e.as<VarNode>()) {
    auto& entry = (*coeffs)[v];
    entry.first = e;
    entry.second += scale;
    return true;
  }
  const auto* bin = e.as<BinaryNode>();
  if (!bin) return false;
  int64_t c = 0;
  switch (bin->op) {
    case BinOp::Add:
      return SplitLinear(bin->a, scale, outer, coeffs, rest) &&
             SplitLinear(bin->b, scale, outer, coeffs, rest);
    case BinOp::Sub:
      return SplitLinear(bin->a, scale, outer, coeffs, rest) &&
             SplitLinear(bin->b, -scale, outer, coeffs, rest);
    case BinOp::Mul:
      if (GetConstInt(bin->b, &c)) return SplitLinear(bin->a, scale * c, outer, coeffs, rest);
      if (GetConstInt(bin->a, &c)) return SplitLinear(bin->b, scale * c, outer, coeffs, rest);
      return false;
    default: return false;
  }
}

bool SameCoeffs(const Coeffs& a, const Coeffs& b) {
  auto nonzero = [](const Coeffs& c) {
    std::map<const VarNode*, int64_t> out;
    for (const auto& [v, entry] : c) {
      if (entry.second != 0) out[v] = entry.second;
    }
    return out;
  };
  return nonzero(a) == nonzero(b);
}

// One read of one dimension: symbolic part + [lo, hi] (when linear), and the
// interval of the whole index over every loop.
struct Access {
  bool linear = false;
  Coeffs coeffs;
  int64_t lo = 0, hi = 0;
  Interval full;
};

Access AnalyzeIndex(const Expr& index, const VarSet& outer, const VarRanges& ranges) {
  Access a;
  a.full = EvalInterval(index, ranges);
  Expr rest;
  if (SplitLinear(index, 1, outer, &a.coeffs, &rest)) {
    const Interval r = rest.defined() ? EvalInterval(rest, ranges) : Interval::Point(0);
    a.linear = r.bounded();
    a.lo = r.min;
    a.hi = r.max;
  }
  return a;
}

// The region [min, min + extent) of one dimension of size `shape`.
void UnionRegion(const std::vector<Access>& accesses, int64_t shape, Expr* min, int64_t* extent) {
  bool same = !accesses.empty();
  for (const Access& a : accesses) same = same && a.linear && SameCoeffs(a.coeffs, accesses[0].coeffs);
  int64_t lo = 0, hi = shape - 1;
  bool symbolic = false;
  if (same) {
    lo = accesses[0].lo;
    hi = accesses[0].hi;
    for (const Access& a : accesses) {
      lo = std::min(lo, a.lo);
      hi = std::max(hi, a.hi);
    }
    for (const auto& entry : accesses[0].coeffs) symbolic = symbolic || entry.second.second != 0;
  } else if (!accesses.empty()) {
    lo = accesses[0].full.min;
    hi = accesses[0].full.max;
    for (const Access& a : accesses) {
      lo = std::min(lo, a.full.min);
      hi = std::max(hi, a.full.max);
    }
  }
  if (!symbolic) {  // a constant region: clip it to the tensor
    lo = std::max<int64_t>(lo, 0);
    hi = std::min<int64_t>(hi, shape - 1);
    if (hi < lo) hi = lo;
    *min = Expr(static_cast<int>(lo));
    *extent = hi - lo + 1;
    return;
  }
  Expr m;
  for (const auto& [var, entry] : accesses[0].coeffs) {
    if (entry.second == 0) continue;
    Expr term = entry.second == 1 ? entry.first : entry.first * Expr(static_cast<int>(entry.second));
    m = m.defined() ? m + term : term;
  }
  if (lo != 0) m = m + Expr(static_cast<int>(lo));
  *min = m;
  *extent = hi - lo + 1;
}

// Stages that read stage_id, looking through inlined stages.
std::vector<int> Readers(const StateNode& state, int stage_id) {
  std::vector<int> out;
  std::function<void(int)> visit = [&](int s) {
    for (int c : state.dag.access(s).consumers) {
      if (state.stages[c].loc == ComputeLocKind::Inlined) {
        visit(c);
      } else if (std::find(out.begin(), out.end(), c) == out.end()) {
        out.push_back(c);
      }
    }
  };
  visit(stage_id);
  return out;
}

// Loop variables outside (and including) the loop a stage is attached at.
VarSet OuterVars(const StateNode& state, const std::vector<StageBound>& bounds, int stage_id) {
  VarSet outer;
  int x = stage_id;
  while (state.stages[x].loc == ComputeLocKind::At) {
    const Stage& sx = state.stages[x];
    const Stage& target = state.stages[sx.attach_stage];
    const int leaf = target.LeafIndex(sx.attach_node);
    for (int i = 0; i <= leaf; ++i)
      outer.insert(bounds[sx.attach_stage].node_vars[target.leaves[i]].as<VarNode>());
    x = sx.attach_stage;
  }
  return outer;
}

// Root axis variables of a stage's op -> their values in loop variables.
VarMap RootMap(const Stage& st, const StageBound& b) {
  VarMap map;
  const size_t n_axis = st.op->axis.size();
  for (size_t r = 0; r < b.root_values.size(); ++r) {
    const IterVar& iv = r < n_axis ? st.op->axis[r] : st.op->reduce_axis[r - n_axis];
    map[iv.var_node()] = b.root_values[r];
  }
  return map;
}

void NarrowRegion(const StateNode& state, std::vector<Stage>& stages, std::vector<StageBound>& bounds,
                  const VarRanges& ranges, int p) {
  StateNode view{state.init_dag, state.dag, stages, {}};
  const Tensor& op = stages[p].op;
  const VarSet outer = OuterVars(view, bounds, p);
  std::vector<std::vector<Access>> per_dim(op->shape.size());
  for (int reader : Readers(view, p)) {
    const VarMap roots = RootMap(stages[reader], bounds[reader]);
    const Expr body = Substitute(ExpandInlined(view, stages[reader].op->body), roots);
    PostOrderVisit(body, [&](const Expr& e) {
      const auto* load = e.as<TensorLoadNode>();
      if (!load || load->tensor.get() != op.get()) return;
      for (size_t d = 0; d < load->indices.size(); ++d) {
        per_dim[d].push_back(AnalyzeIndex(load->indices[d], outer, ranges));
      }
    });
  }
  StageBound& b = bounds[p];
  for (size_t d = 0; d < op->shape.size(); ++d) {
    UnionRegion(per_dim[d], op->shape[d], &b.region_min[d], &b.region_extent[d]);
    int64_t c = 0;
    b.narrowed =
        b.narrowed || !GetConstInt(b.region_min[d], &c) || c != 0 || b.region_extent[d] != op->shape[d];
    stages[p].nodes[d].extent = b.region_extent[d];
  }
  PropagateExtents(&stages[p]);
}

void CheckKnownExtents(const Stage& st) {
  for (int leaf : st.leaves) {
    AS_CHECK(st.nodes[leaf].extent > 0, "stage '"
                                            << st.name() << "': iterator '" << st.nodes[leaf].name
                                            << "' has an unknown extent (fill the split lengths first)");
  }
}

}  // namespace

BoundInfo InferBoundDetailed(const State& state) {
  std::vector<Stage> stages = state.stages();
  std::vector<StageBound> bounds(stages.size());
  VarRanges ranges;
  for (size_t i = stages.size(); i-- > 0;) {
    Stage& st = stages[i];
    if (st.is_placeholder() || st.loc == ComputeLocKind::Inlined) continue;
    StageBound& b = bounds[i];
    for (size_t d = 0; d < st.op->shape.size(); ++d) {
      b.region_min.push_back(Expr(0));
      b.region_extent.push_back(st.op->shape[d]);
    }
    if (st.loc == ComputeLocKind::At) NarrowRegion(state.node(), stages, bounds, ranges, static_cast<int>(i));
    CheckKnownExtents(st);
    b.node_vars.assign(st.nodes.size(), Expr());
    for (int leaf : st.leaves) {
      b.node_vars[leaf] = VarNode::make(st.nodes[leaf].name);
      ranges[b.node_vars[leaf].as<VarNode>()] = Interval::FromExtent(0, st.nodes[leaf].extent);
    }
    std::vector<Expr> values = b.node_vars;
    DeriveNodeValues(st, &values);
    b.node_values = values;
    for (int r = 0; r < st.num_root; ++r) {
      b.local_values.push_back(values[r]);
      const bool spatial = r < static_cast<int>(st.op->axis.size());
      int64_t c = 0;
      const bool zero_min = !spatial || (GetConstInt(b.region_min[r], &c) && c == 0);
      b.root_values.push_back(zero_min ? values[r] : b.region_min[r] + values[r]);
    }
  }
  return {state.WithStages(std::move(stages)), std::move(bounds), std::move(ranges)};
}

State InferBound(const State& state) { return InferBoundDetailed(state).state; }

}  // namespace autosched
