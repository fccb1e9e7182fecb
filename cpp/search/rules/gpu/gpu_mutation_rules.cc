// The GPU mutation rule shared-fetch: another vector width for a cooperative
// fetch or a register tile's load (along the columns of a transposed stage), another row padding for a shared
// buffer, or double buffering of a shared stage or a register tile switched on or off (the parameters the
// thread-bind rule samples, gpu_init_rules.cc).
#include <iterator>

#include "schedule/infer_bound.h"
#include "search/rules/gpu/gpu_rules.h"
#include "search/rules/search_util.h"

namespace autosched {

bool IsRegisterTile(const State& s, int id) {
  const Stage& st = s.stage(id);
  if (st.scope != MemScope::Local || st.loc != ComputeLocKind::At || HasReduceIter(st)) return false;
  const auto& producers = s.dag().access(id).producers;
  return producers.size() == 1 && s.stage(producers[0]).scope == MemScope::Shared;
}

namespace {

// A serial reduce loop of more than one iteration: one a fetch can run ahead of.
bool IsPipelinableLoop(const Iterator& it) {
  return it.kind == IteratorKind::Reduce && it.extent > 1 &&
         (it.annotation == IteratorAnnotation::None || it.annotation == IteratorAnnotation::Unroll);
}

}  // namespace

bool CanDoubleBuffer(const State& s, int id) {
  const Stage& st = s.stage(id);
  if (st.loc != ComputeLocKind::At || HasReduceIter(st)) return false;
  if (st.scope != MemScope::Shared && !IsRegisterTile(s, id)) return false;
  const Stage& at = s.stage(st.attach_stage);
  const int pos = at.LeafIndex(st.attach_node);
  return pos >= 0 && IsPipelinableLoop(at.iter(pos));
}

std::vector<int> PipelineNodes(const State& s, int id) {
  std::vector<int> nodes;
  if (!IsRegisterTile(s, id)) return nodes;
  const Stage& tile = s.stage(id);
  const Stage& shared = s.stage(s.dag().access(id).producers[0]);
  const Stage& consumer = s.stage(tile.attach_stage);
  const int last = consumer.LeafIndex(tile.attach_node);
  const int first = shared.loc == ComputeLocKind::At && shared.attach_stage == tile.attach_stage
                        ? consumer.LeafIndex(shared.attach_node) + 1
                        : 0;
  if (last < 0 || first <= 0) return nodes;
  for (int pos = first; pos <= last; ++pos) {
    if (IsPipelinableLoop(consumer.iter(pos))) nodes.push_back(consumer.leaves[pos]);
  }
  return nodes;
}

std::optional<State> PipelineRegisterTile(const State& s, int id, int node) {
  const Stage& tile = s.stage(id);
  const int consumer = tile.attach_stage;
  int at = -1;  // the tile's compute_at step
  for (int j = static_cast<int>(s.steps().size()); j-- > 0 && at < 0;) {
    const auto* ca = std::get_if<ComputeAtStep>(&s.steps()[j]);
    if (ca != nullptr && ca->stage_id == id) at = j;
  }
  if (at < 0) return std::nullopt;
  std::vector<Step> steps = s.steps();
  if (node != tile.attach_node) {
    // The loop's position in the consumer as it was when the tile was placed.
    State before(s.init_dag());
    for (int j = 0; j <= at; ++j) before = before.Apply(steps[j]);
    const int pos = before.stage(consumer).LeafIndex(node);
    if (pos < 0) return std::nullopt;
    steps.insert(steps.begin() + at + 1, ComputeAtStep{id, consumer, pos});
    for (Step& step : steps) {  // references to steps after the insertion shift by one
      if (auto* f = std::get_if<FollowSplitStep>(&step); f && f->src_step_id > at) ++f->src_step_id;
      if (auto* f = std::get_if<FollowFusedSplitStep>(&step)) {
        for (int& src : f->src_step_ids) src += src > at ? 1 : 0;
      }
    }
  }
  try {
    State r = State::FromSteps(s.init_dag(), steps);
    if (!CanDoubleBuffer(r, id)) return std::nullopt;
    return r.Apply(PragmaStep{id, 0, "double_buffer"});
  } catch (const std::exception&) {  // the tile's own steps do not fit its new region
    return std::nullopt;
  }
}

int DoubleBufferStep(const State& s, int id) {
  for (int j = static_cast<int>(s.steps().size()); j-- > 0;) {
    const auto* pr = std::get_if<PragmaStep>(&s.steps()[j]);
    if (pr != nullptr && pr->stage_id == id && pr->pragma_type == "double_buffer") return j;
  }
  return -1;
}

int SwizzleLoop(const State& s, int id) {
  const Stage& st = s.stage(id);
  for (int i = 0; i < st.num_iters(); ++i) {
    if (st.iter(i).annotation != IteratorAnnotation::BlockIdxX) continue;
    for (const IterRelation& rel : st.relations) {
      if (rel.kind == IterRelation::Kind::Fuse && rel.children[0] == st.leaves[i] && rel.parents.size() >= 2)
        return i;
    }
  }
  return -1;
}

int SwizzleStep(const State& s, int id) {
  for (int j = static_cast<int>(s.steps().size()); j-- > 0;) {
    const auto* pr = std::get_if<PragmaStep>(&s.steps()[j]);
    if (pr != nullptr && pr->stage_id == id && pr->pragma_type.rfind("block_swizzle$", 0) == 0) return j;
  }
  return -1;
}

namespace {

// The steps without step `j` (a pragma, which no stage id depends on); the
// references of follow splits to later steps shift by one.
std::vector<Step> WithoutStep(const std::vector<Step>& steps, int j) {
  std::vector<Step> out;
  for (int k = 0; k < static_cast<int>(steps.size()); ++k) {
    if (k == j) continue;
    Step step = steps[k];
    if (auto* f = std::get_if<FollowSplitStep>(&step); f && f->src_step_id > j) --f->src_step_id;
    if (auto* f = std::get_if<FollowFusedSplitStep>(&step)) {
      for (int& src : f->src_step_ids) src -= src > j ? 1 : 0;
    }
    out.push_back(step);
  }
  return out;
}

template <typename T>
T PickOther(const std::vector<T>& options, const T& current, std::mt19937* rng) {
  std::vector<T> others;
  for (const T& o : options) {
    if (o != current) others.push_back(o);
  }
  return others.empty() ? current : others[RandomIndex(rng, static_cast<int64_t>(others.size()))];
}

class MutateSharedFetchRule : public MutationRule {
 public:
  std::string name() const override { return "shared-fetch"; }
  std::optional<State> Apply(const SketchContext&, const State& s, std::mt19937* rng) const override {
    const std::vector<int> splits = SharedStageSteps(s, true), aligns = SharedStageSteps(s, false);
    std::vector<int> doubles;  // stages whose double buffering can be switched
    for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
      if (CanDoubleBuffer(s, id) || !PipelineNodes(s, id).empty()) doubles.push_back(id);
    }
    std::vector<int> swizzles;  // stages whose block swizzle can change
    for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
      if (SwizzleLoop(s, id) >= 0) swizzles.push_back(id);
    }
    const int64_t total =
        static_cast<int64_t>(splits.size() + aligns.size() + doubles.size() + swizzles.size());
    if (total == 0) return std::nullopt;
    const int64_t pick = RandomIndex(rng, total);
    std::vector<Step> steps = s.steps();
    if (pick >= static_cast<int64_t>(splits.size() + aligns.size() + doubles.size())) {
      const int id = swizzles[pick - splits.size() - aligns.size() - doubles.size()];
      const int j = SwizzleStep(s, id);
      const int64_t current = s.stage(id).swizzle_width;
      const int64_t width =
          PickOther(std::vector<int64_t>(std::begin(kSwizzleWidths), std::end(kSwizzleWidths)), current, rng);
      if (width == current) return std::nullopt;
      if (j >= 0 && width == 1) return State::FromSteps(s.init_dag(), WithoutStep(steps, j));
      const std::string pragma = "block_swizzle$" + std::to_string(width);
      if (j < 0) return s.Apply(PragmaStep{id, SwizzleLoop(s, id), pragma});
      std::get<PragmaStep>(steps[j]).pragma_type = pragma;
      return State::FromSteps(s.init_dag(), steps);
    }
    if (pick >= static_cast<int64_t>(splits.size() + aligns.size())) {
      const int id = doubles[pick - splits.size() - aligns.size()];
      const int j = DoubleBufferStep(s, id);
      if (j >= 0) return State::FromSteps(s.init_dag(), WithoutStep(steps, j));
      // A register tile: pipelined at one of the reduce loops of its shared
      // tile (computed there first when it is computed further in).
      const std::vector<int> nodes = PipelineNodes(s, id);
      if (!nodes.empty())
        return PipelineRegisterTile(s, id, nodes[RandomIndex(rng, static_cast<int64_t>(nodes.size()))]);
      return s.Apply(PragmaStep{id, 0, "double_buffer"});
    }
    if (pick >= static_cast<int64_t>(splits.size())) {
      auto& sa = std::get<StorageAlignStep>(steps[aligns[pick - splits.size()]]);
      std::vector<int64_t> offsets;
      for (int64_t o : kRowPadOffsets) {
        if (o > 0) offsets.push_back(o);
      }
      const int64_t offset = PickOther(offsets, sa.offset, rng);
      if (offset == sa.offset) return std::nullopt;
      sa.offset = offset;
      return State::FromSteps(s.init_dag(), steps);
    }
    // The widths that divide the innermost extent of the region the stage
    // copies (its bounds in the state as it is): the last dimension's, or
    // the one before it for a register tile copying a transposed stage
    // along its columns.
    auto& split = std::get<SplitStep>(steps[splits[pick]]);
    const BoundInfo bounds = InferBoundDetailed(s);
    const std::vector<int64_t>& region = bounds.stages.at(split.stage_id).region_extent;
    const auto& producers = s.dag().access(split.stage_id).producers;
    const bool along_columns = s.stage(split.stage_id).scope == MemScope::Local && producers.size() == 1 &&
                               s.stage(producers[0]).storage_transposed && region.size() >= 2;
    const int64_t inner = region.empty() ? 1 : along_columns ? region[region.size() - 2] : region.back();
    std::vector<int64_t> widths;
    for (int64_t w : kFetchWidths) {
      if (inner > 0 && inner % w == 0) widths.push_back(w);
    }
    const int64_t width = PickOther<int64_t>(widths, split.lengths[0].value_or(1), rng);
    if (width == split.lengths[0].value_or(1)) return std::nullopt;
    split.lengths[0] = width;
    return State::FromSteps(s.init_dag(), steps);
  }
};

}  // namespace

std::shared_ptr<const MutationRule> MakeMutateSharedFetchRule() {
  return std::make_shared<MutateSharedFetchRule>();
}

}  // namespace autosched
