// The CPU sketch rules, one small class each, in the order of the list
// (DefaultCpuSketchRules at the end). Conditions only look at the stage and
// the access facts of the current DAG; applies use the State API, so a step
// the core refuses throws Error, which sketch generation records.
#include "search/rules/sketch_rules.h"

#include <algorithm>
#include <unordered_set>

#include "ir/functor.h"
#include "search/rules/search_util.h"
#include "support/error.h"

namespace autosched {
namespace {

using Condition = SketchRule::Condition;
using Results = std::vector<std::pair<State, int>>;

const std::string& TilingStructure(const SketchContext& ctx, bool gpu) {
  return gpu ? ctx.params.gpu_tiling_structure : ctx.params.cpu_tiling_structure;
}

// ---- always-inline ----

// A stage that only moves elements (its body one load, e.g. a Winograd
// output put back from its tiles) and whose every consumer reads it element by
// element. Inlined, the consumers read the elements where they lie: one pass
// over the tensor less, and its values are never stored twice.
bool IsGatherReadElementWise(const State& s, int stage_id) {
  const ComputeDAG& dag = s.dag();
  const Tensor& op = dag.ops()[stage_id];
  const OpAccessInfo& access = dag.access(stage_id);
  if (!op->is_compute() || !op->reduce_axis.empty() || access.is_output || access.consumers.empty())
    return false;
  if (op->body.as<TensorLoadNode>() == nullptr) return false;
  return std::all_of(access.consumers.begin(), access.consumers.end(),
                     [&](int consumer) { return dag.ElementWiseMatch(stage_id, consumer); });
}

// An element-wise stage with an expensive call (exp, erf, ...) read by a
// single consumer at the same element: inlined, the call still runs once per
// element, and the stage's buffer and loop nest go (a SiLU's sigmoid, a GELU's
// erf after a convolution or dense layer).
bool IsReadOnceElementWise(const State& s, int stage_id) {
  const ComputeDAG& dag = s.dag();
  const Tensor& op = dag.ops()[stage_id];
  const OpAccessInfo& access = dag.access(stage_id);
  if (!op->is_compute() || !op->reduce_axis.empty() || access.is_output || !access.is_simple_access)
    return false;
  return access.consumers.size() == 1 && dag.ElementWiseMatch(stage_id, access.consumers.front());
}

// Whether an expression only moves values: loads, constants and choices among
// them by conditions on the indices (a concat, a slice, a padding), with no
// arithmetic or conversion of the values themselves.
bool MovesValuesOnly(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::TensorLoad:
    case ExprKind::IntImm:
    case ExprKind::FloatImm: return true;
    case ExprKind::Select: {
      const auto* n = e.as<SelectNode>();
      return MovesValuesOnly(n->true_value) && MovesValuesOnly(n->false_value);
    }
    case ExprKind::Call: {
      const auto* n = e.as<CallNode>();
      return n->op == Intrinsic::IfThenElse && n->args.size() == 3 && MovesValuesOnly(n->args[1]) &&
             MovesValuesOnly(n->args[2]);
    }
    default: return false;
  }
}

// A stage that only rearranges elements (a reshape, transpose, concat or slice,
// whose loads index with floordiv and floormod) and whose every consumer reads
// without reducing: inlined, a chain of them (a channel shuffle: concat,
// reshape, transpose, reshape) is one pass that reads each element where it
// lies instead of one copy per stage; the simplifier folds the composed
// indices back to affine ones where the reshapes split or merge whole axes.
// On CPU targets, where it was measured.
bool IsRearrangementIntoInjective(const SketchContext& ctx, const State& s, int stage_id) {
  if (ctx.task.target.kind->is_gpu) return false;
  const ComputeDAG& dag = s.dag();
  const Tensor& op = dag.ops()[stage_id];
  const OpAccessInfo& access = dag.access(stage_id);
  if (!op->is_compute() || !op->reduce_axis.empty() || access.is_output || access.consumers.empty())
    return false;
  if (!MovesValuesOnly(op->body)) return false;
  return std::all_of(access.consumers.begin(), access.consumers.end(), [&](int consumer) {
    const Tensor& c = dag.ops()[consumer];
    return c->is_compute() && c->reduce_axis.empty();
  });
}

class AlwaysInlineRule : public SketchRule {
 public:
  std::string name() const override { return "always-inline"; }
  Condition MeetCondition(const SketchContext& ctx, const State& s, int stage_id) const override {
    if (!IsFreshRootStage(s, stage_id)) return Condition::Skip;
    const bool inline_it = s.dag().access(stage_id).is_strictly_inlineable ||
                           IsGatherReadElementWise(s, stage_id) || IsReadOnceElementWise(s, stage_id) ||
                           IsRearrangementIntoInjective(ctx, s, stage_id);
    return inline_it ? Condition::ApplyAndSkipRest : Condition::Skip;
  }
  Results Apply(const SketchContext&, const State& s, int stage_id) const override {
    return {{s.ComputeInline(stage_id), stage_id - 1}};
  }
};

// ---- simplify-compute-with-const-tensor ----

// A constant tensor: a compute op that reads no tensor (a table of constants
// written as an expression of its indices, e.g. a Winograd matrix).
bool IsConstTensor(const Tensor& t) { return t->is_compute() && InputTensors(t).empty(); }

// Per root node of the stage: whether it indexes a constant tensor.
std::vector<bool> ConstIndexedNodes(const Stage& st) {
  std::vector<const VarNode*> roots;  // the root nodes' variables: axes, then reduce axes
  for (const IterVar& iv : st.op->axis) roots.push_back(iv.var_node());
  for (const IterVar& iv : st.op->reduce_axis) roots.push_back(iv.var_node());
  std::vector<bool> marked(roots.size(), false);
  PostOrderVisit(st.op->body, [&](const Expr& x) {
    const auto* load = x.as<TensorLoadNode>();
    if (load == nullptr || !IsConstTensor(Tensor(load->tensor))) return;
    for (const Expr& idx : load->indices) {
      auto it = std::find(roots.begin(), roots.end(), idx.as<VarNode>());
      if (idx.as<VarNode>() != nullptr && it != roots.end()) marked[it - roots.begin()] = true;
    }
  });
  return marked;
}

}  // namespace

bool ReadsConstTensor(const Stage& st) {
  const std::vector<bool> marked = ConstIndexedNodes(st);
  return std::find(marked.begin(), marked.end(), true) != marked.end();
}

namespace {

// The iterators that index constant tensors are unrolled innermost, so that
// the loads fold to constants; the other spatial iterators are tiled in 3.
class SimplifyComputeWithConstTensorRule : public SketchRule {
 public:
  std::string name() const override { return "simplify-compute-with-const-tensor"; }
  Condition MeetCondition(const SketchContext& ctx, const State& s, int stage_id) const override {
    if (!IsFreshRootStage(s, stage_id)) return Condition::Skip;
    const Stage& st = s.stage(stage_id);
    const std::vector<bool> marked = ConstIndexedNodes(st);
    int64_t product = 1;
    bool any = false;
    for (int n = 0; n < st.num_root; ++n) {
      if (!marked[n]) continue;
      any = true;
      product *= st.nodes[n].extent;
    }
    return any && product <= ctx.params.max_const_unroll ? Condition::ApplyAndSkipRest : Condition::Skip;
  }
  Results Apply(const SketchContext& ctx, const State& s, int stage_id) const override {
    const Stage& st = s.stage(stage_id);
    const std::vector<bool> marked = ConstIndexedNodes(st);
    State out = s;
    std::vector<int> levels[3], reduce, unrolled;  // positions after the splits
    int pos = 0, last_spatial = -1;
    for (int n = 0; n < st.num_root; ++n) {
      if (marked[n]) {
        unrolled.push_back(pos++);
      } else if (st.nodes[n].kind == IteratorKind::Reduce) {
        reduce.push_back(pos++);
      } else {
        out = out.Split(stage_id, pos, {std::nullopt, std::nullopt});
        for (auto& level : levels) level.push_back(pos++);
        last_spatial = n;
      }
    }
    // On a CPU, the inner part of the last axis (contiguous in memory) goes
    // inside the unrolled loops when no constant tensor indexes that axis,
    // so that the vectorize rule finds it innermost: every unrolled step of
    // the transform is then one vector operation over it (Winograd's
    // transforms of channel-blocked data vectorize over the channel lanes).
    std::vector<int> innermost;
    const int last_axis = static_cast<int>(st.op->axis.size()) - 1;
    if (!ctx.task.target.kind->is_gpu && last_spatial >= 0 && last_spatial == last_axis &&
        !levels[2].empty()) {
      innermost.push_back(levels[2].back());
      levels[2].pop_back();
    }
    std::vector<int> order = levels[0];
    for (const auto* part : {&levels[1], &reduce, &levels[2], &unrolled, &innermost})
      order.insert(order.end(), part->begin(), part->end());
    if (!std::is_sorted(order.begin(), order.end())) out = out.Reorder(stage_id, order);
    const int first_unrolled = static_cast<int>(order.size() - unrolled.size() - innermost.size());
    for (int i = first_unrolled; i < first_unrolled + static_cast<int>(unrolled.size()); ++i) {
      out = out.Annotate(stage_id, i, IteratorAnnotation::Unroll);
    }
    return {{out, stage_id - 1}};
  }
};

// ---- add-rfactor ----

// A reduction with little parallelism across its spatial axes is factored:
// its reduce axes are fused into one, which is split, and one part becomes a
// spatial axis of a new stage "<name>.rf" that the original stage then
// reduces. Two sketches: the outer part factored (parallel over it) and the
// inner part factored (placed innermost, vectorizable). The split length is
// provisional (see IsRfactorSplit).
class AddRfactorRule : public SketchRule {
 public:
  std::string name() const override { return "add-rfactor"; }
  Condition MeetCondition(const SketchContext& ctx, const State& s, int stage_id) const override {
    if (!IsFreshRootStage(s, stage_id) || IsCacheWriteStage(s, stage_id)) return Condition::Skip;
    const Stage& st = s.stage(stage_id);
    const int64_t spatial = SpatialProduct(st), reduce = ReduceProduct(st);
    const int64_t cores = std::max<int64_t>(1, ctx.task.hardware_params.num_cores);
    if (!HasReduceIter(st) || reduce <= 1) return Condition::Skip;
    const bool little_parallelism =
        NeedsMultiLevelTiling(s, stage_id)
            ? spatial <= reduce && spatial <= ctx.params.parallel_iterations_per_core * cores
            : spatial < cores;
    return little_parallelism ? Condition::Apply : Condition::Skip;
  }
  Results Apply(const SketchContext&, const State& s, int stage_id) const override {
    const Stage& st = s.stage(stage_id);
    const int num_spatial = static_cast<int>(st.op->axis.size());
    // An untouched stage lists its spatial axes, then its reduce axes.
    const State fused = FuseRange(s, stage_id, num_spatial, st.num_iters() - num_spatial);
    const State split = fused.Split(stage_id, num_spatial, {int64_t{1}});
    Results out;
    for (int part : {num_spatial, num_spatial + 1}) {
      State r = split.Apply(RfactorStep{stage_id, part, num_spatial});
      AS_CHECK(r.stage(stage_id + 1).name() == st.name() && r.stage(stage_id).name().rfind(st.name(), 0) == 0,
               "rfactor of '" << st.name() << "' did not place its new stage right before it");
      if (part == num_spatial + 1) {  // the factored axis innermost
        std::vector<int> order;
        for (int i = 0; i < r.stage(stage_id).num_iters(); ++i) {
          if (i != num_spatial) order.push_back(i);
        }
        order.push_back(num_spatial);
        r = r.Reorder(stage_id, order);
      }
      out.emplace_back(r, stage_id - 1);
    }
    return out;
  }
};

// ---- add-cache-write ----

// A stage worth multi-level tiling computes into a "<name>.local" stage,
// which the next rule fuses into the copy. CPU: Apply (not ApplyAndSkipRest):
// the sketches without the cache (tiled, or fused into an element-wise
// consumer) are kept too, so a matmul with a bias gets both kinds. GPU (as in
// Ansor): only for a stage without an element-wise consumer to fuse into,
// and ApplyAndSkipRest (the accumulator then lives in each work item's
// private memory).
class AddCacheWriteRule : public SketchRule {
 public:
  explicit AddCacheWriteRule(bool gpu) : gpu_(gpu) {}
  std::string name() const override { return "add-cache-write"; }
  Condition MeetCondition(const SketchContext&, const State& s, int stage_id) const override {
    if (!IsFreshRootStage(s, stage_id) || !NeedsMultiLevelTiling(s, stage_id)) return Condition::Skip;
    if (IsCacheWriteStage(s, stage_id)) return Condition::Skip;
    if (!gpu_) return Condition::Apply;
    return ElementwiseFusionTarget(s, stage_id) < 0 ? Condition::ApplyAndSkipRest : Condition::Skip;
  }
  Results Apply(const SketchContext&, const State& s, int stage_id) const override {
    const std::string name = s.stage(stage_id).name();
    State r = s.Apply(CacheWriteStep{stage_id, "local"});
    AS_CHECK(IsCacheWriteStage(r, stage_id) && r.stage(stage_id + 1).name() == name,
             "cache_write of '" << name << "' did not place its new stage right before it");
    return {{r, stage_id}};  // the ".local" stage is visited next
  }

 private:
  bool gpu_;
};

// ---- multi-level-tiling-with-fusion ----

// Multi-level tiling, then the element-wise consumer tiled like the outer
// levels and the stage computed inside them: one sketch per fusion level.
// CPU: after the outermost spatial level, after the second; GPU: after the
// third (blockIdx, vthread, threadIdx), with no unfused sketch.
class MultiLevelTilingWithFusionRule : public SketchRule {
 public:
  explicit MultiLevelTilingWithFusionRule(bool gpu) : gpu_(gpu) {}
  std::string name() const override { return "multi-level-tiling-with-fusion"; }
  Condition MeetCondition(const SketchContext&, const State& s, int stage_id) const override {
    if (!IsFreshRootStage(s, stage_id) || !NeedsMultiLevelTiling(s, stage_id)) return Condition::Skip;
    if (ElementwiseFusionTarget(s, stage_id) < 0) return Condition::Skip;
    // A cache-write stage exists to be fused: no other sketch for it.
    return IsCacheWriteStage(s, stage_id) || gpu_ ? Condition::ApplyAndSkipRest : Condition::Apply;
  }
  Results Apply(const SketchContext& ctx, const State& s, int stage_id) const override {
    const int target = ElementwiseFusionTarget(s, stage_id);
    const std::string& structure = TilingStructure(ctx, gpu_);
    const int n_space = static_cast<int>(std::count(structure.begin(), structure.end(), 'S'));
    const TiledStage tiled = MultiLevelTile(s, stage_id, structure);
    const int first = gpu_ ? std::min(3, n_space - 1) : 1, last = gpu_ ? first : std::min(2, n_space - 1);
    Results out;
    for (int level = first; level <= last; ++level) {
      auto [fused, attach] = FollowTiling(tiled.state, target, tiled.spatial_split_steps, level);
      out.emplace_back(fused.ComputeAt(stage_id, target, attach), stage_id - 1);
    }
    return out;
  }

 private:
  bool gpu_;
};

// ---- multi-level-tiling ----

class MultiLevelTilingRule : public SketchRule {
 public:
  explicit MultiLevelTilingRule(bool gpu) : gpu_(gpu) {}
  std::string name() const override { return "multi-level-tiling"; }
  Condition MeetCondition(const SketchContext&, const State& s, int stage_id) const override {
    if (!IsFreshRootStage(s, stage_id) || !NeedsMultiLevelTiling(s, stage_id)) return Condition::Skip;
    // CPU: a stage whose reuse is only across axes of extent 1 keeps its
    // plain loop nest as a sketch too (Apply lets the later rules see it).
    return !gpu_ && s.dag().access(stage_id).tiling_optional ? Condition::Apply : Condition::ApplyAndSkipRest;
  }
  Results Apply(const SketchContext& ctx, const State& s, int stage_id) const override {
    return {{MultiLevelTile(s, stage_id, TilingStructure(ctx, gpu_)).state, stage_id - 1}};
  }

 private:
  bool gpu_;
};

// ---- skip-stage ----

class SkipStageRule : public SketchRule {
 public:
  std::string name() const override { return "skip-stage"; }
  Condition MeetCondition(const SketchContext&, const State&, int) const override { return Condition::Apply; }
  Results Apply(const SketchContext&, const State& s, int stage_id) const override {
    return {{s, stage_id - 1}};
  }
};

}  // namespace

std::shared_ptr<const SketchRule> MakeAlwaysInlineRule() { return std::make_shared<AlwaysInlineRule>(); }
std::shared_ptr<const SketchRule> MakeSimplifyComputeWithConstTensorRule() {
  return std::make_shared<SimplifyComputeWithConstTensorRule>();
}
std::shared_ptr<const SketchRule> MakeAddRfactorRule() { return std::make_shared<AddRfactorRule>(); }
std::shared_ptr<const SketchRule> MakeAddCacheWriteRule(bool gpu) {
  return std::make_shared<AddCacheWriteRule>(gpu);
}
std::shared_ptr<const SketchRule> MakeMultiLevelTilingWithFusionRule(bool gpu) {
  return std::make_shared<MultiLevelTilingWithFusionRule>(gpu);
}
std::shared_ptr<const SketchRule> MakeMultiLevelTilingRule(bool gpu) {
  return std::make_shared<MultiLevelTilingRule>(gpu);
}
std::shared_ptr<const SketchRule> MakeSkipStageRule() { return std::make_shared<SkipStageRule>(); }

SketchRuleList DefaultCpuSketchRules() {
  // One rule per line, in order.
  // clang-format off
  return {MakeAlwaysInlineRule(),
          MakeWinogradRowFusionRule(),
          MakeRowFusionRule(),
          MakeSimplifyComputeWithConstTensorRule(),
          MakeInlineWindowPaddingRule(),
          MakeAddRfactorRule(),
          MakePackOperandRule(),
          MakePackConvLayoutRule(),
          MakeAddCacheWriteRule(),
          MakeMultiLevelTilingWithFusionRule(),
          MakeMultiLevelTilingRule(),
          MakePaddingAtTileRule(),
          MakeWindowVectorizeRule(),
          MakeSkipStageRule()};
  // clang-format on
}

const std::vector<int64_t>& AutoUnrollCandidates(const SketchContext& ctx) {
  return ctx.task.target.kind->is_gpu ? ctx.params.gpu_auto_unroll_candidates
                                      : ctx.params.auto_unroll_candidates;
}

bool IsRfactorSplit(const std::vector<Step>& steps, int step_id) {
  if (step_id < 0 || step_id + 1 >= static_cast<int>(steps.size())) return false;
  const auto* split = std::get_if<SplitStep>(&steps[step_id]);
  const auto* rf = std::get_if<RfactorStep>(&steps[step_id + 1]);
  return split != nullptr && rf != nullptr && rf->stage_id == split->stage_id;
}

}  // namespace autosched
