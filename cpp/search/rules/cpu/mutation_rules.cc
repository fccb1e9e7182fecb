// The CPU mutation rules, one small class each, and MutateState. Every rule
// edits a copy of the step list and replays it (State::FromSteps), so the
// core checks each step as it would for a user's schedule.
#include "search/rules/mutation_rules.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "ir/functor.h"
#include "lower/lower.h"
#include "schedule/infer_bound.h"
#include "search/rules/cpu/register_block.h"
#include "search/rules/gpu_state.h"
#include "search/rules/search_util.h"
#include "support/error.h"

namespace autosched {
namespace {

template <typename T>
std::vector<int> StepsOfKind(const std::vector<Step>& steps) {
  std::vector<int> ids;
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
    if (std::holds_alternative<T>(steps[i])) ids.push_back(i);
  }
  return ids;
}

template <typename T>
const T& Pick(const std::vector<T>& v, std::mt19937* rng) {
  return v[RandomIndex(rng, static_cast<int64_t>(v.size()))];
}

std::vector<int64_t> DivisorsAbove1(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 2; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// True when some stage is computed at iterator node `node` of stage_id.
bool HasAttachedStage(const State& s, int stage_id, int node) {
  for (const Stage& st : s.stages()) {
    if (st.loc == ComputeLocKind::At && st.attach_stage == stage_id && st.attach_node == node) return true;
  }
  return false;
}

// Every part, outermost first; empty when the split does not qualify.
std::vector<int64_t> SplitParts(const SplitStep& split) {
  if (!split.extent || *split.extent < 1) return {};
  int64_t product = 1;
  std::vector<int64_t> lengths;
  for (const auto& len : split.lengths) {
    if (!len) return {};
    product *= *len;
    lengths.push_back(*len);
  }
  if (*split.extent % product != 0 || *split.extent == 1) return {};
  const int64_t rest = *split.extent / product;
  if (split.inner_to_outer)
    lengths.insert(lengths.begin(), rest);
  else
    lengths.push_back(rest);
  return lengths;
}

// ---- tile-size ----

// The parts of a split are its lengths plus the part that covers the rest
// (outermost with inner_to_outer, else innermost). A factor of one part moves
// to another, so the product stays the extent; only splits whose lengths
// divide the extent exactly qualify. On CPUs, with probability
// register_block_share, a tiling split of a stage with register blocks keeps
// to the family instead (FamilyMove).
class MutateTileSizeRule : public MutationRule {
 public:
  std::string name() const override { return "tile-size"; }
  std::optional<State> Apply(const SketchContext& ctx, const State& s, std::mt19937* rng) const override {
    std::vector<Step> steps = s.steps();
    std::vector<int> candidates;
    // The fetch splits of shared stages keep their widths (shared-fetch changes them).
    const std::vector<int> fetch =
        ctx.task.target.kind->is_gpu ? SharedStageSteps(s, true) : std::vector<int>();
    const std::set<int> dot_groups = ctx.task.target.kind->is_gpu ? std::set<int>() : DotGroupSplits(ctx, s);
    for (int id : StepsOfKind<SplitStep>(steps)) {
      if (std::find(fetch.begin(), fetch.end(), id) != fetch.end() || dot_groups.count(id)) continue;
      if (!SplitParts(std::get<SplitStep>(steps[id])).empty()) candidates.push_back(id);
    }
    if (candidates.empty()) return std::nullopt;
    const int picked = Pick(candidates, rng);
    auto& split = std::get<SplitStep>(steps[picked]);
    std::vector<int64_t> parts = SplitParts(split);
    if (!ctx.task.target.kind->is_gpu && RandomUnit(rng) < ctx.params.register_block_share &&
        FamilyMove(ctx, s, steps, picked, &parts, rng)) {
      for (size_t k = 0; k < split.lengths.size(); ++k) split.lengths[k] = parts[1 + k];
      return State::FromSteps(s.init_dag(), steps);
    }
    const int n = static_cast<int>(parts.size());
    const int64_t max_inner = ctx.params.max_innermost_split_factor;
    std::optional<bool> vector_axis;  // whether the split is a CPU stage's vector axis (asked once)
    const auto [thread_part, threads] = GpuThreadPart(ctx, s, picked);
    for (int attempt = 0; attempt < 8; ++attempt) {
      const int src = static_cast<int>(RandomIndex(rng, n));
      const int dst = static_cast<int>((src + 1 + RandomIndex(rng, n - 1)) % n);
      if (parts[src] == 1) continue;
      const int64_t factor = Pick(DivisorsAbove1(parts[src]), rng);
      if (dst == n - 1 && parts[dst] * factor > max_inner) continue;
      // GPU: no more work items per group than max_threads_per_block.
      if (dst == thread_part && threads * factor > ctx.task.hardware_params.max_threads_per_block) continue;
      // The innermost tile of a contiguous axis keeps at least 2 lanes to vectorize.
      if (src == n - 1 && parts[src] == factor && split.inner_to_outer && !ctx.task.target.kind->is_gpu) {
        if (!vector_axis) vector_axis = IsVectorAxisSplit(ctx, s, picked);
        if (*vector_axis) continue;
      }
      parts[src] /= factor;
      parts[dst] *= factor;
      const size_t first = split.inner_to_outer ? 1 : 0;
      for (size_t k = 0; k < split.lengths.size(); ++k) split.lengths[k] = parts[first + k];
      return State::FromSteps(s.init_dag(), steps);
    }
    return std::nullopt;
  }

 private:
  // Whether some stage might have a dot-product group: a 32-bit stage with a
  // reduce axis of extent 2 or 4 that reads an 8-bit or bfloat16 tensor.
  static bool MayHaveDotGroup(const State& s) {
    for (const Tensor& op : s.dag().ops()) {
      if (!op->is_compute() || op->dtype.bits != 32) continue;
      const bool group = std::any_of(op->reduce_axis.begin(), op->reduce_axis.end(),
                                     [](const IterVar& iv) { return iv.extent == 2 || iv.extent == 4; });
      if (!group) continue;
      bool narrow = false;
      PostOrderVisit(op->body, [&](const Expr& x) {
        const auto* load = x.as<TensorLoadNode>();
        narrow = narrow || (load != nullptr && (load->dtype.bits == 8 || load->dtype.is_bfloat16()));
      });
      if (narrow) return true;
    }
    return false;
  }

  // The tiling splits of dot-product groups (DotReduceAxis): they keep the
  // group whole, outside the register block, where its instruction needs it.
  static std::set<int> DotGroupSplits(const SketchContext& ctx, const State& s) {
    std::set<int> out;
    if (!MayHaveDotGroup(s)) return out;  // most tasks: no replay of the steps
    std::map<std::string, int> dot_node;  // stage -> root node of its group (-1: none)
    for (const auto& [id, role] : TilingSplitRoles(s, CpuTilingLevels(ctx.params))) {
      auto it = dot_node.find(role.stage);
      if (it == dot_node.end()) {
        const Stage& st = s.stage(s.StageIndex(role.stage));
        const int dot = PlanRegisterBlocks(ctx, st).dot_reduce;
        it = dot_node.emplace(role.stage, dot < 0 ? -1 : static_cast<int>(st.op->axis.size()) + dot).first;
      }
      if (it->second >= 0 && role.node == it->second) out.insert(id);
    }
    return out;
  }

  // The part of split step `id` bound to threadIdx.x and the work items per
  // group it is a factor of, when the task limits them: a GPU tiling split
  // (its part kThreadTileLevel; the product over the stage's tiling splits)
  // or the split thread-bind gives a stage it binds plainly (its inner part,
  // bound by the annotation steps right after); {-1, 0} for any other split.
  static std::pair<int, int64_t> GpuThreadPart(const SketchContext& ctx, const State& s, int id) {
    if (!ctx.task.target.kind->is_gpu || ctx.task.hardware_params.max_threads_per_block <= 0) return {-1, 0};
    const std::vector<Step>& steps = s.steps();
    const auto& split = std::get<SplitStep>(steps[id]);
    if (!split.inner_to_outer) return {-1, 0};
    for (const auto& [stage, ids] : GpuTileSplits(ctx, s)) {
      if (std::find(ids.begin(), ids.end(), id) != ids.end())
        return {kThreadTileLevel, TileThreads(steps, ids)};
    }
    for (int j = id + 1; split.lengths.size() == 1 && j <= id + 2 && j < static_cast<int>(steps.size());
         ++j) {
      const auto* bind = std::get_if<AnnotationStep>(&steps[j]);
      if (bind != nullptr && bind->stage_id == split.stage_id && bind->iter_id == split.iter_id + 1 &&
          bind->annotation == IteratorAnnotation::ThreadIdxX)
        return {1, split.lengths[0].value_or(1)};
    }
    return {-1, 0};
  }

  // Whether step `id` is a tiling split of the vector axis of its stage.
  static bool IsVectorAxisSplit(const SketchContext& ctx, const State& s, int id) {
    const auto roles = TilingSplitRoles(s, CpuTilingLevels(ctx.params));
    const auto role = roles.find(id);
    if (role == roles.end()) return false;
    return PlanRegisterBlocks(ctx, s.stage(s.StageIndex(role->second.stage))).vec_axis == role->second.node;
  }

  // Moves a factor between two of the parts before the innermost.
  static bool MoveOuter(std::vector<int64_t>* parts, std::mt19937* rng) {
    const int n = static_cast<int>(parts->size()) - 1;
    std::vector<int> sources;
    for (int p = 0; p < n; ++p) {
      if ((*parts)[p] > 1) sources.push_back(p);
    }
    if (n < 2 || sources.empty()) return false;
    const int src = Pick(sources, rng);
    const int dst = static_cast<int>((src + 1 + RandomIndex(rng, n - 1)) % n);
    const int64_t factor = Pick(DivisorsAbove1((*parts)[src]), rng);
    (*parts)[src] /= factor;
    (*parts)[dst] *= factor;
    return true;
  }

  // A move within the register-block family of the split's stage: on the
  // vector, row or column axis, the innermost part becomes (or stays, half the
  // time) one of the family's lengths that fit the other block axes' innermost
  // parts, the outer parts redrawn (or a factor moved between them); on
  // another spatial axis the innermost part goes back to 1 (or a factor moves
  // between the outer parts). False when the split is no such split (a
  // reduction, no family, a length that does not divide): a free move then.
  static bool FamilyMove(const SketchContext& ctx, const State& s, const std::vector<Step>& steps, int id,
                         std::vector<int64_t>* parts, std::mt19937* rng) {
    const auto roles = TilingSplitRoles(s, CpuTilingLevels(ctx.params));
    const auto role = roles.find(id);
    if (role == roles.end() || !std::get<SplitStep>(steps[id]).inner_to_outer) return false;
    const Stage& st = s.stage(s.StageIndex(role->second.stage));
    const RegisterBlockPlan plan = PlanRegisterBlocks(ctx, st);
    const int node = role->second.node;
    if (plan.empty() || node >= static_cast<int>(st.op->axis.size())) return false;
    int64_t& inner = parts->back();
    if (node != plan.vec_axis && node != plan.row_axis && node != plan.col_axis) {
      if (inner == 1) return MoveOuter(parts, rng);
      parts->front() *= inner;
      inner = 1;
      return true;
    }
    // The block axes' innermost parts, as the state has them.
    const std::vector<int> block_axes = {plan.vec_axis, plan.row_axis, plan.col_axis};
    std::map<int, int64_t> current;
    for (const auto& [step, r] : roles) {
      if (r.stage == role->second.stage)
        current[r.node] = std::get<SplitStep>(steps[step]).lengths.back().value_or(1);
    }
    int64_t extent = 1;
    for (int64_t p : *parts) extent *= p;
    std::vector<int64_t> fits, any;
    for (const RegisterBlock& b : plan.family) {
      const int64_t mine = BlockPart(plan, b, node);
      if (extent % mine != 0) continue;
      any.push_back(mine);
      const bool others_fit = std::all_of(block_axes.begin(), block_axes.end(), [&](int axis) {
        return axis < 0 || axis == node ||
               BlockPart(plan, b, axis) == (current.count(axis) ? current[axis] : 1);
      });
      if (others_fit) fits.push_back(mine);
    }
    const std::vector<int64_t>& options = fits.empty() ? any : fits;
    if (options.empty()) return false;
    const bool in_family = std::find(options.begin(), options.end(), inner) != options.end();
    if (in_family && RandomUnit(rng) < 0.5 && MoveOuter(parts, rng)) return true;
    const std::vector<int64_t> before = *parts;
    for (int attempt = 0; attempt < 8 && *parts == before; ++attempt) {
      inner = Pick(options, rng);
      int64_t rest = extent / inner;
      for (int p = static_cast<int>(parts->size()) - 2; p >= 1; --p) {
        std::vector<int64_t> divisors = DivisorsAbove1(rest);
        divisors.push_back(1);
        (*parts)[p] = Pick(divisors, rng);
        rest /= (*parts)[p];
      }
      parts->front() = rest;
    }
    if (*parts != before) return true;
    return MoveOuter(parts, rng);
  }
};

// ---- register-block ----

// A tiled CPU stage whose register-block family has blocks of several
// columns (register_block.h) gets another block of the family at once: the
// innermost parts of its vector, row and column axes (each split's middle
// parts kept where they still divide, the outermost taking the rest), its row
// and column iterators unrolled. Tile-size moves one split at a time, and
// from a block of one column the blocks of several are reached only through
// blocks that do not fit the registers (and without the column unrolled).
class MutateRegisterBlockRule : public MutationRule {
 public:
  std::string name() const override { return "register-block"; }
  std::optional<State> Apply(const SketchContext& ctx, const State& s, std::mt19937* rng) const override {
    if (ctx.task.target.kind->is_gpu) return std::nullopt;
    std::map<std::string, std::map<int, int>> splits;  // stage -> op axis -> tiling split step
    for (const auto& [step, role] : TilingSplitRoles(s, CpuTilingLevels(ctx.params))) {
      splits[role.stage][role.node] = step;
    }
    std::vector<std::string> stages;
    for (const auto& [name, by_axis] : splits) {
      const RegisterBlockPlan plan = PlanRegisterBlocks(ctx, s.stage(s.StageIndex(name)));
      const bool has_columns = std::any_of(plan.family.begin(), plan.family.end(),
                                           [](const RegisterBlock& b) { return b.cols > 1; });
      if (plan.col_axis >= 0 && has_columns) stages.push_back(name);
    }
    if (stages.empty()) return std::nullopt;
    const std::string& name = Pick(stages, rng);
    const RegisterBlockPlan plan = PlanRegisterBlocks(ctx, s.stage(s.StageIndex(name)));
    const RegisterBlock& block = Pick(plan.family, rng);
    std::vector<Step> steps = s.steps();
    bool changed = false;
    for (int axis : {plan.vec_axis, plan.row_axis, plan.col_axis}) {
      const auto it = splits[name].find(axis);
      if (it == splits[name].end()) return std::nullopt;
      auto& split = std::get<SplitStep>(steps[it->second]);
      std::vector<int64_t> parts = SplitParts(split);
      if (parts.size() < 2 || !split.inner_to_outer) return std::nullopt;
      const int64_t inner = BlockPart(plan, block, axis);
      const int64_t extent = std::accumulate(parts.begin(), parts.end(), int64_t{1}, std::multiplies<>());
      if (extent % inner != 0) return std::nullopt;
      changed = changed || parts.back() != inner;
      int64_t rest = extent / inner;
      for (size_t p = 1; p + 1 < parts.size(); ++p) {
        if (rest % parts[p] != 0) parts[p] = 1;
        rest /= parts[p];
      }
      parts.front() = rest;
      parts.back() = inner;
      for (size_t k = 0; k < split.lengths.size(); ++k) split.lengths[k] = parts[1 + k];
    }
    if (!changed) return std::nullopt;
    State out = State::FromSteps(s.init_dag(), steps);
    const int id = out.StageIndex(name);
    for (int axis : {plan.row_axis, plan.col_axis}) {
      const Stage& st = out.stage(id);
      const int pos = InnermostLeafOf(st, axis);
      if (pos >= 0 && st.iter(pos).extent >= 2 && st.iter(pos).annotation == IteratorAnnotation::None &&
          st.iter(pos).kind == IteratorKind::Spatial && !HasAttachedStage(out, id, st.leaves[pos]))
        out = out.Annotate(id, pos, IteratorAnnotation::Unroll);
    }
    return out;
  }
};

// ---- auto-unroll ----

class MutateAutoUnrollRule : public MutationRule {
 public:
  std::string name() const override { return "auto-unroll"; }
  std::optional<State> Apply(const SketchContext& ctx, const State& s, std::mt19937* rng) const override {
    static const std::string kPrefix = "auto_unroll_max_step$";
    std::vector<Step> steps = s.steps();
    std::vector<int> candidates;
    for (int id : StepsOfKind<PragmaStep>(steps)) {
      if (std::get<PragmaStep>(steps[id]).pragma_type.rfind(kPrefix, 0) == 0) candidates.push_back(id);
    }
    if (candidates.empty()) return std::nullopt;
    auto& pragma = std::get<PragmaStep>(steps[Pick(candidates, rng)]);
    std::vector<int64_t> values;
    const int64_t iterations = StageIterations(s.stage(pragma.stage_id));
    for (int64_t v : UsefulUnrollSteps(AutoUnrollCandidates(ctx), iterations)) {
      if (kPrefix + std::to_string(v) != pragma.pragma_type) values.push_back(v);
    }
    if (values.empty()) return std::nullopt;
    pragma.pragma_type = kPrefix + std::to_string(Pick(values, rng));
    return State::FromSteps(s.init_dag(), steps);
  }
};

// ---- compute-location ----

// A compute_at step gets another iterator of the same target stage, taken
// from the target's iterators as they are when the step applies: the leading
// ones that are neither reductions nor vectorized or unrolled.
class MutateComputeLocationRule : public MutationRule {
 public:
  std::string name() const override { return "compute-location"; }
  std::optional<State> Apply(const SketchContext&, const State& s, std::mt19937* rng) const override {
    std::vector<Step> steps = s.steps();
    const std::vector<int> candidates = StepsOfKind<ComputeAtStep>(steps);
    if (candidates.empty()) return std::nullopt;
    const int id = Pick(candidates, rng);
    auto& step = std::get<ComputeAtStep>(steps[id]);
    const State before = State::FromSteps(s.init_dag(), {steps.begin(), steps.begin() + id});
    const Stage& target = before.stage(step.target_stage_id);
    std::vector<int> positions;
    for (int p = 0; p < target.num_iters(); ++p) {
      const Iterator& it = target.iter(p);
      if (it.kind != IteratorKind::Spatial || it.annotation == IteratorAnnotation::Vectorize ||
          it.annotation == IteratorAnnotation::Unroll)
        break;
      if (p != step.target_iter_id) positions.push_back(p);
    }
    if (positions.empty()) return std::nullopt;
    step.target_iter_id = Pick(positions, rng);
    return State::FromSteps(s.init_dag(), steps);
  }
};

// ---- parallel ----

// Later steps address the parallel stage's iterators by position: fusing k2
// instead of k1 loops shifts the positions after the fused loop by k1 - k2.
// nullopt when a step cannot be moved along (it names a loop that is now
// fused, reorders the stage, or changes the stage list).
std::optional<Step> ShiftPositions(Step step, int stage_id, int first, int shift) {
  bool ok = true;
  auto move = [&](int* pos) {
    if (*pos <= first) return;
    *pos += shift;
    ok = ok && *pos > first;
  };
  std::visit(
      [&](auto& st) {
        using T = std::decay_t<decltype(st)>;
        if constexpr (std::is_same_v<T, CacheReadStep> || std::is_same_v<T, CacheWriteStep> ||
                      std::is_same_v<T, RfactorStep> || std::is_same_v<T, PackLayoutStep>) {
          ok = false;
        } else if constexpr (std::is_same_v<T, ComputeAtStep>) {
          if (st.target_stage_id == stage_id) move(&st.target_iter_id);
        } else if constexpr (std::is_same_v<T, ReorderStep>) {
          ok = st.stage_id != stage_id;
        } else if constexpr (std::is_same_v<T, FuseStep>) {
          if (st.stage_id == stage_id) {
            for (int& p : st.fused_ids) move(&p);
          }
        } else if constexpr (std::is_same_v<T, ComputeInlineStep> || std::is_same_v<T, ComputeRootStep>) {
          // No iterator position of the stage's loops.
        } else {
          if (st.stage_id == stage_id) move(&st.iter_id);
        }
      },
      step);
  if (!ok) return std::nullopt;
  return step;
}

class MutateParallelRule : public MutationRule {
 public:
  std::string name() const override { return "parallel"; }
  std::optional<State> Apply(const SketchContext&, const State& s, std::mt19937* rng) const override {
    const std::vector<Step>& steps = s.steps();
    std::vector<int> candidates;
    for (int id : StepsOfKind<AnnotationStep>(steps)) {
      if (std::get<AnnotationStep>(steps[id]).annotation == IteratorAnnotation::Parallel)
        candidates.push_back(id);
    }
    if (candidates.empty()) return std::nullopt;
    const int ann_id = Pick(candidates, rng);
    const AnnotationStep ann = std::get<AnnotationStep>(steps[ann_id]);
    const auto* fuse = ann_id > 0 ? std::get_if<FuseStep>(&steps[ann_id - 1]) : nullptr;
    const bool fused =
        fuse != nullptr && fuse->stage_id == ann.stage_id && fuse->fused_ids.front() == ann.iter_id;
    const int start = fused ? ann_id - 1 : ann_id;  // the steps replaced
    const int old_count = fused ? static_cast<int>(fuse->fused_ids.size()) : 1;
    const State before = State::FromSteps(s.init_dag(), {steps.begin(), steps.begin() + start});
    const Stage& st = before.stage(ann.stage_id);
    // Like the parallel init rule, the fuse ends at a loop where another
    // stage is attached: fusing the loops inside it would leave that stage a
    // smaller region than its tiles.
    int max_count = 0;
    for (int p = ann.iter_id; p < st.num_iters(); ++p) {
      const Iterator& it = st.iter(p);
      if (it.kind != IteratorKind::Spatial || it.annotation != IteratorAnnotation::None) break;
      ++max_count;
      if (HasAttachedStage(before, ann.stage_id, st.leaves[p])) break;
    }
    std::vector<int> counts;
    for (int c = 1; c <= max_count; ++c) {
      if (c != old_count) counts.push_back(c);
    }
    if (counts.empty()) return std::nullopt;
    const int count = Pick(counts, rng);
    std::vector<Step> out(steps.begin(), steps.begin() + start);
    if (count > 1) {
      std::vector<int> ids(count);
      std::iota(ids.begin(), ids.end(), ann.iter_id);
      out.push_back(FuseStep{ann.stage_id, ids});
    }
    out.push_back(ann);
    // Step ids after the replaced ones move when the fuse appears or goes.
    const int step_shift = static_cast<int>(out.size()) - (ann_id + 1);
    for (size_t i = ann_id + 1; i < steps.size(); ++i) {
      std::optional<Step> moved = ShiftPositions(steps[i], ann.stage_id, ann.iter_id, old_count - count);
      if (!moved) return std::nullopt;
      ShiftStepRefs(&*moved, start, step_shift);
      out.push_back(*moved);
    }
    return State::FromSteps(s.init_dag(), out);
  }

 private:
  // Follow-split steps name earlier steps by index.
  static void ShiftStepRefs(Step* step, int from, int shift) {
    if (auto* f = std::get_if<FollowSplitStep>(step); f && f->src_step_id >= from) f->src_step_id += shift;
    if (auto* f = std::get_if<FollowFusedSplitStep>(step)) {
      for (int& id : f->src_step_ids) {
        if (id >= from) id += shift;
      }
    }
  }
};

}  // namespace

std::shared_ptr<const MutationRule> MakeMutateTileSizeRule() {
  return std::make_shared<MutateTileSizeRule>();
}
std::shared_ptr<const MutationRule> MakeMutateRegisterBlockRule() {
  return std::make_shared<MutateRegisterBlockRule>();
}
std::shared_ptr<const MutationRule> MakeMutateAutoUnrollRule() {
  return std::make_shared<MutateAutoUnrollRule>();
}
std::shared_ptr<const MutationRule> MakeMutateComputeLocationRule() {
  return std::make_shared<MutateComputeLocationRule>();
}
std::shared_ptr<const MutationRule> MakeMutateParallelRule() {
  return std::make_shared<MutateParallelRule>();
}

MutationRuleList DefaultCpuMutationRules() {
  return {{MakeMutateTileSizeRule(), 0.85},
          {MakeMutateRegisterBlockRule(), 0.05},
          {MakeMutateAutoUnrollRule(), 0.04},
          {MakeMutateComputeLocationRule(), 0.05},
          {MakeMutateParallelRule(), 0.01}};
}

namespace {

std::string CheckStateLowering(const State& state, std::string* message, LoweredPtr* lowered) {
  std::string phase = "infer_bound";
  try {
    const State bounded = InferBound(state);
    phase = "padding";
    const double padding = PaddingRatio(bounded);
    if (padding > kMaxPaddingRatio) {
      *message = "a stage runs " + std::to_string(padding) + " times the iterations of its region";
      return phase;
    }
    phase = "lower";
    *lowered = std::make_shared<const LoweredFunc>(Lower(state));
  } catch (const std::exception& e) {
    *message = e.what();
    return phase;
  }
  return "";
}

}  // namespace

std::string CheckState(const State& state, std::string* message) {
  LoweredPtr lowered;
  return CheckStateLowering(state, message, &lowered);
}

double PaddingRatio(const State& bounded) {
  double worst = 1;
  for (int id = 0; id < static_cast<int>(bounded.stages().size()); ++id) {
    if (!HasLoops(bounded, id)) continue;
    const Stage& st = bounded.stage(id);
    double leaves = 1, roots = 1;
    for (int i = 0; i < st.num_iters(); ++i)
      leaves *= static_cast<double>(std::max<int64_t>(1, st.iter(i).extent));
    for (int n = 0; n < st.num_root; ++n)
      roots *= static_cast<double>(std::max<int64_t>(1, st.nodes[n].extent));
    worst = std::max(worst, leaves / roots);
  }
  return worst;
}

MutationResult MutateState(const SketchContext& ctx, const State& state, const MutationRuleList& rules,
                           std::mt19937* rng) {
  MutationResult out;
  double total = 0;
  for (const auto& r : rules) total += std::max(0.0, r.probability);
  if (rules.empty() || total <= 0) {
    out.failure = "no rule";
    return out;
  }
  double u = RandomUnit(rng) * total;
  size_t pick = 0;
  while (pick + 1 < rules.size() && u >= std::max(0.0, rules[pick].probability)) {
    u -= std::max(0.0, rules[pick].probability);
    ++pick;
  }
  const MutationRule& rule = *rules[pick].rule;
  std::optional<State> mutated;
  try {
    mutated = rule.Apply(ctx, state, rng);
  } catch (const std::exception& e) {
    out.failure = rule.name() + ": replay";
    out.message = e.what();
    return out;
  }
  if (!mutated) {
    out.failure = rule.name() + ": nothing";
    return out;
  }
  LoweredPtr lowered;
  std::string check = CheckStateLowering(*mutated, &out.message, &lowered);
  // GPU tasks: code generation and the device's limits, as for sampled states.
  if (check.empty()) check = CheckGpuState(ctx, *mutated, *lowered, &out.message);
  if (!check.empty()) {
    out.failure = rule.name() + ": " + check;
    return out;
  }
  out.state = std::move(mutated);
  out.lowered = std::move(lowered);
  return out;
}

}  // namespace autosched
