// The GPU sketch rules of their own (add-cache-read, cross-thread-reduction)
// and the GPU rule list; the rules shared with CPUs are in sketch_rules.cc.
#include <algorithm>
#include <functional>

#include "schedule/infer_bound.h"
#include "search/rules/gpu/gpu_rules.h"
#include "search/rules/search_util.h"
#include "support/error.h"

namespace autosched {
namespace {

using Condition = SketchRule::Condition;
using Results = std::vector<std::pair<State, int>>;

// The stage a step inserted into `after` that `before` lacks (`after` has
// one stage more; stage names are unique and kept by the steps).
int InsertedStage(const State& before, const State& after) {
  const int n = static_cast<int>(before.stages().size());
  AS_ICHECK(static_cast<int>(after.stages().size()) == n + 1);
  for (int k = 0; k < n; ++k) {
    if (after.stage(k).name() != before.stage(k).name()) return k;
  }
  return n;
}

// The last iterator of the outermost reduce tile of a tiled stage (one
// iterator per reduce axis, right after the spatial levels above it); -1
// when the stage's leaves do not look like that.
int LastOuterReduceIter(const Stage& st) {
  const int num_reduce = static_cast<int>(st.op->reduce_axis.size());
  int first = 0;
  while (first < st.num_iters() && st.iter(first).kind != IteratorKind::Reduce) ++first;
  const int last = first + num_reduce - 1;
  if (num_reduce == 0 || last >= st.num_iters()) return -1;
  for (int i = first; i <= last; ++i) {
    if (st.iter(i).kind != IteratorKind::Reduce) return -1;
  }
  return last;
}

// The last loop of a stage before its first unrolled one, when the stage
// computes with a constant tensor whose indices simplify-compute-with-const-
// tensor unrolled; -1 otherwise.
int LoopBeforeConstUnroll(const State& s, int stage_id) {
  const Stage& st = s.stage(stage_id);
  if (!ReadsConstTensor(st)) return -1;
  for (int i = 0; i < st.num_iters(); ++i) {
    if (st.iter(i).annotation == IteratorAnnotation::Unroll) return i - 1;
  }
  return -1;
}

// ---- add-cache-read ----

// A producer read by one consumer that multi-level tiling tiled is copied
// into a "shared" stage computed at the consumer's outermost reduce tile:
// the work items of a group fetch the tiles they all read together
// (thread-bind splits the copy among them), once per outer reduce step.
// Bound inference gives the shared stage the region of the whole group.
// A register tile copies the shared stage into a "local" stage at the
// consumer's innermost reduce loop (AddRegisterTile).
// The producer is visited again (its consumer is now the shared stage, so
// the other rules, e.g. always-inline for a padding stage, apply).
class AddCacheReadRule : public SketchRule {
 public:
  std::string name() const override { return "add-cache-read"; }
  Condition MeetCondition(const SketchContext&, const State& s, int stage_id) const override {
    const Stage& st = s.stage(stage_id);
    if (st.loc != ComputeLocKind::Root || st.scope == MemScope::Shared) return Condition::Skip;
    const auto& consumers = s.dag().access(stage_id).consumers;
    if (consumers.size() != 1) return Condition::Skip;
    const int c = consumers[0];
    const Stage& consumer = s.stage(c);
    if (!NeedsMultiLevelTiling(s, c) || IsUntouched(consumer) || consumer.scope == MemScope::Shared)
      return Condition::Skip;
    // A consumer whose constant-tensor reads are unrolled keeps them as
    // constants, and its other producer is placed by special-compute-location.
    if (LoopBeforeConstUnroll(s, c) >= 0) return Condition::Skip;
    return LastOuterReduceIter(consumer) >= 0 ? Condition::ApplyAndSkipRest : Condition::Skip;
  }
  Results Apply(const SketchContext&, const State& s, int stage_id) const override {
    const int consumer = s.dag().access(stage_id).consumers[0];
    State r = s.Apply(CacheReadStep{stage_id, "shared", {consumer}});
    const int cache = InsertedStage(s, r);
    const int target = consumer + (consumer >= cache ? 1 : 0);
    AS_CHECK(r.stage(target).name() == s.stage(consumer).name(),
             "cache_read of '" << s.stage(stage_id).name() << "' moved its consumer unexpectedly");
    // The register tile: a "local" copy of the shared stage computed at the
    // consumer's last reduce loop (when that is inside the outer reduce
    // tile), so the consumer's innermost tile reads registers that
    // thread-bind fills with vector loads from shared memory (or inlines
    // again where no vector fits its rows).
    const Stage& st = r.stage(target);
    int last = st.num_iters() - 1;
    while (last >= 0 && st.iter(last).kind != IteratorKind::Reduce) --last;
    const int outer = LastOuterReduceIter(st);
    if (last > outer) {
      const State l = r.Apply(CacheReadStep{cache, "local", {target}});
      const int local = InsertedStage(r, l);
      const int moved = target + (target >= local ? 1 : 0);
      AS_CHECK(l.stage(moved).name() == st.name(),
               "cache_read of '" << r.stage(cache).name() << "' moved its consumer unexpectedly");
      return {{l.ComputeAt(local, moved, last).ComputeAt(cache, moved, outer), stage_id}};
    }
    return {{r.ComputeAt(cache, target, outer), stage_id}};
  }
};

// ---- special-compute-location ----

// A stage without a reduction read by one consumer that computes with a constant tensor in unrolled loops
// (Winograd's data pack reading its input tile): inlined, the stage would be recomputed in every unrolled
// iteration; it is computed at the consumer's last loop before them instead, once per point of the loops
// above.
class SpecialComputeLocationRule : public SketchRule {
 public:
  std::string name() const override { return "special-compute-location"; }
  Condition MeetCondition(const SketchContext&, const State& s, int stage_id) const override {
    const Stage& st = s.stage(stage_id);
    if (!IsFreshRootStage(s, stage_id)) return Condition::Skip;
    const OpAccessInfo& access = s.dag().access(stage_id);
    // Any stage without a reduction could be inlined on a GPU (Ansor inlines
    // them all there); the ones always-inline takes are the strictly
    // inlineable ones.
    if (HasReduceIter(st) || access.is_output || access.producers.empty() || access.consumers.size() != 1)
      return Condition::Skip;
    return LoopBeforeConstUnroll(s, access.consumers[0]) >= 0 ? Condition::ApplyAndSkipRest : Condition::Skip;
  }
  Results Apply(const SketchContext&, const State& s, int stage_id) const override {
    const int consumer = s.dag().access(stage_id).consumers[0];
    return {{s.ComputeAt(stage_id, consumer, LoopBeforeConstUnroll(s, consumer)), stage_id - 1}};
  }
};

// ---- inline-into-shared-fetch ----

// A stage without a reduction whose one consumer is a shared cache-read
// stage (a convolution's padding) is inlined into the fetch: each group
// computes the tile it copies (the padding's condition) as it fetches it,
// instead of a kernel of its own writing the whole padded tensor to global
// memory for the fetch to read back. Ansor inlines every such stage on GPUs;
// here the sketch keeping the stage is kept too (Apply), since the fetch
// then evaluates the padding's condition per element: on an H200 either one
// won a convolution, depending on the run.
class InlineIntoSharedFetchRule : public SketchRule {
 public:
  std::string name() const override { return "inline-into-shared-fetch"; }
  Condition MeetCondition(const SketchContext&, const State& s, int stage_id) const override {
    const Stage& st = s.stage(stage_id);
    if (!IsFreshRootStage(s, stage_id) || HasReduceIter(st)) return Condition::Skip;
    const OpAccessInfo& access = s.dag().access(stage_id);
    if (access.is_output || access.producers.empty() || access.consumers.size() != 1) return Condition::Skip;
    return s.stage(access.consumers[0]).scope == MemScope::Shared ? Condition::Apply : Condition::Skip;
  }
  Results Apply(const SketchContext&, const State& s, int stage_id) const override {
    return {{s.ComputeInline(stage_id), stage_id - 1}};
  }
};

// ---- always-inline (GPU) ----

// On a GPU every stage without a reduction that is no output is inlined into
// its consumers, as Ansor does there: a stage of its own is a kernel launch
// and a round trip through global memory, which cost more than computing an
// element-wise op or an index remap (a reshape, a transpose, a gather) where
// it is read, even twice (softmax's exp, read by its sum and its quotient).
// The stages the CPU rule inlines go the same way; a stage read by a shared
// fetch is left to inline-into-shared-fetch, and one read by a consumer that
// unrolls constant reads to special-compute-location (both come first).
class GpuAlwaysInlineRule : public SketchRule {
 public:
  std::string name() const override { return "always-inline"; }
  Condition MeetCondition(const SketchContext& ctx, const State& s, int stage_id) const override {
    if (!IsFreshRootStage(s, stage_id)) return Condition::Skip;
    if (cpu_rule_->MeetCondition(ctx, s, stage_id) != Condition::Skip) return Condition::ApplyAndSkipRest;
    const Stage& st = s.stage(stage_id);
    const OpAccessInfo& access = s.dag().access(stage_id);
    if (HasReduceIter(st) || !st.op->is_compute() || access.is_output || access.producers.empty() ||
        access.consumers.empty())
      return Condition::Skip;
    const bool read_by_a_fetch = std::any_of(access.consumers.begin(), access.consumers.end(), [&](int c) {
      return s.stage(c).scope == MemScope::Shared && !HasReduceIter(s.stage(c));
    });
    return read_by_a_fetch ? Condition::Skip : Condition::ApplyAndSkipRest;
  }
  Results Apply(const SketchContext&, const State& s, int stage_id) const override {
    return {{s.ComputeInline(stage_id), stage_id - 1}};
  }

 private:
  std::shared_ptr<const SketchRule> cpu_rule_ = MakeAlwaysInlineRule();
};

// ---- cross-thread-reduction ----

// The stage every reader of `stage_id` is computed in, the inlined readers
// looked through: a root stage, or a stage computed inside one (a
// reduction already fused into that root); -1 when the readers lie in
// different root stages or none.
int RootOfReaders(const State& s, int stage_id) {
  int root = -1;
  bool ok = true;
  std::function<void(int)> visit = [&](int current) {
    for (int consumer : s.dag().access(current).consumers) {
      if (s.stage(consumer).loc == ComputeLocKind::Inlined) {
        visit(consumer);
        continue;
      }
      int r = consumer;
      while (s.stage(r).loc == ComputeLocKind::At) r = s.stage(r).attach_stage;
      if (s.stage(r).loc != ComputeLocKind::Root || (root >= 0 && r != root)) ok = false;
      root = r;
    }
  };
  visit(stage_id);
  return ok ? root : -1;
}

// A root stage prepared by FuseIntoRowConsumer: its rows fused into loop 0,
// its row's elements split by the work items of the group (loop 1, bound to
// threadIdx.x, the follow split of the first reduction fused into it).
int RowSplitStep(const State& s, int consumer) {
  const Stage& c = s.stage(consumer);
  if (c.num_iters() != 3 || c.iter(1).annotation != IteratorAnnotation::ThreadIdxX) return -1;
  // The follow split of the consumer's row (found by replaying the steps:
  // stage ids shift as stages are added).
  State r(s.init_dag());
  for (int j = 0; j < static_cast<int>(s.steps().size()); ++j) {
    const auto* f = std::get_if<FollowSplitStep>(&s.steps()[j]);
    if (f != nullptr && r.stage(f->stage_id).name() == c.name()) return f->src_step_id;
    r = r.Apply(s.steps()[j]);
  }
  return -1;
}

// The stage's reduce axes fused and split (the inner part: the work items of
// a group; a new split of provisional length 1, or one following step
// `follow`), the inner part factored into "<name>.rf.shared" in shared
// memory (rfactor, cache_write "shared", the global copy inlined). The
// stage itself stays at `stage_id` + 2; `split_step` (when given) receives
// the index of the split step.
State FactorAcrossWorkItems(const State& s, int stage_id, int follow, int* split_step = nullptr) {
  const Stage& st = s.stage(stage_id);
  const int ns = static_cast<int>(st.op->axis.size());
  State r = FuseRange(s, stage_id, ns, st.num_iters() - ns);
  if (split_step != nullptr) *split_step = static_cast<int>(r.steps().size());
  // Provisional length 1: sampled like an unknown one (IsRfactorSplit).
  r = follow >= 0 ? r.Apply(FollowSplitStep{stage_id, ns, follow, 1}) : r.Split(stage_id, ns, {int64_t{1}});
  r = r.Apply(RfactorStep{stage_id, ns + 1, ns});
  r = r.Apply(CacheWriteStep{stage_id, "shared"});
  // stage_id: <name>.rf.shared, + 1: <name>.rf (a copy), + 2: the stage.
  AS_CHECK(r.stage(stage_id + 2).name() == st.name() && r.stage(stage_id).scope == MemScope::Shared,
           "rfactor and cache_write of '" << st.name() << "' did not place their stages before it");
  return r.ComputeInline(stage_id + 1);
}

// `s` with the stage's spatial loops fused into one, and `inner` (its
// factored partial sums) computed at it.
State ComputeSlicesAt(const State& s, int inner, int stage_id) {
  const int ns = static_cast<int>(s.stage(stage_id).op->axis.size());
  return FuseRange(s, stage_id, 0, ns).ComputeAt(inner, stage_id, 0);
}

// A row reduction whose readers all lie in one stage without a reduction
// that walks the same rows (softmax's quotient, layer norm's output: their
// leading axes are the reduction's rows) is computed inside that stage:
// one group a row computes the sums into shared memory, then the row's
// outputs, in one kernel instead of one per reduction. The stage's rows are
// fused into its loop 0 (bound to blockIdx.x later) and its row's elements
// split by the reduction's work items (threadIdx.x); a second reduction
// fused into it (softmax's maximum, after its sum) follows the same split,
// so every part of the kernel binds the same work items. nullopt where the
// readers or rows do not match, or where a group would need more than one
// row of the sums. `follow`: RowSplitStep of the readers' stage `consumer`
// (RootOfReaders).
std::optional<State> FuseIntoRowConsumer(const State& s, int stage_id, int consumer, int follow) {
  if (s.dag().access(stage_id).is_output || consumer < 0 || consumer == stage_id) return std::nullopt;
  const Stage& c = s.stage(consumer);
  if (HasReduceIter(c) || c.scope != MemScope::Global || !c.op->is_compute()) return std::nullopt;
  const int rows_axes = [&] {  // the consumer's leading axes that hold the reduction's rows
    const int64_t rows = SpatialProduct(s.stage(stage_id));
    int64_t product = 1;
    for (int p = 0; p + 1 < c.num_iters(); ++p) {
      product *= c.iter(p).extent;
      if (product == rows) return p + 1;
    }
    return 0;
  }();
  if (follow < 0 && (!IsUntouched(c) || rows_axes == 0 || SpatialProduct(s.stage(stage_id)) <= 1))
    return std::nullopt;

  int split_step = -1;
  State r = FactorAcrossWorkItems(s, stage_id, follow, &split_step);
  const int slices = stage_id, out = stage_id + 2;
  r = r.Apply(CacheWriteStep{out, "shared"});  // out: <name>.shared, out + 1: the global copy
  AS_CHECK(r.stage(out + 1).name() == s.stage(stage_id).name() && r.stage(out).scope == MemScope::Shared,
           "cache_write of '" << s.stage(stage_id).name() << "' did not place its stage before it");
  r = r.ComputeInline(out + 1);
  r = ComputeSlicesAt(r, slices, out);
  const int target = r.StageIndex(c.name());
  if (follow < 0) {
    const int n = r.stage(target).num_iters();
    r = FuseRange(FuseRange(r, target, rows_axes, n - rows_axes), target, 0, rows_axes);
    r = r.Apply(FollowSplitStep{target, 1, split_step, 1});
    r = r.Reorder(target, {0, 2, 1});
    r = r.Annotate(target, 1, IteratorAnnotation::ThreadIdxX);
  }
  r = r.ComputeAt(out, target, 0);
  // One row of sums a group: any more and the rows do not match.
  const State inferred = InferBound(r);
  const Stage& bounded = inferred.stage(out);
  for (int i = 0; i < bounded.num_iters(); ++i) {
    if (bounded.iter(i).kind == IteratorKind::Spatial && bounded.iter(i).extent != 1) return std::nullopt;
  }
  return r;
}

// A reduction with little spatial work (a row sum, softmax's denominator, a
// layer norm's mean) gives each work item of a group a slice of every row:
// its reduce axes are fused and split (the inner length, sampled later, is
// the number of work items), the inner part is factored into a stage
// "<name>.rf.shared" in shared memory computed per group at the stage's fused
// spatial loop, and the stage sums the slices. thread-bind binds the group
// to blockIdx.x and the factored axis to threadIdx.x. Where the reduction's
// readers allow it, a sketch with it computed inside them comes first
// (FuseIntoRowConsumer). Apply: the sketches without it are kept too.
class CrossThreadReductionRule : public SketchRule {
 public:
  std::string name() const override { return "cross-thread-reduction"; }
  Condition MeetCondition(const SketchContext& ctx, const State& s, int stage_id) const override {
    const Stage& st = s.stage(stage_id);
    if (!IsFreshRootStage(s, stage_id)) return Condition::Skip;
    if (IsCacheWriteStage(s, stage_id) || st.op->axis.empty() || !HasReduceIter(st)) return Condition::Skip;
    const int64_t spatial = SpatialProduct(st), reduce = ReduceProduct(st);
    const HardwareParams& hw = ctx.task.hardware_params;
    // A stage tiled only for its axes of extent 1 (a row sum kept as
    // [rows, 1]) reuses nothing across work items: it counts as untiled.
    const bool tiled = NeedsMultiLevelTiling(s, stage_id) && !s.dag().access(stage_id).tiling_optional;
    const bool little_spatial_work = tiled ? spatial <= hw.max_threads_per_block && spatial < reduce
                                           : reduce > std::max<int64_t>(1, hw.warp_size);
    return little_spatial_work ? Condition::Apply : Condition::Skip;
  }
  Results Apply(const SketchContext&, const State& s, int stage_id) const override {
    Results out;
    const int consumer = RootOfReaders(s, stage_id);
    const int follow = consumer >= 0 ? RowSplitStep(s, consumer) : -1;
    if (std::optional<State> fused = FuseIntoRowConsumer(s, stage_id, consumer, follow)) {
      // A reduction whose reader already holds another one fused in is fused
      // too: the sketch with it in a kernel of its own is one kernel more.
      if (follow >= 0) return {{*fused, stage_id - 1}};
      out.emplace_back(*fused, stage_id - 1);
    }
    const State r = FactorAcrossWorkItems(s, stage_id, -1);
    out.emplace_back(ComputeSlicesAt(r, stage_id, stage_id + 2), stage_id - 1);
    return out;
  }
};

// ---- split-reduction ----

// A matmul-like stage (one reduce axis) whose outputs are too few for full
// tiles to fill the device (a dense layer of 128 rows, 768 columns and a
// long reduction: BERT's second feed-forward layer) has its reduction split
// across groups: the reduce axis is split, its outer part factored (rfactor)
// into the first spatial axis of a new stage "<name>.rf", which multi-level
// tiling tiles like the stage itself (one slice of the reduction per group),
// and the stage then sums the slices. Apply: the sketch without it is kept.
// The number of slices is the split's provisional length (IsRfactorSplit):
// the expert derives it (SplitReductionParts), the search samples it.
// Convolutions keep their reduction whole: split across their input
// channels with the expert's tiles, ResNet-50's build on an H200 took 39 ms
// instead of 4.4 ms (its 56 x 56 convolutions 100x slower).
class SplitReductionRule : public SketchRule {
 public:
  std::string name() const override { return "split-reduction"; }
  Condition MeetCondition(const SketchContext& ctx, const State& s, int stage_id) const override {
    if (!IsFreshRootStage(s, stage_id) || IsCacheWriteStage(s, stage_id)) return Condition::Skip;
    const Stage& st = s.stage(stage_id);
    if (st.op->reduce_axis.size() != 1 || !NeedsMultiLevelTiling(s, stage_id) ||
        s.dag().access(stage_id).tiling_optional)
      return Condition::Skip;
    const int64_t parts =
        SplitReductionParts(ctx.task.hardware_params, SpatialProduct(st), ReduceProduct(st));
    return parts > 1 ? Condition::Apply : Condition::Skip;
  }
  Results Apply(const SketchContext&, const State& s, int stage_id) const override {
    const int ns = static_cast<int>(s.stage(stage_id).op->axis.size());
    State r = s.Split(stage_id, ns, {int64_t{1}});
    r = r.Apply(RfactorStep{stage_id, ns, 0});
    AS_CHECK(r.stage(stage_id + 1).name() == s.stage(stage_id).name(),
             "rfactor of '" << s.stage(stage_id).name() << "' did not place its new stage right before it");
    return {{r, stage_id}};  // the factored stage is visited next (tiled)
  }
};

}  // namespace

std::shared_ptr<const SketchRule> MakeAddCacheReadRule() { return std::make_shared<AddCacheReadRule>(); }
std::shared_ptr<const SketchRule> MakeSpecialComputeLocationRule() {
  return std::make_shared<SpecialComputeLocationRule>();
}
std::shared_ptr<const SketchRule> MakeInlineIntoSharedFetchRule() {
  return std::make_shared<InlineIntoSharedFetchRule>();
}
std::shared_ptr<const SketchRule> MakeCrossThreadReductionRule() {
  return std::make_shared<CrossThreadReductionRule>();
}

bool IsSplitReduction(const std::vector<Step>& steps, int split_step) {
  if (!IsRfactorSplit(steps, split_step)) return false;
  const auto& split = std::get<SplitStep>(steps[split_step]);
  const auto& rf = std::get<RfactorStep>(steps[split_step + 1]);
  return rf.iter_id == split.iter_id && rf.factor_iter_id == 0;
}

int64_t GpuGroupItems(const HardwareParams& hw) {
  const int64_t warp = std::max<int64_t>(1, hw.warp_size);
  const int64_t max_threads = hw.max_threads_per_block > 0 ? hw.max_threads_per_block : kGpuUnknownMaxThreads;
  const int64_t wanted = std::max(kGpuGroupWarps * warp, kGpuMinGroupItems);
  // A multiple of the warp, not above the limit (one warp where the limit is below it).
  return std::max(warp, std::min(wanted, max_threads) / warp * warp);
}

int64_t SplitReductionParts(const HardwareParams& hw, int64_t spatial, int64_t reduce) {
  const int64_t wanted =
      std::max<int64_t>(1, hw.num_cores) * kGpuGroupsPerUnit * GpuGroupItems(hw) * kSplitTileOutputs;
  if (spatial * kSplitIdleShare > wanted) return 1;  // full tiles fill enough of the device
  int64_t parts = 1;
  while (parts < kSplitMaxParts && spatial * parts * 2 <= wanted && reduce % (2 * parts) == 0 &&
         reduce / (2 * parts) >= kSplitMinPartLength)
    parts *= 2;
  return parts;
}

SketchRuleList DefaultGpuSketchRules() {
  return {MakeAddCacheReadRule(),
          MakeSpecialComputeLocationRule(),
          MakeInlineIntoSharedFetchRule(),
          std::make_shared<GpuAlwaysInlineRule>(),
          MakeSimplifyComputeWithConstTensorRule(),
          MakeCrossThreadReductionRule(),
          std::make_shared<SplitReductionRule>(),
          MakeAddCacheWriteRule(/*gpu=*/true),
          MakeMultiLevelTilingWithFusionRule(/*gpu=*/true),
          MakeMultiLevelTilingRule(/*gpu=*/true),
          MakeSkipStageRule()};
}

}  // namespace autosched
