// The GPU init rule thread-bind and the GPU init and mutation lists (the
// check of GPU states against code generation and the device's limits is in
// rules/gpu_state.cc).
#include <algorithm>
#include <iterator>

#include "schedule/infer_bound.h"
#include "search/rules/gpu/gpu_rules.h"
#include "search/rules/search_util.h"
#include "support/error.h"

namespace autosched {
namespace {

bool HasAttachedAt(const State& s, int stage_id, int node) {
  for (const Stage& st : s.stages()) {
    if (st.loc == ComputeLocKind::At && st.attach_stage == stage_id && st.attach_node == node) return true;
  }
  return false;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A stage tiled by the GPU rules: its first three spatial levels (one
// iterator per axis each, "i.0 j.0 i.1 j.1 i.2 j.2") still unannotated.
bool IsGpuTiled(const Stage& st) {
  const int ns = static_cast<int>(st.op->axis.size());
  if (ns == 0 || st.relations.empty() || st.num_iters() < 3 * ns) return false;
  for (int k = 0; k < 3 * ns; ++k) {
    const Iterator& it = st.iter(k);
    if (it.kind != IteratorKind::Spatial || it.annotation != IteratorAnnotation::None ||
        !EndsWith(it.name, "." + std::to_string(k / ns)))
      return false;
  }
  return true;
}

// The split steps that tiled the spatial axes of the stage named `name`
// (found by replaying the steps: stage ids shift when stages are added).
std::vector<int> SpatialTileSplits(const State& s, const std::string& name) {
  std::vector<int> ids;
  State r(s.init_dag());
  for (int j = 0; j < static_cast<int>(s.steps().size()); ++j) {
    const auto* sp = std::get_if<SplitStep>(&s.steps()[j]);
    if (sp != nullptr && sp->lengths.size() >= 2 && r.stage(sp->stage_id).name() == name &&
        r.stage(sp->stage_id).iter(sp->iter_id).kind == IteratorKind::Spatial)
      ids.push_back(j);
    r = r.Apply(s.steps()[j]);
  }
  return ids;
}

int64_t SmallestPrimeFactor(int64_t n) {
  for (int64_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) return d;
  }
  return n;
}

// `s` with the work items of each GPU-tiled stage within the task's
// max_threads_per_block (learned lower from the device's refusals,
// SketchPolicy::RecordMeasured): while their product exceeds it, a prime
// factor of a level-2 length drawn at random moves to the blockIdx level (the
// part the lengths leave). Sampling then proposes no group the device refuses.
State FitTileThreads(const SketchContext& ctx, const State& s, std::mt19937* rng) {
  const int64_t limit = ctx.task.hardware_params.max_threads_per_block;
  if (limit <= 0) return s;
  std::vector<Step> steps = s.steps();
  bool changed = false;
  for (const auto& [stage, ids] : GpuTileSplits(ctx, s)) {
    while (TileThreads(steps, ids) > limit) {
      std::vector<int> divisible;
      for (int id : ids) {
        if (std::get<SplitStep>(steps[id]).lengths[kThreadTileLevel - 1].value_or(1) > 1)
          divisible.push_back(id);
      }
      if (divisible.empty()) break;
      const int id = divisible[RandomIndex(rng, static_cast<int64_t>(divisible.size()))];
      std::optional<int64_t>& length = std::get<SplitStep>(steps[id]).lengths[kThreadTileLevel - 1];
      *length /= SmallestPrimeFactor(*length);
      changed = true;
    }
  }
  return changed ? State::FromSteps(s.init_dag(), steps) : s;
}

// A width among kFetchWidths (from min_width on) dividing `inner`, the
// innermost extent of the region a copy covers (so that no vector crosses a
// row), uniformly; 1 when none does.
// The widest such width instead when `widest`.
int64_t SampleWidthDividing(int64_t inner, std::mt19937* rng, bool widest, int64_t min_width = 1) {
  std::vector<int64_t> widths;
  for (int64_t w : kFetchWidths) {
    if (w >= min_width && inner > 0 && inner % w == 0) widths.push_back(w);
  }
  if (widths.empty()) return 1;
  return widest ? widths.back() : widths[RandomIndex(rng, static_cast<int64_t>(widths.size()))];
}

int64_t SampleFetchWidth(const Stage& bounded, std::mt19937* rng, bool widest, int64_t min_width = 1) {
  const int64_t inner = bounded.num_iters() > 0 ? bounded.iter(bounded.num_iters() - 1).extent : 1;
  return SampleWidthDividing(inner, rng, widest, min_width);
}

State VectorizeFusedCopy(const State& s, int id, int64_t width) {
  State r = FuseRange(s, id, 0, s.stage(id).num_iters());
  r = r.Split(id, 0, {width});
  r = r.Annotate(id, 0, IteratorAnnotation::Unroll);
  return r.Annotate(id, 1, IteratorAnnotation::Vectorize);
}

// A register tile whose rows take a vector of 2 or 4 lanes: its loops fused,
// split by a sampled width among those dividing its rows (vectorized), the
// rest unrolled. One whose rows are a single element (a column of the shared
// tile, e.g. 8 rows of A at one reduction step) but whose columns take a
// vector: with probability 1/2, the shared stage is stored transposed
// (pragma storage_transpose) and the tile copies along its columns the same
// way. Any other: inlined again, so the consumer reads shared memory directly.
State BindRegisterTile(const State& s, const Stage& bounded, int id, const ThreadBindChoices& choices,
                       std::mt19937* rng) {
  const int64_t width = SampleFetchWidth(bounded, rng, choices.widest_vectors, /*min_width=*/2);
  if (width >= 2) return VectorizeFusedCopy(s, id, width);
  const Stage& st = s.stage(id);
  const int n = st.num_iters();
  const int producer = s.dag().access(id).producers[0];
  if (n < 2 || bounded.num_iters() != n || s.stage(producer).storage_transposed ||
      bounded.iter(n - 1).extent != 1)
    return s.ComputeInline(id);
  const int64_t column_width =
      SampleWidthDividing(bounded.iter(n - 2).extent, rng, choices.widest_vectors, /*min_width=*/2);
  if (column_width < 2) return s.ComputeInline(id);
  if (!choices.transpose.value_or(RandomIndex(rng, 2) == 1)) return s.ComputeInline(id);
  std::vector<int> order(n);
  for (int k = 0; k < n; ++k) order[k] = k;
  std::swap(order[n - 2], order[n - 1]);
  State r = s.Apply(PragmaStep{producer, 0, "storage_transpose"});
  return VectorizeFusedCopy(r.Reorder(id, order), id, column_width);
}

// A row padding among kRowPadOffsets (0: compact), uniformly: of the
// dimension stored second innermost (the last one when the stage is
// storage_transposed).
State PadAgainstBankConflicts(const State& s, int id, const ThreadBindChoices& choices, std::mt19937* rng) {
  const Stage& st = s.stage(id);
  const int ndim = static_cast<int>(st.op->axis.size());
  const int64_t offset = choices.pad_offset.value_or(
      kRowPadOffsets[RandomIndex(rng, static_cast<int64_t>(std::size(kRowPadOffsets)))]);
  if (ndim < 2 || offset == 0 || st.num_iters() != ndim || st.leaves[ndim - 2] != ndim - 2) return s;
  const int row_axis = st.storage_transposed ? ndim - 1 : ndim - 2;
  return s.Apply(StorageAlignStep{id, row_axis, kSharedBanks, offset});
}

// ---- thread-bind ----

// Tiled stages: the outer spatial levels fused, level 0 bound to blockIdx.x
// (its groups swizzled in bands of a sampled width among kSwizzleWidths),
// level 1 to vthread, level 2 to threadIdx.x. Shared cache-read stages: rows
// padded by a sampled offset (PadAgainstBankConflicts), all loops fused,
// split by a sampled vector width (SampleFetchWidth; vectorized), the rest
// split by the consumer's work items per group (a follow split of its
// tiles, so mutations keep them equal), that part bound to threadIdx.x,
// double-buffered with probability 1/2 where CanDoubleBuffer. Cross-thread reduction stages: the
// factored axis bound to threadIdx.x, the group (their consumer's fused loop) to blockIdx.x. Any other root
// stage: its leading spatial loops fused and split by a random number of work items (a power of two up to
// max_threads_per_block), bound to blockIdx.x and threadIdx.x. Each choice
// is sampled unless ThreadBindChoices fixes it.
class ThreadBinder {
 public:
  ThreadBinder(const SketchContext& ctx, const ThreadBindChoices& choices, std::mt19937* rng)
      : ctx_(ctx), choices_(choices), rng_(rng) {}

  State Bind(const State& state) const {
    State s = FitTileThreads(ctx_, state, rng_);
    for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
      if (HasLoops(s, id) && s.stage(id).loc == ComputeLocKind::Root) s = BindRoot(s, id);
    }
    // Register tiles to pipeline: computed at a reduce loop of their shared
    // tile before their loads are bound, double-buffered after (unless
    // binding inlined them again).
    std::vector<int> pipelined;
    for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
      if (!IsRegisterTile(s, id) || !choices_.pipeline_register_tiles.value_or(RandomIndex(rng_, 2) == 1))
        continue;
      const std::vector<int> nodes = PipelineNodes(s, id);
      if (nodes.empty()) continue;
      const int node = nodes[RandomIndex(rng_, static_cast<int64_t>(nodes.size()))];
      const int consumer = s.stage(id).attach_stage;
      if (node != s.stage(id).attach_node) s = s.ComputeAt(id, consumer, s.stage(consumer).LeafIndex(node));
      pipelined.push_back(id);
    }
    const State bounded = InferBound(s);  // the regions the shared stages copy
    for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
      if (IsRegisterTile(s, id)) s = BindRegisterTile(s, bounded.stage(id), id, choices_, rng_);
    }
    for (int id : pipelined) {
      if (CanDoubleBuffer(s, id)) s = s.Apply(PragmaStep{id, 0, "double_buffer"});
    }
    for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
      const Stage& st = s.stage(id);
      if (!HasLoops(s, id) || st.loc != ComputeLocKind::At || st.scope != MemScope::Shared) continue;
      if (HasReduceIter(st)) {
        // The partial sums of a cross-thread reduction (computed in the
        // stage that sums them): the factored axis is the last spatial one.
        // A reduction fused into its row's reader keeps its loops: every
        // work item of the group sums the partial sums (work item 0 writes).
        if (HasReduceIter(s.stage(st.attach_stage)))
          s = s.Annotate(id, static_cast<int>(st.op->axis.size()) - 1, IteratorAnnotation::ThreadIdxX);
        continue;
      }
      const std::vector<int> splits = SpatialTileSplits(s, s.stage(st.attach_stage).name());
      if (splits.empty()) continue;  // not a GPU-tiled consumer: work item 0 copies
      s = PadAgainstBankConflicts(s, id, choices_, rng_);
      const int64_t width = FetchWidth(bounded.stage(id));
      s = FuseRange(s, id, 0, s.stage(id).num_iters());
      s = s.Split(id, 0, {width});
      s = s.Apply(FollowFusedSplitStep{id, 0, splits, 1, true});
      s = s.Annotate(id, 1, IteratorAnnotation::ThreadIdxX);
      s = s.Annotate(id, 2, IteratorAnnotation::Vectorize);
      if (CanDoubleBuffer(s, id) && choices_.double_buffer.value_or(RandomIndex(rng_, 2) == 1))
        s = s.Apply(PragmaStep{id, 0, "double_buffer"});
    }
    return s;
  }

 private:
  int64_t FetchWidth(const Stage& bounded) const {
    const int64_t inner = bounded.num_iters() > 0 ? bounded.iter(bounded.num_iters() - 1).extent : 1;
    if (choices_.fetch_width && inner > 0 && inner % *choices_.fetch_width == 0) return *choices_.fetch_width;
    return SampleFetchWidth(bounded, rng_, choices_.widest_vectors);
  }

  State BindRoot(State s, int id) const {
    const Stage st = s.stage(id);
    if (IsGpuTiled(st)) {
      const int ns = static_cast<int>(st.op->axis.size());
      const IteratorAnnotation levels[] = {IteratorAnnotation::BlockIdxX, IteratorAnnotation::VThread,
                                           IteratorAnnotation::ThreadIdxX};
      for (int level = 0; level < 3; ++level) {
        s = FuseRange(s, id, level, ns);
        s = s.Annotate(id, level, levels[level]);
      }
      const int64_t width = choices_.swizzle_width.value_or(
          kSwizzleWidths[RandomIndex(rng_, static_cast<int64_t>(std::size(kSwizzleWidths)))]);
      if (width > 1 && SwizzleLoop(s, id) == 0)
        s = s.Apply(PragmaStep{id, 0, "block_swizzle$" + std::to_string(width)});
      return s;
    }
    int n = 0;
    int64_t extent = 1;
    bool attach = false;
    for (; n < st.num_iters() && !attach; ++n) {
      const Iterator& it = st.iter(n);
      if (it.kind != IteratorKind::Spatial || it.annotation != IteratorAnnotation::None) break;
      extent *= std::max<int64_t>(1, it.extent);
      attach = HasAttachedAt(s, id, st.leaves[n]);
    }
    if (n == 0 || (extent <= 1 && !attach)) return s;
    s = FuseRange(s, id, 0, n);
    // A stage computed inside: one group per iteration (its loops bind the threads).
    if (attach) return s.Annotate(id, 0, IteratorAnnotation::BlockIdxX);
    const int64_t max_threads = ctx_.task.hardware_params.max_threads_per_block > 0
                                    ? ctx_.task.hardware_params.max_threads_per_block
                                    : 256;
    std::vector<int64_t> options;
    for (int64_t t = 32; t <= max_threads; t *= 2) options.push_back(t);
    if (options.empty()) options.push_back(max_threads);
    const int64_t threads = std::min(
        extent, choices_.plain_threads ? std::clamp<int64_t>(*choices_.plain_threads, 1, max_threads)
                                       : options[RandomIndex(rng_, static_cast<int64_t>(options.size()))]);
    if (threads >= extent) return s.Annotate(id, 0, IteratorAnnotation::ThreadIdxX);
    s = s.Split(id, 0, {threads});
    s = s.Annotate(id, 0, IteratorAnnotation::BlockIdxX);
    return s.Annotate(id, 1, IteratorAnnotation::ThreadIdxX);
  }

  const SketchContext& ctx_;
  const ThreadBindChoices& choices_;
  std::mt19937* rng_;
};

class ThreadBindRule : public InitRule {
 public:
  std::string name() const override { return "thread-bind"; }
  State Apply(const SketchContext& ctx, const State& state, std::mt19937* rng) const override {
    return ThreadBinder(ctx, ThreadBindChoices{}, rng).Bind(state);
  }
};

// Vectorization on GPUs: on those whose ALUs are vector units (mobile GPUs
// such as Mali: the target's capability), or when the parameters ask.
class GpuVectorizeRule : public InitRule {
 public:
  std::string name() const override { return "vectorize"; }
  State Apply(const SketchContext& ctx, const State& state, std::mt19937* rng) const override {
    if (!ctx.params.gpu_vectorize && !TargetPrefersExplicitVectors(ctx.task.target)) return state;
    return vectorize_->Apply(ctx, state, rng);
  }

 private:
  std::shared_ptr<const InitRule> vectorize_ = MakeVectorizeRule();
};

}  // namespace

std::shared_ptr<const InitRule> MakeThreadBindRule() { return std::make_shared<ThreadBindRule>(); }

State BindThreads(const SketchContext& ctx, const State& state, const ThreadBindChoices& choices,
                  std::mt19937* rng) {
  return ThreadBinder(ctx, choices, rng).Bind(state);
}

InitRuleList DefaultGpuInitRules() {
  return {MakeFillTileSizeRule(), MakeThreadBindRule(), MakeUnrollRule(),
          std::make_shared<GpuVectorizeRule>()};
}

MutationRuleList DefaultGpuMutationRules() {
  return {{MakeMutateTileSizeRule(), 0.80},
          {MakeMutateAutoUnrollRule(), 0.10},
          {MakeMutateSharedFetchRule(), 0.10}};
}

}  // namespace autosched
