#include "lower/lower_state.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "ir/functor.h"
#include "ir/simplify.h"
#include "lower/stmt_functor.h"
#include "schedule/infer_bound.h"
#include "support/error.h"

namespace autosched {

namespace {

ForKind ForKindOf(IteratorAnnotation a) {
  switch (a) {
    case IteratorAnnotation::None: return ForKind::Serial;
    case IteratorAnnotation::Unroll: return ForKind::Unrolled;
    case IteratorAnnotation::Vectorize: return ForKind::Vectorized;
    case IteratorAnnotation::Parallel: return ForKind::Parallel;
    case IteratorAnnotation::VThread: return ForKind::VThread;
    case IteratorAnnotation::BlockIdxX: return ForKind::BlockIdxX;
    case IteratorAnnotation::BlockIdxY: return ForKind::BlockIdxY;
    case IteratorAnnotation::BlockIdxZ: return ForKind::BlockIdxZ;
    case IteratorAnnotation::ThreadIdxX: return ForKind::ThreadIdxX;
    case IteratorAnnotation::ThreadIdxY: return ForKind::ThreadIdxY;
    case IteratorAnnotation::ThreadIdxZ: return ForKind::ThreadIdxZ;
  }
  return ForKind::Serial;
}

Expr Combine(Combiner c, const Expr& acc, const Expr& value) {
  switch (c) {
    case Combiner::Sum: return acc + value;
    case Combiner::Prod: return acc * value;
    case Combiner::Max: return max(acc, value);
    case Combiner::Min: return min(acc, value);
  }
  return acc;
}

// A reduction's source value in its accumulation type. A product of two
// 16-bit floats widens factor by factor, float32(a) * float32(b): the same
// float32 multiply (the 16-bit types compute in float32, and their product is
// exact there), spelled as the dot-product patterns of instruction selection
// expect it.
Expr ToAccumulationType(DataType acc, const Expr& source) {
  const auto* mul = source.as<BinaryNode>();
  if (mul && mul->op == BinOp::Mul && source.dtype().is_16bit_float() && acc.is_float() && acc.bits >= 32) {
    return cast(acc, mul->a) * cast(acc, mul->b);
  }
  return cast(acc, source);
}

Expr AndAll(const std::vector<Expr>& conds) {
  Expr out;
  for (const Expr& c : conds) out = out.defined() ? (out && c) : c;
  return out;
}

// Row strides of a buffer of `shape` (the stage's shape, or the region of a
// stage computed inside another's loops) padded so that stride[axis] % factor
// == offset for each storage_align of the stage, with the last two
// dimensions swapped in storage when the stage is storage_transposed; empty
// when compact.
std::vector<int64_t> AlignedStrides(const Stage& st, const std::vector<int64_t>& shape) {
  if (st.storage_align.empty() && !st.storage_transposed) return {};
  const size_t n = shape.size();
  std::vector<size_t> order(n);  // dimensions from outermost to innermost in storage
  for (size_t d = 0; d < n; ++d) order[d] = d;
  if (st.storage_transposed && n >= 2) std::swap(order[n - 2], order[n - 1]);
  std::vector<int64_t> strides(n, 1);
  int64_t inner_span = 1;  // elements spanned by the dimensions stored inside
  for (size_t k = n; k-- > 0;) {
    const size_t d = order[k];
    strides[d] = inner_span;
    for (const StorageAlign& a : st.storage_align) {
      if (a.axis == static_cast<int>(d) && strides[d] % a.factor != a.offset) {
        strides[d] += (a.offset - strides[d] % a.factor + a.factor) % a.factor;
      }
    }
    inner_span = strides[d] * shape[d];
  }
  return strides;
}

// Elements a buffer of `shape` and `strides` spans (its outermost stored
// dimension's stride times its extent).
int64_t SpannedElements(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  int64_t span = 1;
  for (size_t d = 0; d < shape.size(); ++d) span = std::max(span, strides[d] * shape[d]);
  return span;
}

struct StageBuffer {
  Buffer buffer;
  bool relative = false;  // indexed relative to the stage's region (allocated at its attach point)
  bool allocate = false;  // not an argument
  // pragma double_buffer: the buffer has a leading dimension of 2, indexed
  // by `copy` (the attach loop's variable modulo 2).
  Expr copy;
  // A reduction whose accumulation type differs from its dtype accumulates in
  // `acc` (indexed like `buffer`, allocated around the stage's nest) and
  // stores the rounded result into `buffer` once its reduce loops are done.
  Buffer acc;
};

class StateLowerer {
 public:
  explicit StateLowerer(const State& state)
      : info_(InferBoundDetailed(state)), state_(info_.state.node()), buffers_(state_.stages.size()) {}

  LoweredFunc Run() {
    LoweredFunc f;
    f.name = "default_function";
    MakeBuffers(&f);
    std::vector<Stmt> nests;
    for (size_t s = 0; s < state_.stages.size(); ++s) {
      const Stage& st = state_.stages[s];
      if (!st.is_placeholder() && st.loc == ComputeLocKind::Root)
        nests.push_back(StageNest(static_cast<int>(s)));
    }
    Stmt body = SeqNode::make(nests);
    for (size_t s = state_.stages.size(); s-- > 0;) {
      if (buffers_[s].allocate && !buffers_[s].relative) body = AllocateNode::make(buffers_[s].buffer, body);
    }
    f.body = body;
    return f;
  }

 private:
  void MakeBuffers(LoweredFunc* f) {
    for (const Tensor& t : state_.dag.tensors()) {
      Buffer b = MakeBuffer(t->name, t->dtype, t->shape, MemScope::Global);
      f->args.push_back(b);
      const int op = state_.dag.OpIndex(t.get());
      if (op >= 0) buffers_[op].buffer = b;
    }
    for (size_t s = 0; s < state_.stages.size(); ++s) {
      const Stage& st = state_.stages[s];
      if (buffers_[s].buffer || st.is_placeholder() || st.loc == ComputeLocKind::Inlined) continue;
      StageBuffer& sb = buffers_[s];
      sb.allocate = true;
      if (st.double_buffer) CheckDoubleBuffer(static_cast<int>(s));
      if (st.loc == ComputeLocKind::Root) {
        sb.buffer = MakeBuffer(st.name(), st.op->dtype, st.op->shape, MemScope::Global,
                               AlignedStrides(st, st.op->shape));
      } else {
        sb.relative = true;
        std::vector<int64_t> region = info_.stages[s].region_extent;
        std::vector<int64_t> strides = AlignedStrides(st, region);
        if (st.double_buffer) {
          sb.copy = floormod(info_.stages[st.attach_stage].node_vars[st.attach_node], Expr(2));
          if (!strides.empty()) strides.insert(strides.begin(), SpannedElements(region, strides));
          region.insert(region.begin(), 2);
        }
        sb.buffer = MakeBuffer(st.name(), st.op->dtype, region, st.scope, strides);
      }
    }
    for (size_t s = 0; s < state_.stages.size(); ++s) {
      const Stage& st = state_.stages[s];
      const auto* red = st.op->body.as<ReduceNode>();
      if (!red || red->acc_dtype == st.op->dtype || st.loc == ComputeLocKind::Inlined) continue;
      const Buffer& b = buffers_[s].buffer;
      const MemScope scope = buffers_[s].relative ? st.scope : MemScope::Global;
      buffers_[s].acc = MakeBuffer(st.name() + ".acc", red->acc_dtype, b->shape, scope, b->strides);
    }
  }

  // A double-buffered stage must be computed at a serial loop of its
  // consumer (the next iteration's tile is fetched during this one).
  void CheckDoubleBuffer(int s) const {
    const Stage& st = state_.stages[s];
    AS_CHECK(st.loc == ComputeLocKind::At,
             "pragma double_buffer on '" << st.name()
                                         << "' needs it computed at a loop of its consumer (compute_at)");
    const Stage& at = state_.stages[st.attach_stage];
    const int pos = at.LeafIndex(st.attach_node);
    const IteratorAnnotation a = pos >= 0 ? at.iter(pos).annotation : IteratorAnnotation::None;
    AS_CHECK(pos >= 0 && (a == IteratorAnnotation::None || a == IteratorAnnotation::Unroll),
             "pragma double_buffer on '" << st.name() << "' needs it computed at a serial loop, but loop '"
                                         << at.nodes[st.attach_node].name << "' of '" << at.name() << "' is "
                                         << IteratorAnnotationName(a));
  }

  // Lowers an expression of stage s's root axes: inlines, maps axes to loop
  // variables and tensor loads to buffer loads.
  Expr LowerExpr(int s, const Expr& e) {
    const Stage& st = state_.stages[s];
    const StageBound& b = info_.stages[s];
    VarMap roots;
    const size_t n_axis = st.op->axis.size();
    for (int r = 0; r < st.num_root; ++r) {
      const IterVar& iv = r < static_cast<int>(n_axis) ? st.op->axis[r] : st.op->reduce_axis[r - n_axis];
      roots[iv.var_node()] = b.root_values[r];
    }
    return LowerLoads(Substitute(ExpandInlined(state_, e), roots));
  }

  Expr LowerLoads(const Expr& e) {
    return Rewrite(e, [&](const Expr& x) -> Expr {
      const auto* load = x.as<TensorLoadNode>();
      if (!load) return Expr();
      const int t = state_.dag.OpIndex(load->tensor.get());
      AS_ICHECK(t >= 0 && buffers_[t].buffer);
      std::vector<Expr> indices;
      for (size_t d = 0; d < load->indices.size(); ++d) {
        Expr i = LowerLoads(load->indices[d]);
        if (buffers_[t].relative) i = i - info_.stages[t].region_min[d];
        indices.push_back(i);
      }
      if (buffers_[t].copy.defined()) indices.insert(indices.begin(), buffers_[t].copy);
      if (indices.empty()) indices.push_back(Expr(0));  // a 0-d tensor holds one element
      return BufferLoadNode::make(buffers_[t].buffer, indices);
    });
  }

  std::vector<Expr> StoreIndices(int s) {
    const StageBound& b = info_.stages[s];
    const auto& vals = buffers_[s].relative ? b.local_values : b.root_values;
    const size_t n_axis = state_.stages[s].op->axis.size();
    if (n_axis == 0) return {Expr(0)};  // a 0-d tensor holds one element
    std::vector<Expr> idx(vals.begin(), vals.begin() + n_axis);
    if (buffers_[s].copy.defined()) idx.insert(idx.begin(), buffers_[s].copy);
    return idx;
  }

  // Whether stage s may compute values outside the tensor: a private
  // (register) tile whose every load reads a buffer of a group or a work
  // item (a shared or register tile), each index proven inside its buffer
  // over the whole iteration space. Its stores stay inside its own region;
  // the values it computes outside the tensor are never read, since the
  // stage that copies the tile out keeps its guards. A register tile of a
  // group at the edge of a split that does not divide then needs no branch
  // per multiply-add, and its loads of shared rows stay vectors.
  bool ComputesPastTheEdge(int s) {
    // Asked by each of a stage's guarded nests (update, init, copy): decided once.
    if (past_the_edge_.empty()) past_the_edge_.assign(state_.stages.size(), -1);
    if (past_the_edge_[s] < 0) past_the_edge_[s] = DecidePastTheEdge(s) ? 1 : 0;
    return past_the_edge_[s] == 1;
  }

  bool DecidePastTheEdge(int s) {
    const Stage& st = state_.stages[s];
    if (st.scope != MemScope::Local || !buffers_[s].relative) return false;
    const auto* red = st.op->body.as<ReduceNode>();
    if (red && red->condition.defined()) return false;
    bool in_bounds = true;
    PostOrderVisit(LowerExpr(s, red ? red->source : st.op->body), [&](const Expr& x) {
      const auto* load = x.as<BufferLoadNode>();
      if (!load || !in_bounds) return;
      const Buffer& buffer = load->buffer;
      if (buffer->scope == MemScope::Global || buffer->shape.size() != load->indices.size()) {
        in_bounds = false;
        return;
      }
      for (size_t d = 0; d < load->indices.size(); ++d) {
        const Interval i = EvalInterval(Simplify(load->indices[d], info_.ranges), info_.ranges);
        if (!i.bounded() || i.min < 0 || i.max >= buffer->shape[d]) {
          in_bounds = false;
          return;
        }
      }
    });
    return in_bounds;
  }

  // Conditions under which the root axes are inside the region (and the
  // tensor); only those that bounds cannot prove. A stage that may compute
  // past the edge (ComputesPastTheEdge) keeps only those of its region and
  // of its reduction.
  Expr Guard(int s, bool with_reduce) {
    const Stage& st = state_.stages[s];
    const StageBound& b = info_.stages[s];
    std::vector<Expr> conds;
    const int n_axis = static_cast<int>(st.op->axis.size());
    const bool past_the_edge = ComputesPastTheEdge(s);
    for (int r = 0; r < (with_reduce ? st.num_root : n_axis); ++r) {
      const int64_t ext = r < n_axis ? b.region_extent[r] : st.nodes[r].extent;
      const Interval local = EvalInterval(b.local_values[r], info_.ranges);
      if (!(local.bounded() && local.max < ext))
        conds.push_back(b.local_values[r] < Expr(static_cast<int>(ext)));
      if (r >= n_axis || !b.narrowed || past_the_edge) continue;
      const Interval root = EvalInterval(b.root_values[r], info_.ranges);
      if (!(root.has_lower() && root.min >= 0)) conds.push_back(b.root_values[r] >= Expr(0));
      if (!(root.has_upper() && root.max < st.op->shape[r])) {
        conds.push_back(b.root_values[r] < Expr(static_cast<int>(st.op->shape[r])));
      }
    }
    // Split parts that do not divide their (derived) parent: the parent must
    // stay inside its extent, or a fuse above it would wrap around.
    for (const IterRelation& rel : st.relations) {
      const int parent = rel.parents[0];
      if (rel.kind != IterRelation::Kind::Split || parent < st.num_root) continue;
      if (!with_reduce && st.nodes[parent].kind != IteratorKind::Spatial) continue;
      if (past_the_edge && st.nodes[parent].kind == IteratorKind::Spatial) continue;
      const Interval v = EvalInterval(b.node_values[parent], info_.ranges);
      if (!(v.bounded() && v.max < st.nodes[parent].extent)) {
        conds.push_back(b.node_values[parent] < Expr(static_cast<int>(st.nodes[parent].extent)));
      }
    }
    return AndAll(conds);
  }

  Stmt Guarded(const Expr& cond, Stmt body) {
    return cond.defined() ? IfThenElseNode::make(cond, body) : body;
  }

  // The innermost statement: the value store, or the reduction update.
  Stmt UpdateStore(int s) {
    const Stage& st = state_.stages[s];
    const Buffer& buf = buffers_[s].buffer;
    const std::vector<Expr> idx = StoreIndices(s);
    const auto* red = st.op->body.as<ReduceNode>();
    if (!red) return Guarded(Guard(s, false), BufferStoreNode::make(buf, LowerExpr(s, st.op->body), idx));
    const Buffer& acc = buffers_[s].acc ? buffers_[s].acc : buf;
    Expr value = Combine(red->combiner, BufferLoadNode::make(acc, idx),
                         ToAccumulationType(red->acc_dtype, LowerExpr(s, red->source)));
    Expr cond = Guard(s, true);
    if (red->condition.defined()) {
      Expr c = LowerExpr(s, red->condition);
      cond = cond.defined() ? (cond && c) : c;
    }
    return Guarded(cond, BufferStoreNode::make(acc, value, idx));
  }

  // Loops over the spatial leaves after position `from` (fresh loop
  // variables) around the store `make_store(indices)`, guarded like the
  // stage's stores.
  Stmt SpatialNest(int s, int from, const char* suffix,
                   const std::function<Stmt(const std::vector<Expr>&)>& make_store) {
    const Stage& st = state_.stages[s];
    const StageBound& b = info_.stages[s];
    VarMap fresh;
    std::vector<std::pair<Expr, int>> loops;
    for (int i = from + 1; i < st.num_iters(); ++i) {
      const Iterator& it = st.iter(i);
      if (it.kind != IteratorKind::Spatial) continue;
      Expr v = VarNode::make(it.name + suffix);
      fresh[b.node_vars[st.leaves[i]].as<VarNode>()] = v;
      loops.push_back({v, i});
    }
    std::vector<Expr> idx;
    for (const Expr& i : StoreIndices(s)) idx.push_back(Substitute(i, fresh));
    Expr cond = Guard(s, false);
    Stmt body = Guarded(cond.defined() ? Substitute(cond, fresh) : cond, make_store(idx));
    for (size_t k = loops.size(); k-- > 0;) {
      const Iterator& it = st.iter(loops[k].second);
      body = ForNode::make(loops[k].first, Expr(0), Expr(static_cast<int>(it.extent)),
                           ForKindOf(it.annotation), body);
    }
    return body;
  }

  // The reduction's identity stored before its outermost reduce loop.
  Stmt InitNest(int s, int from) {
    const auto* red = state_.stages[s].op->body.as<ReduceNode>();
    const Buffer& target = buffers_[s].acc ? buffers_[s].acc : buffers_[s].buffer;
    return SpatialNest(s, from, ".init", [&](const std::vector<Expr>& idx) {
      return BufferStoreNode::make(target, red->identity(), idx);
    });
  }

  // With an accumulator: its value, converted once to the stage's dtype,
  // stored after the outermost reduce loop.
  Stmt FinalNest(int s, int from) {
    const Buffer& buf = buffers_[s].buffer;
    const Buffer& acc = buffers_[s].acc;
    return SpatialNest(s, from, ".final", [&](const std::vector<Expr>& idx) {
      return BufferStoreNode::make(buf, cast(buf->dtype, BufferLoadNode::make(acc, idx)), idx);
    });
  }

  // The stages attached at `node` of stage s that are double-buffered
  // (`double_buffered`) or not.
  std::vector<int> Attached(int s, int node, bool double_buffered) const {
    std::vector<int> ids;
    for (size_t p = 0; p < state_.stages.size(); ++p) {
      const Stage& other = state_.stages[p];
      if (other.loc == ComputeLocKind::At && other.attach_stage == s && other.attach_node == node &&
          other.double_buffer == double_buffered)
        ids.push_back(static_cast<int>(p));
    }
    return ids;
  }

  // Stages attached at `node` of stage s (but the double-buffered ones),
  // emitted before `rest`, with their allocations around both.
  Stmt WithAttached(int s, int node, Stmt rest) {
    std::vector<Stmt> seq;
    std::vector<int> attached;
    for (int p : Attached(s, node, false)) {
      seq.push_back(StageNest(p));
      attached.push_back(p);
    }
    if (attached.empty()) return rest;
    seq.push_back(rest);
    Stmt body = SeqNode::make(seq);
    for (size_t k = attached.size(); k-- > 0;) {
      if (buffers_[attached[k]].relative) body = AllocateNode::make(buffers_[attached[k]].buffer, body);
    }
    return body;
  }

  Stmt Loops(int s, int pos, int first_reduce) {
    const Stage& st = state_.stages[s];
    if (pos == st.num_iters()) return UpdateStore(s);
    const Iterator& it = st.iter(pos);
    const int node = st.leaves[pos];
    Stmt inner = WithAttached(s, node, Loops(s, pos + 1, first_reduce));
    const Expr& var = info_.stages[s].node_vars[node];
    const std::vector<int> doubled = Attached(s, node, true);
    std::vector<Stmt> fetch;
    for (int p : doubled) fetch.push_back(StageNest(p));
    if (!doubled.empty() && it.extent > 1) {
      // Iteration k fetches tile k + 1 into the other copy, then reads its
      // own; the printer puts one barrier at the end of each iteration.
      Stmt next = SubstituteStmt(SeqNode::make(fetch), {{var.as<VarNode>(), var + 1}});
      inner = PragmaNode::make(
          "double_buffer", 1,
          SeqNode::make({IfThenElseNode::make(var + 1 < Expr(static_cast<int>(it.extent)), next), inner}));
    }
    Stmt loop =
        ForNode::make(var, Expr(0), Expr(static_cast<int>(it.extent)), ForKindOf(it.annotation), inner);
    if (!doubled.empty()) {
      loop = SeqNode::make({SubstituteStmt(SeqNode::make(fetch), {{var.as<VarNode>(), Expr(0)}}), loop});
      for (size_t k = doubled.size(); k-- > 0;) loop = AllocateNode::make(buffers_[doubled[k]].buffer, loop);
    }
    if (pos != first_reduce) return loop;
    if (buffers_[s].acc) return SeqNode::make({InitNest(s, pos), loop, FinalNest(s, pos)});
    return SeqNode::make({InitNest(s, pos), loop});
  }

  Stmt StageNest(int s) {
    const Stage& st = state_.stages[s];
    int first_reduce = -1;
    if (st.op->body.as<ReduceNode>()) {
      for (int i = 0; i < st.num_iters() && first_reduce < 0; ++i) {
        if (st.iter(i).kind != IteratorKind::Spatial) first_reduce = i;
      }
      AS_ICHECK(first_reduce >= 0);
    }
    Stmt nest = Loops(s, 0, first_reduce);
    if (st.auto_unroll_max_step > 0)
      nest = PragmaNode::make("auto_unroll_max_step", st.auto_unroll_max_step, nest);
    if (buffers_[s].acc) nest = AllocateNode::make(buffers_[s].acc, nest);
    return nest;
  }

  BoundInfo info_;
  const StateNode& state_;
  std::vector<StageBuffer> buffers_;
  std::vector<int8_t> past_the_edge_;  // per stage: -1 not decided, else ComputesPastTheEdge
};

}  // namespace

LoweredFunc LowerStateToStmt(const State& state) { return StateLowerer(state).Run(); }

}  // namespace autosched
