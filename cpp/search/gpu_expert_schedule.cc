// The GPU expert schedule (expert_schedule.h): the tiles of a classic GEMM
// kernel written into a GPU sketch, the rest of its annotations chosen by
// the GPU init rules.
//
// A matrix product on a GPU runs fastest in the shape libraries give it: a
// group of 16 x 16 work items computes a 128 x 128 tile of the output, each
// work item an 8 x 8 block of accumulators in registers (an outer product of
// 8 values of each operand per step of the reduction), and the group steps
// through the reduction 8 at a time with both operands' tiles in shared
// memory, fetched cooperatively with vector loads and double-buffered. In
// the sketch "SSSRRSRS" that is: spatial tiles (blocks, 1, 16, 8 or 1, 1 or 8)
// on the two innermost spatial axes, every other spatial axis on blocks, and
// (K/8, 8, 1) on the main reduction axis. Smaller work-item tiles and fewer
// work items are tried when the extents or the device's limits refuse these.
// Of the annotations the thread-bind rule samples, the state with the most
// double-buffered shared stages, the widest fetches and a block swizzle is
// kept (of a fixed set of seeds). The search mutates it like any state.
//
// Only stages with at most three spatial axes of extent > 1 and one main
// reduction axis are tiled this way (matmul, dense, batch_matmul); a task
// without one gets no GPU expert schedule, with the reason.
#include <algorithm>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "lower/lower.h"
#include "schedule/infer_bound.h"
#include "search/expert_schedule.h"
#include "search/gpu_rules.h"
#include "search/register_block.h"
#include "search/search_util.h"
#include "search/sketch_rules.h"

namespace autosched {
namespace {

struct GpuRecipe {
  int64_t item_tile;  // accumulators per work item along each of the two axes
  int64_t items;      // work items along each of the two axes
  int64_t k_tile;     // reduction steps per shared tile
};
constexpr GpuRecipe kRecipes[] = {{8, 16, 8}, {4, 16, 8}, {8, 8, 8}, {4, 8, 8}, {4, 8, 4}, {2, 8, 4}};
constexpr int kAnnotationSeeds = 32;

int64_t DivisorAtMost(int64_t n, int64_t cap) {
  for (int64_t d = std::min(n, cap); d > 1; --d) {
    if (n % d == 0) return d;
  }
  return 1;
}

TilingLevels GpuTilingLevels(const SearchParams& params) {
  const std::string& s = params.gpu_tiling_structure;
  return {static_cast<int>(std::count(s.begin(), s.end(), 'S')),
          static_cast<int>(std::count(s.begin(), s.end(), 'R'))};
}

// The parts of each root node of a tiled stage (op axes, then reduce axes),
// or an empty map when the stage is not GEMM-like or the levels are not the
// five spatial and three reduce ones of "SSSRRSRS".
std::map<int, std::vector<int64_t>> GemmParts(const Stage& st, const TilingLevels& levels, const GpuRecipe& r,
                                              bool rows_innermost) {
  std::map<int, std::vector<int64_t>> parts;
  if (levels.space != 5 || levels.reduce != 3) return parts;
  const int num_axes = static_cast<int>(st.op->axis.size());
  std::vector<int> wide;
  for (int a = 0; a < num_axes; ++a) {
    if (st.op->axis[a].extent > 1) wide.push_back(a);
  }
  int main_reduce = -1, wide_reduce = 0;
  for (int a = 0; a < static_cast<int>(st.op->reduce_axis.size()); ++a) {
    if (st.op->reduce_axis[a].extent > 1) {
      ++wide_reduce;
      if (main_reduce < 0) main_reduce = a;
    }
  }
  if (wide.empty() || wide.size() > 3 || wide_reduce != 1) return parts;
  const int cols = wide.back(), rows = wide.size() >= 2 ? wide[wide.size() - 2] : -1;
  for (int a = 0; a < num_axes; ++a) {
    const int64_t extent = st.op->axis[a].extent;
    std::vector<int64_t> p = {extent, 1, 1, 1, 1};
    if (a == cols || a == rows) {
      const int64_t tile = DivisorAtMost(extent, r.item_tile);
      const int64_t items = DivisorAtMost(extent / tile, r.items);
      const bool innermost = (a == rows) == rows_innermost;
      p = {extent / tile / items, 1, items, innermost ? 1 : tile, innermost ? tile : 1};
    }
    parts[a] = p;
  }
  for (int a = 0; a < static_cast<int>(st.op->reduce_axis.size()); ++a) {
    const int64_t extent = st.op->reduce_axis[a].extent;
    const int64_t k_tile = a == main_reduce ? DivisorAtMost(extent, r.k_tile) : 1;
    parts[num_axes + a] = {extent / k_tile, k_tile, 1};
  }
  return parts;
}

// The sketch with its tiling splits filled from GemmParts (FillSketchSplits);
// nullopt when a tiled stage is not GEMM-like or no stage is tiled.
std::optional<State> FillGemmTiles(const State& sketch, const TilingLevels& levels, const GpuRecipe& r,
                                   bool rows_innermost, const SearchParams& params) {
  bool tiled = false;
  auto tile_parts = [&](const Stage& st, int node) -> std::optional<std::vector<int64_t>> {
    const auto parts = GemmParts(st, levels, r, rows_innermost);
    if (!parts.count(node)) return std::nullopt;
    tiled = true;
    return parts.at(node);
  };
  std::optional<State> s = FillSketchSplits(sketch, levels, params.max_innermost_split_factor, tile_parts);
  if (!tiled) return std::nullopt;
  return s;
}

// How close the sampled annotations are to the library kernel's: shared
// stages double-buffered, wide fetches, a block swizzle.
double AnnotationScore(const State& s) {
  double score = 0;
  for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
    if (DoubleBufferStep(s, id) >= 0) score += 2;
    if (SwizzleStep(s, id) >= 0) score += 1;
  }
  // Unrolled enough for the 8 x 8 x 8 steps of a shared tile: the
  // accumulators are indexed by constants, so they stay in registers.
  for (const Step& step : s.steps()) {
    const auto* pragma = std::get_if<PragmaStep>(&step);
    const std::string prefix = "auto_unroll_max_step$";
    if (pragma != nullptr && pragma->pragma_type.rfind(prefix, 0) == 0 &&
        std::stoll(pragma->pragma_type.substr(prefix.size())) >= 512)
      score += 2;
  }
  for (int j : SharedStageSteps(s, true)) {
    const auto& split = std::get<SplitStep>(s.steps()[j]);
    if (!split.lengths.empty() && split.lengths.back())
      score += static_cast<double>(*split.lengths.back()) / 4;
  }
  return score;
}

}  // namespace

ExpertSchedule MakeGpuExpertSchedule(const SearchTask& task, const SearchParams& params,
                                     const std::vector<State>& sketches) {
  ExpertSchedule out;
  const SketchContext ctx{task, params};
  const TilingLevels levels = GpuTilingLevels(params);
  InitRuleList rules = DefaultGpuInitRules();
  rules.erase(rules.begin());  // the tiles are the expert's, not fill-tile-size's
  std::string last_failure = "no sketch has a GEMM-like tiled stage (at most 3 spatial axes, one reduction)";
  for (const GpuRecipe& recipe : kRecipes) {
    for (bool rows_innermost : {true, false}) {
      for (size_t i = 0; i < sketches.size(); ++i) {
        std::optional<State> filled;
        try {
          filled = FillGemmTiles(sketches[i], levels, recipe, rows_innermost, params);
        } catch (const std::exception& e) {
          last_failure = "sketch " + std::to_string(i) + ": " + e.what();
        }
        if (!filled) continue;
        std::optional<State> best;
        double best_score = -1;
        for (int seed = 0; seed < kAnnotationSeeds; ++seed) {
          std::mt19937 rng(seed);
          std::string message, failed;
          try {
            State s = *filled;
            for (const auto& rule : rules) s = rule->Apply(ctx, s, &rng);
            const LoweredFunc f = Lower(s);
            failed = CheckGpuState(ctx, s, f, &message);
            if (failed.empty() && AnnotationScore(s) > best_score) {
              best_score = AnnotationScore(s);
              best = s;
            }
          } catch (const std::exception& e) {
            failed = "lower";
            message = e.what();
          }
          if (!failed.empty())
            last_failure = "sketch " + std::to_string(i) + " fails " + failed + ": " + message;
        }
        if (best) {
          std::ostringstream note;
          note << "GEMM tiles: at most " << recipe.items << " x " << recipe.items << " work items of at most "
               << recipe.item_tile << " x " << recipe.item_tile << " accumulators (rows "
               << (rows_innermost ? "innermost" : "outer") << "), reduction tiles of " << recipe.k_tile
               << "; annotation score " << best_score << "\n";
          out.state = *best;
          out.note = note.str();
          return out;
        }
      }
    }
  }
  out.reason = last_failure;
  return out;
}

}  // namespace autosched
