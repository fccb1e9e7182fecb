#include "schedule/infer_bound.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <unordered_set>

#include "ir/functor.h"
#include "ir/simplify.h"
#include "support/error.h"

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
    Expr inlined = ExpandInlined(state, Substitute(load->tensor->body, sub));
    // Generated code computes 16-bit floats in float32 and rounds when it
    // stores; an inlined float16 / bfloat16 stage is rounded where it would
    // have been stored, so inlining does not change the values (cast(float16,
    // x) of a float16 x is no node at all, hence the detour through float32).
    if (inlined.dtype().is_16bit_float()) {
      inlined = cast(inlined.dtype(), cast(DataType::Float(32, inlined.dtype().lanes), inlined));
    }
    return inlined;
  });
}

namespace {

using VarSet = std::unordered_set<const VarNode*>;

// Whether e uses a variable in vars (or, with `inside` false, one not in vars).
bool UsesVars(const Expr& e, const VarSet& vars, bool inside) {
  bool found = false;
  PostOrderVisit(e, [&](const Expr& x) {
    if (const auto* v = x.as<VarNode>()) found = found || (vars.count(v) > 0) == inside;
  });
  return found;
}

// A region start must be computable from the loop variables alone: a
// data-dependent index (a load, as in take / gather) cannot start a region.
bool HasLoad(const Expr& e) {
  bool found = false;
  PostOrderVisit(e, [&](const Expr& x) { found = found || x.as<TensorLoadNode>() != nullptr; });
  return found;
}

Expr AddTerm(const Expr& sum, const Expr& e, int64_t scale) {
  Expr term = scale == 1 ? e : e * make_const(e.dtype(), static_cast<double>(scale));
  return sum.defined() ? sum + term : term;
}

// Splits scale * e into a sum of terms over outer variables only (*start, any
// expression: floordiv / floormod of a fused loop included) and terms without
// outer variables (*rest). False when a term mixes both kinds of variables.
bool SplitTerms(const Expr& e, int64_t scale, const VarSet& outer, Expr* start, Expr* rest) {
  if (!UsesVars(e, outer, true)) {
    *rest = AddTerm(*rest, e, scale);
    return true;
  }
  if (!UsesVars(e, outer, false)) {
    if (HasLoad(e)) return false;
    *start = AddTerm(*start, e, scale);
    return true;
  }
  const auto* bin = e.as<BinaryNode>();
  if (!bin) return false;
  int64_t c = 0;
  switch (bin->op) {
    case BinOp::Add:
      return SplitTerms(bin->a, scale, outer, start, rest) && SplitTerms(bin->b, scale, outer, start, rest);
    case BinOp::Sub:
      return SplitTerms(bin->a, scale, outer, start, rest) && SplitTerms(bin->b, -scale, outer, start, rest);
    case BinOp::Mul:
      if (GetConstInt(bin->b, &c)) return SplitTerms(bin->a, scale * c, outer, start, rest);
      if (GetConstInt(bin->a, &c)) return SplitTerms(bin->b, scale * c, outer, start, rest);
      return false;
    default: return false;
  }
}

// One read of one dimension: when separable, index = start + offset with start
// over the loops outside the attach point (undefined: 0) and offset in
// [lo, hi] over the loops inside; `full` bounds the index over every loop.
struct Access {
  bool separable = false;
  Expr start;
  int64_t lo = 0, hi = 0;
  Interval full;
};

bool TrySeparate(const Expr& index, const VarSet& outer, const VarRanges& ranges, Access* a) {
  Expr start, rest;
  if (!SplitTerms(index, 1, outer, &start, &rest)) return false;
  const Interval r = rest.defined() ? EvalInterval(rest, ranges) : Interval::Point(0);
  if (!r.bounded()) return false;
  a->separable = true;
  a->start = start;
  a->lo = r.min;
  a->hi = r.max;
  return true;
}

Access AnalyzeIndex(const Expr& index, const VarSet& outer, const VarRanges& ranges) {
  Access a;
  a.full = EvalInterval(index, ranges);
  // Simplifying with the loop ranges first separates forms such as
  // floordiv(f.0 * 8 + f.1, 4) into f.0 * 2 + floordiv(f.1, 4).
  if (!TrySeparate(Simplify(index, ranges), outer, ranges, &a)) TrySeparate(index, outer, ranges, &a);
  return a;
}

// start(a) - start(base) when it is a constant.
bool ConstantShift(const Access& a, const Access& base, const VarRanges& ranges, int64_t* shift) {
  if (!a.start.defined() && !base.start.defined()) {
    *shift = 0;
    return true;
  }
  const Expr zero(0);
  const Expr diff = (a.start.defined() ? a.start : zero) - (base.start.defined() ? base.start : zero);
  return GetConstInt(Simplify(diff, ranges), shift);
}

// The region [min, min + extent) of one dimension of size `shape`: symbolic
// when every read shares its start up to a constant, else the hull of the
// reads over every loop (a constant region). Both cover every read.
void UnionRegion(const std::vector<Access>& accesses, int64_t shape, const VarRanges& ranges, Expr* min,
                 int64_t* extent) {
  bool shared = !accesses.empty();
  int64_t lo = 0, hi = shape - 1;
  if (shared) {
    lo = std::numeric_limits<int64_t>::max();
    hi = std::numeric_limits<int64_t>::min();
  }
  for (const Access& a : accesses) {
    int64_t shift = 0;
    shared = shared && a.separable && ConstantShift(a, accesses[0], ranges, &shift);
    if (!shared) break;
    lo = std::min(lo, a.lo + shift);
    hi = std::max(hi, a.hi + shift);
  }
  Expr start = shared && accesses[0].start.defined() ? Simplify(accesses[0].start, ranges) : Expr();
  int64_t c = 0;
  if (start.defined() && GetConstInt(start, &c)) {
    lo += c;
    hi += c;
    start = Expr();
  }
  if (!shared && !accesses.empty()) {
    lo = accesses[0].full.min;
    hi = accesses[0].full.max;
    for (const Access& a : accesses) {
      lo = std::min(lo, a.full.min);
      hi = std::max(hi, a.full.max);
    }
  }
  if (!start.defined() || hi - lo + 1 >= shape) {
    // A constant region, or a symbolic one at least as large as the tensor:
    // the reads stay inside the tensor, so clip to it.
    if (start.defined()) {
      lo = 0;
      hi = shape - 1;
    }
    lo = std::max<int64_t>(lo, 0);
    hi = std::min<int64_t>(hi, shape - 1);
    if (hi < lo) hi = lo;
    *min = Expr(static_cast<int>(lo));
    *extent = hi - lo + 1;
    return;
  }
  *min = lo == 0 ? start : start + Expr(static_cast<int>(lo));
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

bool IsThreadOfGroup(IteratorAnnotation a) {
  return a == IteratorAnnotation::ThreadIdxX || a == IteratorAnnotation::ThreadIdxY ||
         a == IteratorAnnotation::ThreadIdxZ || a == IteratorAnnotation::VThread;
}

// Loop variables outside (and including) the loop a stage is attached at.
// A "shared" stage is one buffer for the whole work group: the threadIdx and
// vthread loops around it are left out (relaxed to their whole range, as TVM
// does), so its region is the union of what every work item and virtual
// thread of the group reads and does not depend on either index.
VarSet OuterVars(const StateNode& state, const std::vector<StageBound>& bounds, int stage_id) {
  VarSet outer;
  const bool relax_threads = state.stages[stage_id].scope == MemScope::Shared;
  int x = stage_id;
  while (state.stages[x].loc == ComputeLocKind::At) {
    const Stage& sx = state.stages[x];
    const Stage& target = state.stages[sx.attach_stage];
    const int leaf = target.LeafIndex(sx.attach_node);
    for (int i = 0; i <= leaf; ++i) {
      if (relax_threads && IsThreadOfGroup(target.iter(i).annotation)) continue;
      outer.insert(bounds[sx.attach_stage].node_vars[target.leaves[i]].as<VarNode>());
    }
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
    UnionRegion(per_dim[d], op->shape[d], ranges, &b.region_min[d], &b.region_extent[d]);
    int64_t c = 0;
    b.narrowed =
        b.narrowed || !GetConstInt(b.region_min[d], &c) || c != 0 || b.region_extent[d] != op->shape[d];
    stages[p].nodes[d].extent = b.region_extent[d];
  }
  PropagateExtents(&stages[p], /*tighten=*/b.narrowed);
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
    const int n_axis = static_cast<int>(st.op->axis.size());
    for (int r = 0; r < st.num_root; ++r) {
      b.local_values.push_back(values[r]);
      // Loops count from 0; a root's value adds the region start (spatial)
      // or the reduce axis's lower bound (te.reduce_axis((lo, hi))).
      Expr start = r < n_axis ? b.region_min[r] : Expr(static_cast<int>(st.op->reduce_axis[r - n_axis].min));
      int64_t c = 0;
      const bool zero_min = GetConstInt(start, &c) && c == 0;
      b.root_values.push_back(zero_min ? values[r] : start + values[r]);
    }
  }
  return {state.WithStages(std::move(stages)), std::move(bounds), std::move(ranges)};
}

State InferBound(const State& state) { return InferBoundDetailed(state).state; }

}  // namespace autosched
