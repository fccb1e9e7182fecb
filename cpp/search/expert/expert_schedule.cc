// The expert schedule (expert_schedule.h): pick a sketch by its structure,
// fill its splits with ExpertTileParts, then annotate deterministically.
#include "search/expert/expert_schedule.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "ir/functor.h"
#include "schedule/infer_bound.h"
#include "search/rules/cpu/register_block.h"
#include "search/rules/init_rules.h"
#include "search/rules/mutation_rules.h"
#include "search/rules/search_util.h"
#include "search/rules/sketch_rules.h"
#include "support/error.h"

namespace autosched {
namespace {

// Whether packing input `stage` for the tiled stages reading it only copies
// it: every reader has at most two vectors' worth of rows (the product of the
// extents of its axes the input does not depend on) and reads the input
// along its innermost axis of extent > 1 already (B of a matmul with 1 to 16
// rows: its block reads B's rows in place, and the copy would cost a pass
// over B per call that so few rows never earn back).
bool PackOnlyCopies(const State& s, const PackLayoutStep& pack, int64_t lanes) {
  const TensorNode* tensor = s.stage(pack.stage_id).op.get();
  for (int reader : pack.reader_stage_ids) {
    const Stage& st = s.stage(reader);
    int vec_axis = -1;
    for (int a = static_cast<int>(st.op->axis.size()) - 1; a >= 0 && vec_axis < 0; --a) {
      if (st.op->axis[a].extent > 1) vec_axis = a;
    }
    if (vec_axis < 0) return false;
    bool contiguous = true, found = false;
    int64_t rows = 1;
    PostOrderVisit(st.op->body, [&](const Expr& x) {
      const auto* load = x.as<TensorLoadNode>();
      if (load == nullptr || load->tensor.get() != tensor || load->indices.empty()) return;
      found = true;
      contiguous = contiguous && load->indices.back().as<VarNode>() == st.op->axis[vec_axis].var_node();
      for (const IterVar& axis : st.op->axis) {
        const bool used = std::any_of(load->indices.begin(), load->indices.end(),
                                      [&](const Expr& e) { return UsesVar(e, axis.var_node()); });
        if (!used) rows *= std::max<int64_t>(1, axis.extent);
      }
    });
    if (!found || !contiguous || rows > 2 * lanes) return false;
  }
  return !pack.reader_stage_ids.empty();
}

// How close a sketch is to the expert's structure: every tiled stage
// attached at level 2 of its consumer (the accumulators are the register
// tile), operands packed (unless packing only copies them), no rfactor, few
// stages.
double SketchScore(const ComputeDAG& dag, const State& sketch, const TilingLevels& levels, int64_t lanes) {
  State s(dag);
  std::set<std::string> tiled;
  std::map<std::string, int> level;
  double score = 0;
  for (const Step& step : sketch.steps()) {
    if (const auto* split = std::get_if<SplitStep>(&step); split && IsTilingSplit(s, *split, levels, true)) {
      tiled.insert(s.stage(split->stage_id).name());
    } else if (const auto* at = std::get_if<ComputeAtStep>(&step)) {
      const int rank = static_cast<int>(s.stage(at->target_stage_id).op->axis.size());
      if (rank > 0) level[s.stage(at->stage_id).name()] = (at->target_iter_id + 1) / rank;
    } else if (const auto* pack = std::get_if<PackLayoutStep>(&step)) {
      // Packing an input (weights, B) pays once per call for every block
      // that streams it; packing a computed stage (padded data) only copies.
      score += s.stage(pack->stage_id).is_placeholder() && !PackOnlyCopies(s, *pack, lanes) ? 2 : -1;
    } else if (std::holds_alternative<RfactorStep>(step)) {
      score -= 3;
    }
    s = s.Apply(step);
  }
  for (const std::string& name : tiled) {
    const int l = level.count(name) ? level.at(name) : 0;
    score += l == 2 ? 4 : l == 1 ? 1 : 0;
  }
  return score - 0.5 * static_cast<double>(s.stages().size());
}

}  // namespace

std::optional<State> FillSketchSplits(const State& sketch, const TilingLevels& levels,
                                      int max_innermost_split_factor, const TilePartsOf& tile_parts,
                                      const std::function<void(const State&, Step*)>& before_apply,
                                      const RfactorLengthsOf& rfactor_lengths) {
  std::mt19937 rng(0);
  State s(sketch.init_dag());
  const std::vector<Step>& steps = sketch.steps();
  for (size_t i = 0; i < steps.size(); ++i) {
    Step step = steps[i];
    auto* split = std::get_if<SplitStep>(&step);
    if (split != nullptr && IsTilingSplit(s, *split, levels, true)) {
      const Stage& st = s.stage(split->stage_id);
      const auto parts = tile_parts(st, st.leaves[split->iter_id]);
      if (!parts) return std::nullopt;
      split->lengths = SplitLengths(*parts);
      split->extent = st.iter(split->iter_id).extent;
    } else if (split != nullptr &&
               (IsRfactorSplit(steps, static_cast<int>(i)) ||
                std::any_of(split->lengths.begin(), split->lengths.end(),
                            [](const std::optional<int64_t>& l) { return !l.has_value(); }))) {
      const int64_t extent = s.stage(split->stage_id).iter(split->iter_id).extent;
      const auto lengths = rfactor_lengths && IsRfactorSplit(steps, static_cast<int>(i))
                               ? rfactor_lengths(s.stage(split->stage_id), steps, static_cast<int>(i), extent,
                                                 split->lengths.size())
                               : SampleSplitLengths(extent, static_cast<int>(split->lengths.size()),
                                                    max_innermost_split_factor, &rng);
      split->lengths.assign(lengths.begin(), lengths.end());
      split->extent = extent;
    } else if (split == nullptr && before_apply) {
      before_apply(s, &step);
    }
    s = s.Apply(step);
  }
  return s;
}

namespace {

// Fills the sketch's splits (FillSketchSplits): tiling splits from
// ExpertTileParts, pack blocks as wide as the block's vectors.
State FillSketch(const SketchContext& ctx, const State& sketch, const TilingLevels& levels,
                 std::map<std::string, std::pair<RegisterBlockPlan, TileParts>>* plans) {
  auto tile_parts = [&](const Stage& st, int node) -> std::optional<std::vector<int64_t>> {
    auto it = plans->find(st.name());
    if (it == plans->end()) {
      RegisterBlockPlan plan = PlanRegisterBlocks(ctx, st);
      TileParts parts = ExpertTileParts(ctx, st, plan, levels.space, levels.reduce);
      it = plans->emplace(st.name(), std::make_pair(plan, parts)).first;
    }
    const TileParts& parts = it->second.second;
    const int num_axes = static_cast<int>(st.op->axis.size());
    return node < num_axes ? parts.spatial[node] : parts.reduce[node - num_axes];
  };
  auto widen_pack = [&](const State& s, Step* step) {
    auto* pack = std::get_if<PackLayoutStep>(step);
    if (pack == nullptr || pack->reader_stage_ids.size() != 1) return;
    const int reader = pack->reader_stage_ids[0];
    // The reader is tiled later (itself or its cache-write stage, the same
    // op): its plan is the one computed here.
    const RegisterBlockPlan plan = PlanRegisterBlocks(ctx, s.stage(reader));
    const TileParts parts = ExpertTileParts(ctx, s.stage(reader), plan, levels.space, levels.reduce);
    const int last = static_cast<int>(s.stage(reader).op->axis.size()) - 1;
    // Blocks as wide as a row of the register block: one stream per step.
    if (!plan.empty() && plan.vec_axis == last && parts.block.vec_length % plan.lanes == 0)
      pack->lanes = parts.block.vec_length;
  };
  return *FillSketchSplits(sketch, levels, ctx.params.max_innermost_split_factor, tile_parts, widen_pack);
}

// Unrolls the block's rows and columns and vectorizes its vector axis in
// every tiled stage (a column loop left rolled keeps its accumulators in
// memory).
State AnnotateBlocks(const State& state,
                     const std::map<std::string, std::pair<RegisterBlockPlan, TileParts>>& plans) {
  State s = state;
  for (const auto& [name, entry] : plans) {
    const RegisterBlockPlan& plan = entry.first;
    if (plan.empty()) continue;
    const int id = s.StageIndex(name);
    const int vec = InnermostLeafOf(s.stage(id), plan.vec_axis);
    if (vec >= 0 && s.stage(id).iter(vec).extent >= 2 &&
        s.stage(id).iter(vec).annotation == IteratorAnnotation::None)
      s = s.Annotate(id, vec, IteratorAnnotation::Vectorize);
    for (int axis : {plan.row_axis, plan.col_axis}) {
      const int pos = axis >= 0 ? InnermostLeafOf(s.stage(id), axis) : -1;
      if (pos >= 0 && s.stage(id).iter(pos).extent >= 2 &&
          s.stage(id).iter(pos).annotation == IteratorAnnotation::None)
        s = s.Annotate(id, pos, IteratorAnnotation::Unroll);
    }
  }
  return s;
}

// Every other stage with loops vectorizes its innermost loop where it is
// spatial, unannotated, holds no attached stage and runs 2 to 64 times.
State VectorizeOtherStages(const State& state, const std::set<std::string>& done) {
  const State bounded = InferBound(state);
  State s = state;
  for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
    if (!HasLoops(s, id) || done.count(s.stage(id).name())) continue;
    const Stage& st = bounded.stage(id);
    if (st.num_iters() == 0) continue;
    const int last = st.num_iters() - 1;
    const Iterator& it = st.iter(last);
    bool attached = false;
    for (const Stage& o : s.stages()) {
      attached = attached ||
                 (o.loc == ComputeLocKind::At && o.attach_stage == id && o.attach_node == st.leaves[last]);
    }
    if (it.kind != IteratorKind::Spatial || it.annotation != IteratorAnnotation::None || attached ||
        it.extent < 2 || it.extent > 64)
      continue;
    s = s.Annotate(id, last, IteratorAnnotation::Vectorize);
  }
  return s;
}

std::string Describe(const std::map<std::string, std::pair<RegisterBlockPlan, TileParts>>& plans,
                     const State& state) {
  std::ostringstream os;
  for (const auto& [name, entry] : plans) {
    const auto& [plan, parts] = entry;
    const int id = state.StageIndex(name);
    const Stage& st = state.stage(id);
    os << name << ": ";
    if (plan.empty()) {
      os << (plan.strided ? "no register block (no operand contiguous along the vector axis)\n"
                          : "no spatial axis above 1, no register block\n");
      continue;
    }
    const RegisterBlock& b = parts.block;
    os << "register block " << b.rows << " x " << b.vec_length << " ("
       << (plan.row_axis >= 0 ? st.op->axis[plan.row_axis].name() : std::string("-")) << " x "
       << st.op->axis[plan.vec_axis].name() << ", " << b.vectors << " vector" << (b.vectors == 1 ? "" : "s")
       << " of " << plan.lanes << " lanes): " << b.accumulators() << " accumulators + " << b.vectors + 1
       << " operand registers of " << plan.registers << ", " << plan.fma_units << " FMA unit"
       << (plan.fma_units == 1 ? "" : "s") << ", modelled " << b.throughput << " lanes/cycle; " << parts.note
       << "\n";
  }
  return os.str();
}

// A vector's worth of a row: the largest divisor of `extent` that is a
// whole number of vectors, at most `max_vectors` (independent partial sums
// hide the adds' latency); where none divides, that many vectors; a row
// shorter than that: its largest divisor within one vector.
int64_t RowVectorLength(int64_t extent, int64_t lanes, int64_t max_vectors = 4) {
  int64_t best_whole = 0, best_within = 1;
  for (int64_t d = 1; d <= extent && d <= max_vectors * lanes; ++d) {
    if (extent % d != 0) continue;
    if (d % lanes == 0) best_whole = d;
    if (d <= lanes) best_within = d;
  }
  if (best_whole > 0) return best_whole;
  // No whole vectors divide the row (1500): whole vectors with a guarded last
  // part, unless the row is shorter than that.
  return extent >= max_vectors * lanes ? max_vectors * lanes : best_within;
}

// Rows of scores computed per block of output rows (the row-fusion rule's
// rows reducing another axis): kScoreRows rows x kScoreVectors vectors of
// accumulators, 8 of the 16 vector registers of AVX2, the rest for the
// operands.
constexpr int64_t kScoreRows = 4;
constexpr int64_t kScoreVectors = 2;

// The rows of a block: the largest divisor of `extent` up to kScoreRows. A
// guarded last block would test its row inside the reduction loop, where it
// keeps the accumulators from staying in registers (3x slower at 197 rows).
int64_t RowBlockLength(int64_t extent) {
  int64_t best = 1;
  for (int64_t d = 1; d <= std::min(extent, kScoreRows); ++d) {
    if (extent % d == 0) best = d;
  }
  return best;
}

// Whether a stage only moves data: its value is a load or a constant, chosen
// by conditions on its indices (padding), with no arithmetic on values and
// no reduction. Recomputing such a stage per tile costs what reading it
// would; a transform with arithmetic (Winograd's input tiles) may be worth
// computing where it is used, and is left to the sketch's order.
bool OnlyMovesData(const Stage& st) {
  if (!st.op->reduce_axis.empty()) return false;
  bool moves = true;
  PostOrderVisit(st.op->body, [&](const Expr& x) {
    const auto* call = x.as<CallNode>();
    if ((call != nullptr && call->op != Intrinsic::IfThenElse) || x.as<ReduceNode>() != nullptr)
      moves = false;
    if (const auto* b = x.as<BinaryNode>(); b != nullptr && b->dtype.is_float()) moves = false;
  });
  return moves;
}

// Over the stages that only move data (OnlyMovesData) computed at another
// stage, after bound inference: the largest ratio of the elements a stage
// computes (its loops, times the iterations of the loops around its attach
// point, through nested attach points) to its op's size; 1 without such
// stages. A padded copy of a convolution's input attached in the output's
// tiles is computed again for every tile of output channels (79 times over
// in ResNet-50's stride-2 3x3 convolution of 512 channels at 7 x 7, which
// ran 1.3x slower so).
double WorstRecompute(const State& bounded) {
  double worst = 1;
  for (const Stage& st : bounded.stages()) {
    if (st.loc != ComputeLocKind::At || st.is_placeholder() || !OnlyMovesData(st)) continue;
    double computed = 1, region = 1;
    for (int i = 0; i < st.num_iters(); ++i)
      computed *= static_cast<double>(std::max<int64_t>(1, st.iter(i).extent));
    for (const IterVar& axis : st.op->axis) region *= static_cast<double>(std::max<int64_t>(1, axis.extent));
    for (const Stage* at = &st; at->loc == ComputeLocKind::At && at->attach_stage >= 0;) {
      const Stage& target = bounded.stage(at->attach_stage);
      const int pos = target.LeafIndex(at->attach_node);
      if (pos < 0) break;
      for (int i = 0; i <= pos; ++i)
        computed *= static_cast<double>(std::max<int64_t>(1, target.iter(i).extent));
      at = &target;
    }
    worst = std::max(worst, computed / region);
  }
  return worst;
}

// The expert passes over a sketch whose state computes a stage more than
// this many times over (WorstRecompute) while another sketch's does not;
// the halo of neighbouring tiles stays below it.
constexpr double kMaxExpertRecompute = 2;

int RootStages(const State& s) {
  int n = 0;
  for (const Stage& st : s.stages()) n += !st.is_placeholder() && st.loc == ComputeLocKind::Root;
  return n;
}

// Reductions along the contiguous axis (softmax, layer_norm): the sketch that
// computes every stage per output row with the reductions factored over
// vectors of the row (the row-fusion rule's, rule_row_fusion.cc), its splits
// a vector's worth of the row. Of the sketches that factor a reduction, the
// one with the fewest stages at the root; with `fused_rows_only`, only one
// whose every stage is inside the output's loops. nullopt where none.
std::optional<State> RowExpert(const SketchContext& ctx, const std::vector<State>& sketches,
                               bool fused_rows_only, std::string* note) {
  const int64_t lanes = std::max<int64_t>(1, ctx.task.hardware_params.vector_unit_bytes / 4);
  const State* best = nullptr;
  int best_roots = 0;
  for (const State& sketch : sketches) {
    const auto& steps = sketch.steps();
    if (std::none_of(steps.begin(), steps.end(),
                     [](const Step& st) { return std::holds_alternative<RfactorStep>(st); }))
      continue;
    const int roots = RootStages(sketch);
    if (best == nullptr || roots < best_roots) best = &sketch, best_roots = roots;
  }
  if (best == nullptr || (fused_rows_only && best_roots != 1)) return std::nullopt;
  std::ostringstream os;
  State s(best->init_dag());
  const std::vector<Step>& steps = best->steps();
  int64_t block_rows = 1;
  for (size_t i = 0; i < steps.size(); ++i) {
    Step step = steps[i];
    if (auto* split = std::get_if<SplitStep>(&step)) {
      const bool unknown = std::any_of(split->lengths.begin(), split->lengths.end(),
                                       [](const std::optional<int64_t>& l) { return !l.has_value(); });
      if (unknown || IsRfactorSplit(steps, static_cast<int>(i))) {
        const Stage& st = s.stage(split->stage_id);
        const int64_t extent = st.iter(split->iter_id).extent;
        const int num_axes = static_cast<int>(st.op->axis.size());
        const std::string& iter = st.iter(split->iter_id).name;
        // The output's blocks of rows, a scores row's vectors, or a vector's
        // worth of a row.
        const bool row_block = num_axes >= 2 && iter == st.op->axis[num_axes - 2].name();
        const bool scores =
            !st.op->reduce_axis.empty() && st.iter(split->iter_id).kind == IteratorKind::Spatial;
        // A block of one row takes as many vectors as a row of a reduction.
        const int64_t length = row_block ? RowBlockLength(extent)
                               : scores  ? RowVectorLength(extent, lanes, block_rows > 1 ? kScoreVectors : 4)
                                         : RowVectorLength(extent, lanes);
        if (row_block) block_rows = length;
        os << st.name() << "." << st.iter(split->iter_id).name << ": " << length << " of " << extent << "; ";
        split->lengths.assign(split->lengths.size(), int64_t{1});
        split->lengths.back() = length;
        split->extent = extent;
      }
    }
    s = s.Apply(step);
  }
  std::mt19937 rng(0);
  s = MakeParallelRule()->Apply(ctx, s, &rng);
  *note = "rows: every stage computed per output row, reductions factored over vectors of " +
          std::to_string(lanes) + " lanes (" + os.str() + ")";
  return s;
}

// The untuned default of a task without tiled stages (element-wise,
// injective, layout transforms) is a parallel, vectorized plain loop nest
// (BaselineStates), which computes every stage in full: a concat, a transpose
// to NCHW, a batch norm, a ReLU and a transpose back each wrote the whole
// tensor (DenseNet's 58 such tasks took 22% of its time on a 2-core Zen 3).
// Its sketch inlines the element-wise stages; the defaults' own steps on it
// (reductions interchanged where that changes the nest, then the parallel
// and vectorize rules) give the expert. Nothing where the sketch inlines
// nothing (the defaults already are that nest) or no such state checks.
std::optional<State> InlinedLoopNest(const SketchContext& ctx, const State& sketch) {
  auto inlined = [](const State& state) {
    return std::count_if(state.stages().begin(), state.stages().end(),
                         [](const Stage& st) { return st.loc == ComputeLocKind::Inlined; });
  };
  if (inlined(sketch) <= inlined(State(ctx.task.compute_dag))) return std::nullopt;
  for (const State& start : {InterchangeReductions(sketch), sketch}) {
    const std::optional<State> s = ParallelVectorized(ctx, start);
    std::string message;
    if (s && CheckState(*s, &message).empty()) return s;
  }
  return std::nullopt;
}

}  // namespace

ExpertSchedule MakeExpertSchedule(const SearchTask& task, const SearchParams& params,
                                  const std::vector<State>& sketches) {
  ExpertSchedule out;
  if (!params.use_expert_schedule) {
    out.reason = "SearchParams.use_expert_schedule is off";
    return out;
  }
  if (task.target.kind->is_gpu) return MakeGpuExpertSchedule(task, params, sketches);
  const TilingLevels levels = CpuTilingLevels(params);
  const int64_t lanes = std::max<int64_t>(1, task.hardware_params.vector_unit_bytes / 4);
  std::vector<std::pair<double, size_t>> order;
  for (size_t i = 0; i < sketches.size(); ++i) {
    try {
      order.emplace_back(SketchScore(task.compute_dag, sketches[i], levels, lanes), i);
    } catch (const std::exception&) {
      // A sketch that does not replay is skipped.
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  const SketchContext ctx{task, params};
  // Row reductions computed inside the output's rows (softmax, layer_norm)
  // take the per-row expert before any register block.
  std::string row_note;
  if (const std::optional<State> rows = RowExpert(ctx, sketches, true, &row_note)) {
    std::string message;
    if (CheckState(*rows, &message).empty()) {
      out.state = *rows;
      out.note = row_note;
      return out;
    }
  }
  std::string dot_note;
  if (const std::optional<State> dot = DotProductExpert(ctx, &dot_note)) {
    std::string message;
    if (CheckState(*dot, &message).empty()) {
      out.state = *dot;
      out.note = dot_note;
      return out;
    }
  }
  const std::string kNoSketch = "the task has no sketch";
  std::string last_failure = kNoSketch;
  std::optional<ExpertSchedule> recomputing;  // the first state that recomputes a stage, taken last
  std::optional<State> untiled;               // the best-scored sketch without tiled stages, filled
  for (const auto& [score, i] : order) {
    std::map<std::string, std::pair<RegisterBlockPlan, TileParts>> plans;
    try {
      State s = FillSketch(ctx, sketches[i], levels, &plans);
      if (plans.empty()) {
        // A sketch without tiled stages says less than another sketch's failure.
        if (last_failure == kNoSketch)
          last_failure = "no stage of the task asks for multi-level tiling (a reduction with reuse)";
        if (!untiled) untiled = s;
        continue;
      }
      if (std::all_of(plans.begin(), plans.end(),
                      [](const auto& entry) { return entry.second.first.strided; })) {
        last_failure =
            "no operand of a tiled stage is contiguous along its vector axis (each vector lane would load "
            "from another row)";
        continue;
      }
      std::mt19937 rng(0);
      s = MakeParallelRule()->Apply(ctx, s, &rng);
      s = AnnotateBlocks(s, plans);
      std::set<std::string> tiled;
      for (const auto& entry : plans) tiled.insert(entry.first);
      s = VectorizeOtherStages(s, tiled);
      std::string message;
      const std::string failed = CheckState(s, &message);
      if (!failed.empty()) {
        last_failure =
            "the expert's state of sketch " + std::to_string(i) + " fails " + failed + ": " + message;
        continue;
      }
      out.state = s;
      out.note = Describe(plans, s);
      if (WorstRecompute(InferBound(s)) <= kMaxExpertRecompute) return out;
      if (!recomputing) recomputing = out;
    } catch (const std::exception& e) {
      last_failure = std::string("sketch ") + std::to_string(i) + ": " + e.what();
    }
  }
  if (recomputing) return *recomputing;
  std::string note;
  if (const std::optional<State> rows = RowExpert(ctx, sketches, false, &note)) {
    std::string message;
    const std::string failed = CheckState(*rows, &message);
    if (failed.empty()) {
      out.state = *rows;
      out.note = note;
      return out;
    }
    last_failure = "the expert's per-row state fails " + failed + ": " + message;
  }
  if (untiled) {
    if (std::optional<State> inlined = InlinedLoopNest(ctx, *untiled)) {
      out.state = *inlined;
      out.note =
          "no stage asks for multi-level tiling: the sketch's loop nest (element-wise stages inlined), "
          "outer loops parallel, inner loops vectorized";
      return out;
    }
  }
  out.reason = last_failure;
  return out;
}

}  // namespace autosched
