// The CPU init rules and the sampling loop of the initial population.
#include "search/rules/init_rules.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "lower/lower.h"
#include "schedule/infer_bound.h"
#include "search/rules/cpu/register_block.h"
#include "search/rules/gpu_state.h"
#include "search/rules/parallel.h"
#include "search/rules/search_util.h"
#include "support/error.h"

namespace autosched {
namespace {

// True when some stage is computed at iterator node `node` of stage_id.
bool HasAttached(const State& s, int stage_id, int node) {
  for (const Stage& st : s.stages()) {
    if (st.loc == ComputeLocKind::At && st.attach_stage == stage_id && st.attach_node == node) return true;
  }
  return false;
}

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

// ---- fill-tile-size ----

// Replays the sketch's steps, giving every split with an unknown length (and
// the provisional rfactor split) lengths sampled from the real extent of the
// iterator at that point of the replay. On CPUs a multi-level-tiled stage
// takes, with probability register_block_share (one draw per stage), all its
// tiling lengths from SampleBlockTileParts: a register block of the family
// innermost, the reduction tile by L1, the level above by L2.
class FillTileSizeRule : public InitRule {
 public:
  std::string name() const override { return "fill-tile-size"; }
  State Apply(const SketchContext& ctx, const State& sketch, std::mt19937* rng) const override {
    State s(sketch.init_dag());
    const std::vector<Step>& steps = sketch.steps();
    const TilingLevels levels = CpuTilingLevels(ctx.params);
    std::map<std::string, Draw> blocks;  // per tiled stage
    for (size_t i = 0; i < steps.size(); ++i) {
      Step step = steps[i];
      auto* split = std::get_if<SplitStep>(&step);
      if (split != nullptr && NeedsFill(*split, steps, static_cast<int>(i))) {
        const Stage& st = s.stage(split->stage_id);
        const int64_t extent = st.iter(split->iter_id).extent;
        AS_CHECK(extent > 0, "split of stage '" << st.name() << "' has no known extent");
        if (!ctx.task.target.kind->is_gpu && IsTilingSplit(s, *split, levels, true)) {
          auto it = blocks.find(st.name());
          if (it == blocks.end()) it = blocks.emplace(st.name(), DrawBlock(ctx, st, levels, rng)).first;
          const int node = st.leaves[split->iter_id];
          const int num_axes = static_cast<int>(st.op->axis.size());
          if (it->second.parts) {
            split->lengths = SplitLengths(node < num_axes ? it->second.parts->spatial[node]
                                                          : it->second.parts->reduce[node - num_axes]);
          } else if (node == it->second.vec_axis) {
            const auto lengths =
                SampleVectorAxis(ctx, extent, static_cast<int>(split->lengths.size()), it->second.lanes, rng);
            split->lengths.assign(lengths.begin(), lengths.end());
          }
          if (it->second.parts || node == it->second.vec_axis) {
            split->extent = extent;
            s = s.Apply(step);
            continue;
          }
        }
        const auto lengths = SampleSplitLengths(extent, static_cast<int>(split->lengths.size()),
                                                ctx.params.max_innermost_split_factor, rng);
        split->lengths.assign(lengths.begin(), lengths.end());
        split->extent = extent;
      }
      s = s.Apply(step);
    }
    return s;
  }

 private:
  // A tiled stage's draw: its lengths from the family, or random ones (with
  // the vector axis, contiguous in the output, known).
  struct Draw {
    std::optional<TileParts> parts;
    int vec_axis = -1;
    int64_t lanes = 1;
  };

  static Draw DrawBlock(const SketchContext& ctx, const Stage& st, const TilingLevels& levels,
                        std::mt19937* rng) {
    const RegisterBlockPlan plan = PlanRegisterBlocks(ctx, st);
    Draw draw{std::nullopt, plan.vec_axis, plan.lanes};
    if (!plan.empty() && RandomUnit(rng) < ctx.params.register_block_share)
      draw.parts = SampleBlockTileParts(ctx, st, plan, levels.space, levels.reduce, rng);
    return draw;
  }

  // Random lengths of the vector axis whose innermost part is at least 2, so
  // that the vectorize rule has a loop to vectorize: a divisor in [2,
  // max_innermost_split_factor], or where none exists (a prime above it) a
  // whole vector, non-dividing (the tail runs guarded).
  static std::vector<int64_t> SampleVectorAxis(const SketchContext& ctx, int64_t extent, int n, int64_t lanes,
                                               std::mt19937* rng) {
    const int64_t max_inner = ctx.params.max_innermost_split_factor;
    std::vector<int64_t> lengths = SampleSplitLengths(extent, n, max_inner, rng);
    if (extent < 2 || lengths.back() >= 2 || max_inner < 2) return lengths;
    std::vector<int64_t> options;
    for (int64_t d : Divisors(extent)) {
      if (d >= 2 && d <= max_inner) options.push_back(d);
    }
    const int64_t inner = options.empty() ? std::min(std::max<int64_t>(2, lanes), max_inner)
                                          : options[RandomIndex(rng, static_cast<int64_t>(options.size()))];
    const int64_t rest = (extent + inner - 1) / inner;
    lengths = n > 1 ? SampleSplitLengths(rest, n - 1, rest, rng) : std::vector<int64_t>{};
    lengths.push_back(inner);
    return lengths;
  }

  static bool NeedsFill(const SplitStep& split, const std::vector<Step>& steps, int step_id) {
    const bool unknown = std::any_of(split.lengths.begin(), split.lengths.end(),
                                     [](const std::optional<int64_t>& l) { return !l.has_value(); });
    return unknown || IsRfactorSplit(steps, step_id);
  }
};

// ---- parallel ----

// Per root stage: the outermost spatial, unannotated iterators are fused
// until they make more than parallel_iterations_per_core * num_cores
// iterations, then run in parallel. A fuse stops after an iterator where
// another stage is attached; when the iterators up to there run only once,
// the attached stages and the iterators after that one are tried instead.
class ParallelRule : public InitRule {
 public:
  std::string name() const override { return "parallel"; }
  State Apply(const SketchContext& ctx, const State& state, std::mt19937*) const override {
    const int64_t enough =
        ctx.params.parallel_iterations_per_core * std::max<int64_t>(1, ctx.task.hardware_params.num_cores);
    State s = state;
    for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
      if (HasLoops(s, id) && s.stage(id).loc == ComputeLocKind::Root) s = Annotate(s, id, 0, enough);
    }
    return s;
  }

 private:
  static State Annotate(State s, int id, int offset, int64_t enough) {
    const Stage st = s.stage(id);
    int end = offset;
    int64_t product = 1;
    bool at_attach = false;
    for (; end < st.num_iters(); ++end) {
      const Iterator& it = st.iter(end);
      if (it.kind != IteratorKind::Spatial || it.annotation != IteratorAnnotation::None) break;
      product *= it.extent;
      at_attach = HasAttached(s, id, st.leaves[end]);
      if (product > enough || at_attach) {
        ++end;
        break;
      }
    }
    if (product == 1 && at_attach) {
      for (int other = 0; other < static_cast<int>(s.stages().size()); ++other) {
        const Stage& o = s.stage(other);
        if (o.loc == ComputeLocKind::At && o.attach_stage == id && o.attach_node == st.leaves[end - 1])
          s = Annotate(s, other, 0, enough);
      }
      return Annotate(s, id, end, enough);
    }
    if (product <= 1) return s;
    if (end - offset > 1) {
      std::vector<int> ids;
      for (int i = offset; i < end; ++i) ids.push_back(i);
      s = s.Fuse(id, ids);
    }
    return s.Annotate(id, offset, IteratorAnnotation::Parallel);
  }
};

// ---- unroll ----

class UnrollRule : public InitRule {
 public:
  std::string name() const override { return "unroll"; }
  State Apply(const SketchContext& ctx, const State& state, std::mt19937* rng) const override {
    const auto& candidates = AutoUnrollCandidates(ctx);
    State s = state;
    if (candidates.empty()) return s;
    for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
      if (!HasLoops(s, id) || !HasReduceIter(s.stage(id))) continue;
      const std::vector<int64_t> useful = UsefulUnrollSteps(candidates, StageIterations(s.stage(id)));
      const int64_t value = useful[RandomIndex(rng, static_cast<int64_t>(useful.size()))];
      s = s.Apply(PragmaStep{id, 0, "auto_unroll_max_step$" + std::to_string(value)});
    }
    return s;
  }
};

// ---- vectorize ----

// Most lanes the lowering turns into one vector operation (VectorizeLoops).
constexpr int64_t kMaxVectorLanes = 64;

// The register block of a multi-level-tiled CPU stage (register_block.h):
// positions of its vector and row iterators when they are the innermost loops
// of the stage (only spatial loops from the first of them on, none after the
// vector iterator but loops that run once), and of its column iterator when
// it is spatial and, coming before the row one, only loops that run once lie
// between them (after the row one it is inside the block already; -1
// otherwise); {-1, -1, -1} when the first two are not so.
struct BlockPositions {
  int vec = -1, row = -1, col = -1;
};
BlockPositions BlockIterators(const RegisterBlockPlan& plan, const Stage& st) {
  if (plan.empty()) return {};
  const int vec = InnermostLeafOf(st, plan.vec_axis);
  const int row = plan.row_axis >= 0 ? InnermostLeafOf(st, plan.row_axis) : -1;
  if (vec < 0 || (plan.row_axis >= 0 && (row < 0 || row > vec))) return {};
  for (int i = row >= 0 ? row : vec; i < st.num_iters(); ++i) {
    if (st.iter(i).kind != IteratorKind::Spatial || (i > vec && st.iter(i).extent != 1)) return {};
  }
  int col = plan.col_axis >= 0 && row >= 0 ? InnermostLeafOf(st, plan.col_axis) : -1;
  for (int i = col + 1; col >= 0 && i < row; ++i) {
    if (st.iter(i).kind != IteratorKind::Spatial || st.iter(i).extent != 1) col = -1;
  }
  if (col >= 0 && st.iter(col).kind != IteratorKind::Spatial) col = -1;
  return {vec, row, col};
}

// Per stage with loops: the innermost spatial, unannotated iterators whose
// extents multiply to at most the vector bound (one of them only when the
// stage is tiled: the loops above the innermost tile are not contiguous) are
// candidates; a random number of them, from the innermost, is fused and
// vectorized. Extents come from bound inference, so stages computed inside
// another stage's loops are judged by the region they really compute.
class VectorizeRule : public InitRule {
 public:
  std::string name() const override { return "vectorize"; }
  State Apply(const SketchContext& ctx, const State& state, std::mt19937* rng) const override {
    const State bounded = InferBound(state);
    State s = state;
    for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
      if (!HasLoops(s, id)) continue;
      const Stage& st = bounded.stage(id);
      const int64_t bytes = std::max(1, st.op->dtype.bytes());
      const int64_t bound =
          std::min(ctx.params.max_vectorize_size,
                   ctx.task.hardware_params.vector_unit_bytes / bytes * ctx.params.vector_lanes_factor);
      const bool tiled = std::any_of(st.relations.begin(), st.relations.end(), [](const IterRelation& r) {
        return r.kind == IterRelation::Kind::Split;
      });
      const bool cpu = !ctx.task.target.kind->is_gpu;
      if (tiled && cpu && NeedsMultiLevelTiling(s, id)) {
        // A compute-heavy stage: the innermost tile of its contiguous axis
        // is vectorized whole, however many registers it takes (up to the
        // lowering's 64 lanes); a block of the family gets its rows unrolled.
        const RegisterBlockPlan plan = PlanRegisterBlocks(ctx, st);
        const auto [vec, row, col] = BlockIterators(plan, st);
        if (vec >= 0 && !HasAttached(s, id, st.leaves[vec]) &&
            st.iter(vec).annotation == IteratorAnnotation::None && st.iter(vec).extent >= 2 &&
            st.iter(vec).extent <= kMaxVectorLanes) {
          s = s.Annotate(id, vec, IteratorAnnotation::Vectorize);
          const int64_t cols = col >= 0 ? st.iter(col).extent : 1;
          if (row >= 0 && st.iter(row).extent >= 2 && st.iter(row).annotation == IteratorAnnotation::None &&
              InFamily(plan, st.iter(row).extent, st.iter(vec).extent, cols)) {
            s = s.Annotate(id, row, IteratorAnnotation::Unroll);
            // The columns too, so that every accumulator is a register.
            if (cols >= 2 && st.iter(col).annotation == IteratorAnnotation::None &&
                !HasAttached(s, id, st.leaves[col]))
              s = s.Annotate(id, col, IteratorAnnotation::Unroll);
          }
          continue;
        }
      }
      if (tiled && cpu && IsWindowStage(s, id) && st.num_iters() > 0) {
        // A window stage (pooling) split by window-vectorize: its innermost
        // spatial part is vectorized whole (the window loops sit above it),
        // primes included: the lowering splits any extent into vectors.
        const int last = st.num_iters() - 1;
        const Iterator& it = st.iter(last);
        if (it.kind == IteratorKind::Spatial && it.annotation == IteratorAnnotation::None &&
            !HasAttached(s, id, st.leaves[last]) && it.extent >= 2 && it.extent <= kMaxVectorLanes) {
          s = s.Annotate(id, last, IteratorAnnotation::Vectorize);
          continue;
        }
      }
      // The innermost loop of another tiled stage (a cache write's copy, a
      // fused consumer) that holds whole vectors of a block's row.
      const int64_t lanes = std::max<int64_t>(1, ctx.task.hardware_params.vector_unit_bytes / bytes);
      auto block_row = [&](const Iterator& it) {
        return cpu && tiled && it.extent % lanes == 0 && it.extent <= ctx.params.max_innermost_split_factor;
      };
      int count = 0;
      int64_t product = 1;
      for (int i = st.num_iters() - 1; i >= 0; --i) {
        const Iterator& it = st.iter(i);
        if (it.kind != IteratorKind::Spatial || it.annotation != IteratorAnnotation::None) break;
        if (HasAttached(s, id, st.leaves[i]) || (tiled && count > 0)) break;
        if (product * it.extent > bound && !(count == 0 && block_row(it))) break;
        product *= it.extent;
        ++count;
      }
      if (count == 0) continue;
      const int take = 1 + static_cast<int>(RandomIndex(rng, count));
      const int first = st.num_iters() - take;
      int64_t taken = 1;
      for (int i = first; i < st.num_iters(); ++i) taken *= st.iter(i).extent;
      if (taken <= 1) continue;
      if (take > 1) {
        std::vector<int> ids;
        for (int i = first; i < st.num_iters(); ++i) ids.push_back(i);
        s = s.Fuse(id, ids);
      }
      s = s.Annotate(id, first, IteratorAnnotation::Vectorize);
    }
    return s;
  }
};

// One attempt: a random sketch through every init rule, then the checks.
// Returns the drop reason ("" when the state is kept) and sets *message; a
// kept state comes with the function it lowered to.
std::string TryOne(const SketchContext& ctx, const std::vector<State>& sketches, const InitRuleList& rules,
                   std::mt19937* rng, State* out, LoweredPtr* lowered, std::string* message) {
  State s = sketches[RandomIndex(rng, static_cast<int64_t>(sketches.size()))];
  std::string phase;
  try {
    for (const auto& rule : rules) {
      phase = rule->name();
      s = rule->Apply(ctx, s, rng);
    }
    phase = "infer_bound";
    InferBound(s);
    phase = "lower";
    auto f = std::make_shared<const LoweredFunc>(Lower(s));
    // GPU tasks: code generation and the device's limits ("codegen", "device_limits").
    phase = CheckGpuState(ctx, s, *f, message);
    if (!phase.empty()) return phase;
    *lowered = std::move(f);
  } catch (const std::exception& e) {
    *message = e.what();
    return phase;
  }
  *out = s;
  return "";
}

}  // namespace

std::vector<int64_t> SampleSplitLengths(int64_t extent, int n, int64_t max_innermost, std::mt19937* rng) {
  AS_CHECK(extent > 0 && n >= 1, "cannot sample " << n << " split lengths of extent " << extent);
  std::vector<int64_t> lengths(n, 1);
  int64_t remaining = extent;
  for (int k = n - 1; k >= 0; --k) {
    std::vector<int64_t> options = Divisors(remaining);
    if (k == n - 1) {
      options.erase(
          std::remove_if(options.begin(), options.end(), [&](int64_t d) { return d > max_innermost; }),
          options.end());
    }
    lengths[k] = options[RandomIndex(rng, static_cast<int64_t>(options.size()))];
    remaining /= lengths[k];
  }
  return lengths;
}

std::shared_ptr<const InitRule> MakeFillTileSizeRule() { return std::make_shared<FillTileSizeRule>(); }
std::shared_ptr<const InitRule> MakeParallelRule() { return std::make_shared<ParallelRule>(); }
std::shared_ptr<const InitRule> MakeUnrollRule() { return std::make_shared<UnrollRule>(); }
std::shared_ptr<const InitRule> MakeVectorizeRule() { return std::make_shared<VectorizeRule>(); }

InitRuleList DefaultCpuInitRules() {
  return {MakeFillTileSizeRule(), MakeParallelRule(), MakeUnrollRule(), MakeVectorizeRule()};
}

namespace {

struct Attempt {
  State state;
  LoweredPtr lowered;
  std::string reason;  // "" when kept
  std::string message;
  bool started = true;  // false: the deadline had passed (neither kept nor dropped)
};

}  // namespace

InitPopulation SampleInitPopulation(const SearchTask& task, const std::vector<State>& sketches, int n,
                                    uint64_t seed, const SearchParams& params, const InitRuleList& rules,
                                    std::chrono::steady_clock::time_point deadline) {
  AS_CHECK(n >= 1, "the initial population needs a size of at least 1, got " << n);
  AS_CHECK(!sketches.empty(),
           "no sketch to sample the initial population of task '" << task.desc << "' from");
  const SketchContext ctx{task, params};
  InitPopulation pop;
  std::unordered_set<std::string> seen;
  const int64_t max_attempts =
      static_cast<int64_t>(n) * std::max<int64_t>(1, params.sample_init_attempts_per_state);
  int64_t done = 0;
  auto before_deadline = [&] { return std::chrono::steady_clock::now() < deadline; };
  while (done < max_attempts && static_cast<int>(pop.states.size()) < n && before_deadline()) {
    // A batch of what is missing (at least 16), tried in parallel; kept in
    // attempt order.
    const int64_t batch =
        std::min(max_attempts - done, std::max<int64_t>(16, n - static_cast<int64_t>(pop.states.size())));
    std::vector<Attempt> tries(batch, Attempt{State(task.compute_dag), nullptr, "", ""});
    RunParallel(batch, static_cast<int>(params.num_threads), [&](int64_t i) {
      if (!before_deadline()) {
        tries[i].started = false;
        return;
      }
      std::mt19937 rng = RngFor(seed, static_cast<uint64_t>(done + i));
      tries[i].reason =
          TryOne(ctx, sketches, rules, &rng, &tries[i].state, &tries[i].lowered, &tries[i].message);
    });
    done += batch;
    for (Attempt& a : tries) {
      if (static_cast<int>(pop.states.size()) >= n) break;
      if (!a.started) continue;
      if (a.reason.empty() && !seen.insert(StateKey(a.state)).second) a.reason = "duplicate";
      if (a.reason.empty()) {
        pop.states.push_back(std::move(a.state));
        pop.lowered.push_back(std::move(a.lowered));
        continue;
      }
      ++pop.drops[a.reason];
      if (!a.message.empty()) pop.drop_messages.emplace(a.reason, a.message);
    }
  }
  return pop;
}

std::optional<State> ParallelVectorized(const SketchContext& ctx, const State& state) {
  try {
    std::mt19937 rng(0);
    return MakeVectorizeRule()->Apply(ctx, MakeParallelRule()->Apply(ctx, state, &rng), &rng);
  } catch (const std::exception&) {
    return std::nullopt;  // no parallel variant of this nest
  }
}

}  // namespace autosched
