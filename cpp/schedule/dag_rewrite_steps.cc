// The steps that rewrite the DAG: cache_read, cache_write, rfactor and pack. Each
// builds new tensors, redirects the loads of every downstream op to them, makes
// a new ComputeDAG and maps the stages onto its ops: untouched ops keep their
// stages (iterators, locations, annotations); new and redefined ops get fresh
// stages.
#include <algorithm>
#include <unordered_map>

#include "ir/functor.h"
#include "schedule/constant_stages.h"
#include "schedule/state.h"
#include "schedule/transform_steps.h"
#include "support/error.h"

namespace autosched {

using nlohmann::json;

namespace {

using TensorMap = std::unordered_map<const TensorNode*, Tensor>;

// e with its loads of mapped tensors redirected.
Expr RedirectExpr(const Expr& e, const TensorMap& map, bool* touched) {
  return Rewrite(e, [&](const Expr& x) -> Expr {
    const auto* load = x.as<TensorLoadNode>();
    if (!load) return Expr();
    std::vector<Expr> indices;
    for (const Expr& i : load->indices) indices.push_back(RedirectExpr(i, map, touched));
    auto it = map.find(load->tensor.get());
    if (it == map.end() || it->second.get() == load->tensor.get()) {
      return TensorLoadNode::make(Tensor(load->tensor), indices);
    }
    *touched = true;
    return it->second(indices);
  });
}

// `base`, or `base` with the first free suffix _1, _2, ... when a stage already
// has that name (a second cache_write of a stage, say), so stage names stay
// unique and steps can keep addressing stages by name.
std::string FreshStageName(const StateNode& s, const std::string& base) {
  auto taken = [&](const std::string& name) {
    return std::any_of(s.stages.begin(), s.stages.end(), [&](const Stage& st) { return st.name() == name; });
  };
  std::string name = base;
  for (int i = 1; taken(name); ++i) name = base + "_" + std::to_string(i);
  return name;
}

// t with its loads of mapped tensors redirected; t itself when none is mapped.
Tensor RedirectLoads(const Tensor& t, const TensorMap& map) {
  if (!t->is_compute()) return t;
  bool touched = false;
  Expr body = RedirectExpr(t->body, map, &touched);
  if (!touched) return t;
  return compute(t->name, t->axis, body, t->tag, t->attrs);
}

// What a DAG rewrite produces: definitions replacing ops, the ops that get
// fresh stages, and memory scopes of new ops.
struct DagRewrite {
  TensorMap replace;                                  // old op -> its new definition
  std::unordered_map<const TensorNode*, bool> fresh;  // new op -> fresh stage
  std::unordered_map<const TensorNode*, MemScope> scope;
  std::vector<Tensor> extra_args;  // placeholders appended to the DAG's arguments
};

// Applies the rewrite: rebuilds downstream ops, makes the new DAG and stages.
void CommitRewrite(StateNode& s, const DagRewrite& rw) {
  TensorMap map;                                         // old op -> new op
  std::unordered_map<const TensorNode*, int> old_index;  // new op -> old stage
  for (size_t i = 0; i < s.dag.ops().size(); ++i) {
    const Tensor& op = s.dag.ops()[i];
    auto it = rw.replace.find(op.get());
    Tensor def = it != rw.replace.end() ? it->second : op;
    Tensor rebuilt = RedirectLoads(def, map);
    map[op.get()] = rebuilt;
    old_index[rebuilt.get()] = static_cast<int>(i);
  }
  std::vector<Tensor> args;
  for (const Tensor& t : s.dag.tensors()) args.push_back(map.at(t.get()));
  args.insert(args.end(), rw.extra_args.begin(), rw.extra_args.end());
  ComputeDAG dag(args);
  std::vector<Stage> stages;
  std::vector<int> new_index(s.stages.size(), -1);
  for (const Tensor& op : dag.ops()) {
    auto it = old_index.find(op.get());
    const bool fresh = rw.fresh.count(op.get()) > 0;
    if (it != old_index.end()) new_index[it->second] = static_cast<int>(stages.size());
    if (it != old_index.end() && !fresh) {
      Stage st = s.stages[it->second];
      st.op = op;
      stages.push_back(st);
    } else {
      Stage st = Stage::FromOp(op);
      if (it != old_index.end()) {  // a redefined op keeps its location
        const Stage& old = s.stages[it->second];
        st.loc = old.loc;
        st.attach_stage = old.attach_stage;
        st.attach_node = old.attach_node;
        st.loc_step = old.loc_step;
      }
      auto sc = rw.scope.find(op.get());
      if (sc != rw.scope.end()) st.scope = sc->second;
      stages.push_back(st);
    }
  }
  for (Stage& st : stages) {
    if (st.loc == ComputeLocKind::At) st.attach_stage = new_index[st.attach_stage];
  }
  s.dag = dag;
  s.stages = std::move(stages);
}

void CheckNothingAttached(const StateNode& s, int stage_id, const char* step) {
  for (const Stage& other : s.stages) {
    AS_CHECK(!(other.loc == ComputeLocKind::At && other.attach_stage == stage_id),
             step << " of '" << s.stages[stage_id].name() << "' needs to come before stage '" << other.name()
                  << "' is attached to it");
  }
}

// Fresh spatial axes like t's.
std::vector<IterVar> FreshAxes(const TensorNode& t) {
  std::vector<IterVar> axes;
  for (const IterVar& iv : t.axis)
    axes.push_back({VarNode::make(iv.name()), 0, iv.extent, IterKind::Spatial});
  return axes;
}

std::vector<Expr> AxisVars(const std::vector<IterVar>& axes) {
  std::vector<Expr> out;
  for (const IterVar& iv : axes) out.push_back(iv.var);
  return out;
}

}  // namespace

// ---- cache_read ----

void CacheReadStep::Apply(StateNode& s) const {
  const Stage& st = s.StageAt(stage_id);
  const MemScope mem = ParseMemScope(scope_name);
  AS_CHECK(!reader_stage_ids.empty(), "cache_read of '" << st.name() << "' needs at least one reader");
  const Tensor& src = st.op;
  auto axes = FreshAxes(*src.get());
  if (src->is_placeholder()) {
    for (size_t d = 0; d < src->shape.size(); ++d) {
      axes.push_back({VarNode::make("ax" + std::to_string(d)), 0, src->shape[d], IterKind::Spatial});
    }
  }
  Tensor cache = compute(FreshStageName(s, src->name + "." + scope_name), axes, src(AxisVars(axes)), "", {});
  DagRewrite rw;
  rw.fresh[cache.get()] = true;
  rw.scope[cache.get()] = mem;
  const TensorMap to_cache{{src.get(), cache}};
  const auto& consumers = s.dag.access(stage_id).consumers;
  for (int r : reader_stage_ids) {
    const Stage& reader = s.StageAt(r);
    AS_CHECK(std::find(consumers.begin(), consumers.end(), r) != consumers.end(),
             "cache_read: stage '" << reader.name() << "' does not read '" << st.name() << "'");
    rw.replace[reader.op.get()] = RedirectLoads(reader.op, to_cache);
  }
  CommitRewrite(s, rw);
}
json CacheReadStep::Args() const { return {stage_id, scope_name, reader_stage_ids}; }
CacheReadStep CacheReadStep::FromArgs(const json& a) {
  AS_CHECK(a.is_array() && a.size() == 3 && a[0].is_number_integer() && a[1].is_string() && a[2].is_array(),
           "record 'CHR' needs [stage, scope, [readers]], got " << a.dump());
  return {a[0].get<int>(), a[1].get<std::string>(), a[2].get<std::vector<int>>()};
}
std::string CacheReadStep::Python(const StateNode& b) const {
  std::string readers = "[";
  for (size_t i = 0; i < reader_stage_ids.size(); ++i) {
    readers += (i ? ", " : "") + PythonStageRef(b, reader_stage_ids[i]);
  }
  return "s.cache_read(" + PythonStageRef(b, stage_id) + ", \"" + scope_name + "\", " + readers + "])";
}

// ---- cache_write ----

void CacheWriteStep::Apply(StateNode& s) const {
  const Stage& st = s.StageAt(stage_id);
  const MemScope mem = ParseMemScope(scope_name);
  AS_CHECK(!st.is_placeholder(), "cache_write of placeholder '" << st.name() << "'");
  AS_CHECK(st.loc != ComputeLocKind::Inlined, "cache_write of inlined stage '" << st.name() << "'");
  CheckNothingAttached(s, stage_id, "cache_write");
  const Tensor& op = st.op;
  Tensor cache =
      compute(FreshStageName(s, op->name + "." + scope_name), op->axis, op->body, op->tag, op->attrs);
  auto axes = FreshAxes(*op.get());
  Tensor copy = compute(op->name, axes, cache(AxisVars(axes)), op->tag, op->attrs);
  DagRewrite rw;
  rw.replace[op.get()] = copy;
  rw.fresh[cache.get()] = true;
  rw.fresh[copy.get()] = true;
  rw.scope[cache.get()] = mem;
  CommitRewrite(s, rw);
}
json CacheWriteStep::Args() const { return {stage_id, scope_name}; }
CacheWriteStep CacheWriteStep::FromArgs(const json& a) {
  AS_CHECK(a.is_array() && a.size() == 2 && a[0].is_number_integer() && a[1].is_string(),
           "record 'CHW' needs [stage, scope], got " << a.dump());
  return {a[0].get<int>(), a[1].get<std::string>()};
}
std::string CacheWriteStep::Python(const StateNode& b) const {
  return "s.cache_write(" + PythonStageRef(b, stage_id) + ", \"" + scope_name + "\")";
}

// ---- rfactor ----

namespace {

// Per node, whether it is connected to `node` through splits and fuses (in
// either direction): the root axes the node derives from, every node derived
// from those, and so on.
std::vector<bool> ConnectedNodes(const Stage& st, int node) {
  std::vector<bool> in(st.nodes.size(), false);
  in[node] = true;
  for (bool changed = true; changed;) {
    changed = false;
    for (const IterRelation& rel : st.relations) {
      bool touches = false;
      for (int n : rel.parents) touches = touches || in[n];
      for (int n : rel.children) touches = touches || in[n];
      if (!touches) continue;
      for (const auto* side : {&rel.parents, &rel.children}) {
        for (int n : *side) {
          changed = changed || !in[n];
          in[n] = true;
        }
      }
    }
  }
  return in;
}

// The rf stage's axes: the op's spatial axes with the factor leaf inserted at
// factor_iter_id, and as reduce axes the other leaves connected to it, then the
// op's reduce axes that are not.
struct RfAxes {
  IterVar factor;
  std::vector<IterVar> reduce;
  VarMap roots;  // connected root reduce axes -> their values in the new axes
  Expr cond;     // the reduction's condition and the range guards of non-dividing splits
};

RfAxes MakeRfAxes(const Stage& st, const ReduceNode& red, int factor_node) {
  const std::vector<bool> connected = ConnectedNodes(st, factor_node);
  RfAxes out;
  std::vector<Expr> values(st.nodes.size());
  for (int leaf : st.leaves) {
    const Iterator& it = st.nodes[leaf];
    if (!connected[leaf]) {
      // Only derived so that DeriveNodeValues can walk the other axes' relations; unused below.
      values[leaf] = VarNode::make(it.name);
      continue;
    }
    AS_CHECK(it.extent > 0, "rfactor needs known extents, '" << it.name << "' has none");
    IterVar iv{VarNode::make(it.name), 0, it.extent,
               leaf == factor_node ? IterKind::Spatial : IterKind::Reduce};
    values[leaf] = iv.var;
    if (leaf == factor_node) {
      out.factor = iv;
    } else {
      out.reduce.push_back(iv);
    }
  }
  DeriveNodeValues(st, &values);
  const size_t n_axis = st.op->axis.size();
  for (size_t r = n_axis; r < static_cast<size_t>(st.num_root); ++r) {
    const IterVar& iv = st.op->reduce_axis[r - n_axis];
    if (!connected[r]) continue;
    out.roots[iv.var_node()] = iv.min == 0 ? values[r] : values[r] + Expr(static_cast<int>(iv.min));
  }
  if (red.condition.defined()) out.cond = Substitute(red.condition, out.roots);
  // Every split on the way that does not divide keeps its parent in range
  // (a root, a fused node, or a part split again); fuses are exact.
  for (const IterRelation& rel : st.relations) {
    const int parent = rel.parents[0];
    if (rel.kind != IterRelation::Kind::Split || !connected[parent]) continue;
    int64_t product = 1;
    for (int child : rel.children) product *= st.nodes[child].extent;
    if (product <= st.nodes[parent].extent) continue;
    Expr in_range = values[parent] < Expr(static_cast<int>(st.nodes[parent].extent));
    out.cond = out.cond.defined() ? (out.cond && in_range) : in_range;
  }
  for (const IterVar& iv : red.axis) {
    if (!out.roots.count(iv.var_node())) out.reduce.push_back(iv);
  }
  return out;
}

}  // namespace

void RfactorStep::Apply(StateNode& s) const {
  const int factor_node = s.LeafAt(stage_id, iter_id);
  const Stage& st = s.stages[stage_id];
  const Tensor& op = st.op;
  const auto* red = op->body.as<ReduceNode>();
  AS_CHECK(red != nullptr, "rfactor of '" << st.name() << "', which has no reduction");
  AS_CHECK(st.nodes[factor_node].kind == IteratorKind::Reduce,
           "rfactor needs a reduce iterator, '" << st.nodes[factor_node].name << "' is spatial");
  AS_CHECK(factor_iter_id >= 0 && factor_iter_id <= static_cast<int>(op->axis.size()),
           "rfactor: factor_iter_id " << factor_iter_id << " must be in [0, " << op->axis.size() << "]");
  CheckNothingAttached(s, stage_id, "rfactor");
  // The factor iterator may derive from several reduce axes (a fuse of them,
  // or a split part of such a fuse): all of them move into the rf stage.
  const RfAxes rfa = MakeRfAxes(st, *red, factor_node);
  const Expr source = Substitute(red->source, rfa.roots);
  Expr rf_body;
  // Partial results stay in the accumulation type; the final reduction rounds once.
  if (!rfa.reduce.empty()) {
    rf_body = ReduceNode::make(red->combiner, source, rfa.reduce, rfa.cond, red->acc_dtype, red->acc_dtype);
  } else {  // nothing left to reduce: one element per factor value, the identity where guarded off
    const Expr partial = source.dtype() == red->acc_dtype ? source : cast(red->acc_dtype, source);
    rf_body = rfa.cond.defined() ? if_then_else(rfa.cond, partial, red->identity()) : partial;
  }
  std::vector<IterVar> rf_axes = op->axis;
  rf_axes.insert(rf_axes.begin() + factor_iter_id, rfa.factor);
  Tensor rf = compute(FreshStageName(s, op->name + ".rf"), rf_axes, rf_body, op->tag, op->attrs);

  auto axes = FreshAxes(*op.get());
  IterVar sum_axis = MakeReduceAxis(0, rfa.factor.extent, rfa.factor.name() + ".v");
  std::vector<Expr> idx = AxisVars(axes);
  idx.insert(idx.begin() + factor_iter_id, sum_axis.var);
  Tensor result =
      compute(op->name, axes,
              ReduceNode::make(red->combiner, rf(idx), {sum_axis}, Expr(), red->acc_dtype, red->dtype),
              op->tag, op->attrs);
  DagRewrite rw;
  rw.replace[op.get()] = result;
  rw.fresh[rf.get()] = true;
  rw.fresh[result.get()] = true;
  CommitRewrite(s, rw);
}
json RfactorStep::Args() const { return {stage_id, iter_id, factor_iter_id}; }
RfactorStep RfactorStep::FromArgs(const json& a) {
  AS_CHECK(a.is_array() && a.size() == 3 && a[0].is_number_integer() && a[1].is_number_integer() &&
               a[2].is_number_integer(),
           "record 'RF' needs [stage, iter, factor_iter], got " << a.dump());
  return {a[0].get<int>(), a[1].get<int>(), a[2].get<int>()};
}
std::string RfactorStep::Python(const StateNode& b) const {
  return "s.rfactor(" + PythonStageRef(b, stage_id) + ", " + std::to_string(iter_id) + ", " +
         std::to_string(factor_iter_id) + ")";
}

// ---- pack ----

namespace {

// e with every load of `src` replaced by the packed layout's load.
Expr PackLoads(const Expr& e, const TensorNode* src, const Tensor& packed, int axis, int64_t lanes,
               bool* touched) {
  return Rewrite(e, [&](const Expr& x) -> Expr {
    const auto* load = x.as<TensorLoadNode>();
    if (!load) return Expr();
    std::vector<Expr> indices;
    for (const Expr& i : load->indices) indices.push_back(PackLoads(i, src, packed, axis, lanes, touched));
    if (load->tensor.get() != src) return TensorLoadNode::make(Tensor(load->tensor), indices);
    *touched = true;
    const Expr x_axis = indices[axis];
    const Expr l = make_const(x_axis.dtype(), static_cast<double>(lanes));
    indices.erase(indices.begin() + axis);
    indices.insert(indices.begin(), floordiv(x_axis, l));
    indices.push_back(floormod(x_axis, l));
    return packed(indices);
  });
}

// The packed copy of src: the block index of `axis` outermost, the other
// axes in order, the lanes innermost, so each block of `lanes` columns is
// contiguous; the tail of the last block clamps to the last element.
Tensor MakePackedTensor(const StateNode& s, const Tensor& src, int axis, int64_t lanes) {
  const int rank = src.ndim();
  const int64_t extent = src->shape[axis];
  auto name = [&](int d) { return src->is_compute() ? src->axis[d].name() : "ax" + std::to_string(d); };
  std::vector<IterVar> axes;  // [block, the other axes..., lane]
  axes.push_back({VarNode::make(name(axis) + ".o"), 0, (extent + lanes - 1) / lanes, IterKind::Spatial});
  for (int d = 0; d < rank; ++d) {
    if (d != axis) axes.push_back({VarNode::make(name(d)), 0, src->shape[d], IterKind::Spatial});
  }
  axes.push_back({VarNode::make(name(axis) + ".v"), 0, lanes, IterKind::Spatial});
  std::vector<Expr> idx(axes.size() - 2);
  for (size_t d = 0; d + 2 < axes.size(); ++d) idx[d] = axes[d + 1].var;
  const DataType it = axes[0].var.dtype();
  Expr pos = axes[0].var * make_const(it, static_cast<double>(lanes)) + axes.back().var;
  if (extent % lanes != 0) pos = min(pos, make_const(it, static_cast<double>(extent - 1)));
  idx.insert(idx.begin() + axis, pos);
  return compute(FreshStageName(s, src->name + ".pack"), axes, src(idx), "", {});
}

}  // namespace

void PackLayoutStep::Apply(StateNode& s) const {
  const Stage& st = s.StageAt(stage_id);
  const Tensor src = st.op;
  AS_CHECK(st.loc != ComputeLocKind::Inlined, "pack of inlined stage '" << st.name() << "'");
  AS_CHECK(axis >= 0 && axis < src.ndim(), "pack of '" << st.name() << "': axis " << axis
                                                       << " is out of range for a " << src.ndim()
                                                       << "-D tensor");
  AS_CHECK(lanes >= 1, "pack of '" << st.name() << "': lanes must be at least 1, got " << lanes);
  AS_CHECK(!reader_stage_ids.empty(), "pack of '" << st.name() << "' needs at least one reader");
  const Tensor packed = MakePackedTensor(s, src, axis, lanes);
  DagRewrite rw;
  rw.fresh[packed.get()] = true;
  const auto& consumers = s.dag.access(stage_id).consumers;
  for (int r : reader_stage_ids) {
    const Stage& reader = s.StageAt(r);
    AS_CHECK(std::find(consumers.begin(), consumers.end(), r) != consumers.end(),
             "pack: stage '" << reader.name() << "' does not read '" << st.name() << "'");
    AS_CHECK(reader.loc != ComputeLocKind::Inlined, "pack: reader '" << reader.name() << "' is inlined");
    bool touched = false;
    const Tensor& op = reader.op;
    Expr body = PackLoads(op->body, src.get(), packed, axis, lanes, &touched);
    rw.replace[op.get()] = compute(op->name, op->axis, body, op->tag, op->attrs);
  }
  CommitRewrite(s, rw);
}
json PackLayoutStep::Args() const { return {stage_id, reader_stage_ids, axis, lanes}; }
PackLayoutStep PackLayoutStep::FromArgs(const json& a) {
  AS_CHECK(a.is_array() && a.size() == 4 && a[0].is_number_integer() && a[1].is_array() &&
               a[2].is_number_integer() && a[3].is_number_integer(),
           "record 'PK' needs [stage, [readers], axis, lanes], got " << a.dump());
  return {a[0].get<int>(), a[1].get<std::vector<int>>(), a[2].get<int>(), a[3].get<int64_t>()};
}
std::string PackLayoutStep::Python(const StateNode& b) const {
  std::string readers = "[";
  for (size_t i = 0; i < reader_stage_ids.size(); ++i) {
    readers += (i ? ", " : "") + PythonStageRef(b, reader_stage_ids[i]);
  }
  return "s.pack(" + PythonStageRef(b, stage_id) + ", " + readers + "], " + std::to_string(axis) + ", " +
         std::to_string(lanes) + ")";
}

// ---- constant stages (deployment) ----

namespace {

// Per op: whether it depends only on the constant arguments (placeholders at
// those positions; computed ops that are not outputs and read only such ops).
std::vector<bool> PureOps(const StateNode& s, const std::vector<int>& constant_args) {
  const auto& args = s.dag.tensors();
  std::vector<bool> pure(s.stages.size(), false);
  for (int a : constant_args) {
    AS_CHECK(a >= 0 && a < static_cast<int>(args.size()),
             "constant argument " << a << " is out of range (the DAG has " << args.size() << " arguments)");
    AS_CHECK(args[a]->is_placeholder(),
             "constant argument " << a << " ('" << args[a]->name << "') is not a placeholder");
    const int op = s.dag.OpIndex(args[a].get());
    if (op >= 0) pure[op] = true;
  }
  for (size_t i = 0; i < s.stages.size(); ++i) {  // ops are in topological order
    if (s.stages[i].is_placeholder() || s.IsOutput(static_cast<int>(i))) continue;
    const auto& producers = s.dag.access(static_cast<int>(i)).producers;
    pure[i] = std::all_of(producers.begin(), producers.end(), [&](int p) { return pure[p]; });
  }
  return pure;
}

// The outermost pure stages: computed, not inlined, and read by a stage that
// is not pure or is inlined (its expression then lives in a reader's loops).
std::vector<int> SplitCandidates(const StateNode& s, const std::vector<bool>& pure) {
  auto in_kernel = [&](int c) { return !pure[c] || s.stages[c].loc == ComputeLocKind::Inlined; };
  std::vector<int> out;
  for (size_t i = 0; i < s.stages.size(); ++i) {
    const Stage& st = s.stages[i];
    if (!pure[i] || st.is_placeholder() || st.loc == ComputeLocKind::Inlined) continue;
    const auto& consumers = s.dag.access(static_cast<int>(i)).consumers;
    if (!std::any_of(consumers.begin(), consumers.end(), in_kernel)) continue;
    // A stage the kernel keeps that is attached to this one would lose its loop.
    const bool holds_kernel_stage = std::any_of(s.stages.begin(), s.stages.end(), [&](const Stage& o) {
      return o.loc == ComputeLocKind::At && o.attach_stage == static_cast<int>(i) &&
             !pure[&o - s.stages.data()];
    });
    if (!holds_kernel_stage) out.push_back(static_cast<int>(i));
  }
  return out;
}

// The constant arguments that op `i` reads (through other ops), as positions.
std::vector<int> ReadArguments(const StateNode& s, int i) {
  std::vector<bool> reached(s.stages.size(), false);
  std::vector<int> todo{i};
  while (!todo.empty()) {
    const int k = todo.back();
    todo.pop_back();
    if (reached[k]) continue;
    reached[k] = true;
    for (int p : s.dag.access(k).producers) todo.push_back(p);
  }
  std::vector<int> out;
  const auto& args = s.dag.tensors();
  for (size_t a = 0; a < args.size(); ++a) {
    const int op = s.dag.OpIndex(args[a].get());
    if (op >= 0 && op != i && reached[op]) out.push_back(static_cast<int>(a));
  }
  return out;
}

}  // namespace

ConstantStageSplit SplitConstantStages(const State& state, const std::vector<int>& constant_args) {
  const StateNode& s = state.node();
  ConstantStageSplit out{state, {}, {}, {}};
  out.stage_ids = SplitCandidates(s, PureOps(s, constant_args));
  if (out.stage_ids.empty()) return out;
  DagRewrite rw;
  for (int i : out.stage_ids) {
    const Tensor& op = s.stages[i].op;
    std::vector<int> reads = ReadArguments(s, i);
    std::vector<Tensor> tensors;
    for (int a : reads) tensors.push_back(s.dag.tensors()[a]);
    tensors.push_back(op);
    out.prepack.emplace_back(tensors);
    out.prepack_args.push_back(std::move(reads));
    Tensor input = placeholder(op->shape, op->dtype, op->name);
    rw.replace[op.get()] = input;
    rw.fresh[input.get()] = true;
    rw.extra_args.push_back(input);
  }
  StateNode node = s;
  CommitRewrite(node, rw);
  for (Stage& st : node.stages) {  // the split stages are arguments now, run by nobody
    if (st.is_placeholder()) st = Stage::FromOp(st.op);
  }
  for (const Stage& st : node.stages) {
    AS_CHECK(st.loc != ComputeLocKind::At ||
                 (st.attach_stage >= 0 && !node.stages[st.attach_stage].is_placeholder()),
             "stage '" << st.name() << "' is attached to a stage computed from constants only");
  }
  out.state = state.WithDagAndStages(node.dag, node.stages);
  return out;
}

}  // namespace autosched
