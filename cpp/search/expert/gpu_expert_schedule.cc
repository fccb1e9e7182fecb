// The GPU expert schedule (expert_schedule.h): the tiles of a classic GEMM
// kernel written into a GPU sketch, the rest of its annotations chosen by
// the GPU init rules.
//
// A matrix product on a GPU runs fastest in the shape libraries give it: a
// group of 16 x 16 work items computes a 128 x 128 tile of the output, each
// work item an 8 x 8 block of accumulators in registers (an outer product of
// 8 values of each operand per step of the reduction), and the group steps
// through the reduction 8 at a time with both operands' tiles in shared
// memory, fetched cooperatively with vector loads and double-buffered. Each
// work item's 8 rows (and columns) are two runs of 4, half the group's tile
// apart, so that a warp's float4 reads of a register tile cover contiguous
// shared memory. In the sketch "SSSRRSRS" that is: spatial tiles (blocks, 2,
// 16, 1, 4) on the two innermost spatial axes (the 2 bound to a virtual
// thread, which lowering interleaves into the innermost body), every other
// spatial axis on blocks, and (K/8, 8, 1) on the main reduction axis, so
// that both register tiles are loaded once per reduction step; A's shared
// copy stored transposed lets its values come in as vectors too. Then the
// 8 x 8 tile without virtual threads (blocks, 1, 16, 1, 8), then one
// operand's tile one level further out (1, 8 on that axis). Smaller work-item tiles and fewer
// work items are tried when the extents or the device's limits refuse these.
// Before all of them comes the placement of the fastest kernel found on an
// H200 (ItemTiles::Runs, with its own annotations): on that device it ran
// 1.3 times as fast as the library kernel's.
// The annotations are the library kernel's too, fixed through the thread-
// bind rule's choices (LibraryAnnotations); where the device's limits refuse
// them, the best-scored of a fixed set of sampled ones is kept. The search
// mutates the expert like any state.
//
// Only stages with at most three spatial axes of extent > 1 and one main
// reduction axis are tiled this way (matmul, dense, batch_matmul). A direct
// NCHW convolution (three wide spatial axes: channels, rows, columns; its
// input channels and its window reduced) gets the tiles of the fastest
// kernel a sweep around the search's best found on an H200 (ConvParts); a
// task with neither gets no GPU expert schedule, with the reason.
#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "lower/lower.h"
#include "schedule/infer_bound.h"
#include "search/expert/expert_schedule.h"
#include "search/rules/cpu/register_block.h"
#include "search/rules/gpu/gpu_rules.h"
#include "search/rules/search_util.h"
#include "search/rules/sketch_rules.h"

namespace autosched {
namespace {

// Where each work item's accumulator tile sits in the five spatial levels:
// both axes in the innermost level (an outer product per reduction step),
// first split in two virtual threads (so a work item's two halves lie half
// a group tile apart, and the group's vector reads of a register tile are
// contiguous across work items), or one axis there and the other one level
// out.
//
// Runs: the placement of the fastest matmul kernel found on an H200: the
// search's best (4096^3: 2.99 ms, against 3.92 ms for Interleaved), then
// the fastest of a sweep around it (2.93 ms; docs/opencl.md). A work item's
// rows are two interleaved virtual threads of 4 adjacent rows, its columns
// two interleaved virtual threads of 2 runs of 2, and the reduction tile is
// stepped as 2 x 4, so that A's register tile of a step (4 values of the
// reduction for each of 8 rows) is loaded one step ahead (pipelined) while
// B's small tile is read next to its use. Measured on that H200 with no
// search, the search's kernel ran 1.25 to 1.4 times as fast as Interleaved
// on five matmuls whose extents are multiples of 128 (128 x 768 x 3072 to
// 4096^3); it is taken only where its tiles divide the extents exactly.
enum class ItemTiles { Runs, Interleaved, BothInnermost, RowsInnermost, ColsInnermost };
constexpr ItemTiles kItemTilePlacements[] = {ItemTiles::Runs, ItemTiles::Interleaved,
                                             ItemTiles::BothInnermost, ItemTiles::RowsInnermost,
                                             ItemTiles::ColsInnermost};
const char* ItemTilesName(ItemTiles t) {
  switch (t) {
    case ItemTiles::Runs:
      return "rows in two interleaved virtual threads of 4, columns in two interleaved virtual threads of "
             "runs of 2";
    case ItemTiles::Interleaved: return "both innermost, in two interleaved virtual threads";
    case ItemTiles::BothInnermost: return "both innermost";
    case ItemTiles::RowsInnermost: return "rows innermost";
    case ItemTiles::ColsInnermost: return "columns innermost";
  }
  return "?";
}

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
                                              ItemTiles placement) {
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
      const bool innermost = placement == ItemTiles::BothInnermost || placement == ItemTiles::Interleaved ||
                             (a == rows) == (placement == ItemTiles::RowsInnermost);
      const int64_t halves = placement == ItemTiles::Interleaved && tile % 2 == 0 && tile >= 4 ? 2 : 1;
      p = {extent / tile / items, halves, items, innermost ? 1 : tile, innermost ? tile / halves : 1};
      if (placement == ItemTiles::Runs) {
        // Only the tiling that kernel was measured with (16 x 16 work items
        // of 8 x 8, reduction tiles of 8): on a 1000^3 matmul, filled with
        // divisors instead (5 x 5 work items), it ran 7 times as slow as the
        // library kernel's placement.
        if (rows < 0 || r.item_tile != 8 || r.items != 16 || r.k_tile != 8 || extent % 128 != 0) return {};
        p = {extent / 128, 2, 16, a == cols ? 2 : 1, a == cols ? 2 : 4};
      }
    }
    parts[a] = p;
  }
  for (int a = 0; a < static_cast<int>(st.op->reduce_axis.size()); ++a) {
    const int64_t extent = st.op->reduce_axis[a].extent;
    const int64_t k_tile = a == main_reduce ? DivisorAtMost(extent, r.k_tile) : 1;
    if (placement == ItemTiles::Runs && a == main_reduce && k_tile != 8) return {};
    const int64_t k_inner = placement == ItemTiles::Runs && a == main_reduce ? 4 : 1;
    parts[num_axes + a] = {extent / k_tile, k_tile / k_inner, k_inner};
  }
  return parts;
}

// The sketch with its tiling splits filled from `parts_of` (a stage's parts
// per root node, GemmParts or ConvParts; empty for a stage it does not
// tile) by FillSketchSplits; nullopt when it tiles no stage.
using PartsOf = std::function<std::map<int, std::vector<int64_t>>(const Stage&)>;
std::optional<State> FillTiles(const State& sketch, const TilingLevels& levels, const SearchParams& params,
                               const PartsOf& parts_of) {
  bool tiled = false;
  auto tile_parts = [&](const Stage& st, int node) -> std::optional<std::vector<int64_t>> {
    const auto parts = parts_of(st);
    if (!parts.count(node)) return std::nullopt;
    tiled = true;
    return parts.at(node);
  };
  std::optional<State> s = FillSketchSplits(sketch, levels, params.max_innermost_split_factor, tile_parts);
  if (!tiled) return std::nullopt;
  return s;
}

// Whether stage `st` computes a direct convolution of one group in the
// NCHW layout (the attrs ops.conv2d_nchw gives it): its spatial axes are
// then batch, channels, rows and columns, its first reduce axis the input
// channels.
bool IsNchwConvolution(const Stage& st) {
  const auto& attrs = st.op->attrs;
  const auto layout = attrs.find("layout"), groups = attrs.find("groups");
  return layout != attrs.end() && layout->second == "NCHW" &&
         (groups == attrs.end() || groups->second == "1");
}

// The tiles of a direct convolution: 64 work items, each computing 2 x 2
// outputs of one channel (8 channels x 2 rows x 4 columns of work items, so
// a group's tile is 8 channels x 4 rows x 8 columns), the input channels
// stepped 8 at a time (as 2 x 4), the window whole and innermost. On the
// 64 x 56 x 56 3x3 convolution of ResNet-50 on an H200, with the
// annotations of ConvAnnotations, it ran 16.5 us, against 17.0-17.2 us for
// cuDNN and 18.1 us for the best of a 1000-trial search. With the same
// annotations, the next placements of a sweep of 64 to 256 work items of 2
// to 8 outputs ran 16.6 and 16.9 us, the search's best one 17.1 us
// (docs/opencl.md). Taken only for an NCHW convolution of one group whose
// extents these tiles divide (channels, input channels and columns by 8,
// rows by 4); an empty map otherwise.
std::map<int, std::vector<int64_t>> ConvParts(const Stage& st, const TilingLevels& levels) {
  std::map<int, std::vector<int64_t>> parts;
  if (levels.space != 5 || levels.reduce != 3) return parts;
  const int num_axes = static_cast<int>(st.op->axis.size());
  std::vector<int> wide;
  for (int a = 0; a < num_axes; ++a) {
    if (st.op->axis[a].extent > 1) wide.push_back(a);
  }
  std::vector<int> wide_reduce;
  for (int a = 0; a < static_cast<int>(st.op->reduce_axis.size()); ++a) {
    if (st.op->reduce_axis[a].extent > 1) wide_reduce.push_back(a);
  }
  if (!IsNchwConvolution(st) || wide.size() != 3 || wide_reduce.size() < 2) return parts;
  const int channels = wide[0], rows = wide[1], cols = wide[2], in_channels = wide_reduce[0];
  auto extent = [&](int a) { return st.op->axis[a].extent; };
  const int64_t in_extent = st.op->reduce_axis[in_channels].extent;
  if (extent(channels) % 8 != 0 || extent(rows) % 4 != 0 || extent(cols) % 8 != 0 || in_extent % 8 != 0)
    return parts;
  for (int a = 0; a < num_axes; ++a) parts[a] = {extent(a), 1, 1, 1, 1};
  parts[channels] = {extent(channels) / 8, 1, 8, 1, 1};
  parts[rows] = {extent(rows) / 4, 1, 2, 2, 1};
  parts[cols] = {extent(cols) / 8, 1, 4, 1, 2};
  for (int a = 0; a < static_cast<int>(st.op->reduce_axis.size()); ++a) {
    const int64_t e = st.op->reduce_axis[a].extent;
    parts[num_axes + a] =
        a == in_channels ? std::vector<int64_t>{e / 8, 2, 4} : std::vector<int64_t>{1, 1, e};
  }
  return parts;
}

// How close the sampled annotations are to the library kernel's: shared
// stages double-buffered, wide fetches and register-tile loads, a block
// swizzle, rows padded by 4 (no bank conflicts, float4 loads stay aligned)
// rather than 1.
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
      score += 8;  // outweighs the rest: without it the accumulators go to local memory
  }
  for (int j : SharedStageSteps(s, false)) {
    const int64_t offset = std::get<StorageAlignStep>(s.steps()[j]).offset;
    score += offset % 4 == 0 ? 1 : -1;
  }
  for (int j : SharedStageSteps(s, true)) {
    const auto& split = std::get<SplitStep>(s.steps()[j]);
    if (!split.lengths.empty() && split.lengths.back())
      score += static_cast<double>(*split.lengths.back()) / 4;
  }
  return score;
}

// Why `s` cannot be the expert ("" when it can): a lowering error or a
// device limit (CheckGpuState).
std::string Failure(const SketchContext& ctx, const State& s) {
  std::string message, failed;
  try {
    failed = CheckGpuState(ctx, s, Lower(s), &message);
  } catch (const std::exception& e) {
    failed = "lower";
    message = e.what();
  }
  return failed.empty() ? "" : failed + ": " + message;
}

// pragma auto_unroll_max_step on stage `id`: the smallest useful candidate
// from `at_least` on, else the largest useful one.
State WithUnroll(const SketchContext& ctx, const State& s, int id, int64_t at_least) {
  const std::vector<int64_t> useful =
      UsefulUnrollSteps(AutoUnrollCandidates(ctx), StageIterations(s.stage(id)));
  if (useful.empty()) return s;
  const auto it = std::find_if(useful.begin(), useful.end(), [&](int64_t v) { return v >= at_least; });
  const int64_t value = it != useful.end() ? *it : useful.back();
  return s.Apply(PragmaStep{id, 0, "auto_unroll_max_step$" + std::to_string(value)});
}

// `s` after the GPU vectorize init rule (it acts on Mali-like devices
// only), when it lowers within the device's limits; else nullopt, and why
// in `failure`.
std::optional<State> VectorizedIfValid(const SketchContext& ctx, State s, std::mt19937* rng,
                                       std::string* failure) {
  for (const auto& rule : DefaultGpuInitRules()) {
    if (rule->name() == "vectorize") s = rule->Apply(ctx, s, rng);
  }
  *failure = Failure(ctx, s);
  if (failure->empty()) return s;
  return std::nullopt;
}

// The library kernel's annotations on the filled sketch: the widest vector
// fetches and register-tile loads, A's shared copy transposed so its
// register tile takes vectors, rows padded by 4, both shared stages double-
// buffered, groups swizzled in bands of 8, and the smallest unroll depth
// from 512 on among the useful ones for the reduction and for the stage
// storing its accumulators (so they are indexed by constants); then the same without double
// buffering, then compact rows without the transposition. The first that
// lowers within the device's limits; nullopt (and why) when none does.
std::optional<State> LibraryAnnotations(const SketchContext& ctx, const State& filled, std::string* failure) {
  ThreadBindChoices full{.swizzle_width = 8,
                         .pad_offset = 4,
                         .widest_vectors = true,
                         .double_buffer = true,
                         .transpose = true,
                         .pipeline_register_tiles = false};
  ThreadBindChoices single = full;
  single.double_buffer = false;
  ThreadBindChoices compact = single;
  compact.pad_offset = 0;
  compact.transpose = false;
  for (const ThreadBindChoices& choices : {full, single, compact}) {
    std::mt19937 rng(0);  // nothing left to sample on a GEMM-like sketch but the Mali vectorize rule's loops
    State s = BindThreads(ctx, filled, choices, &rng);
    for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
      // The reduction and the root stage that stores its accumulators (the
      // loops over them must unroll too, or they go to local memory).
      if (HasLoops(s, id) && (HasReduceIter(s.stage(id)) || s.stage(id).loc == ComputeLocKind::Root))
        s = WithUnroll(ctx, s, id, 512);
    }
    if (std::optional<State> valid = VectorizedIfValid(ctx, s, &rng, failure)) return valid;
  }
  return std::nullopt;
}

// `s` with the copy into stage `id` (a register tile's load or a shared
// stage's cooperative fetch) split by `width` lanes (the split the thread-
// bind rule gave it), or `s` when it has no such split.
State WithCopyWidth(const State& s, int id, int64_t width) {
  std::vector<Step> steps = s.steps();
  for (int j : SharedStageSteps(s, true)) {
    auto& split = std::get<SplitStep>(steps[j]);
    if (split.stage_id != id) continue;
    split.lengths[0] = width;
    return State::FromSteps(s.init_dag(), steps);
  }
  return s;
}

// The annotations of the Runs placement's kernel: fetches of 2 lanes (1
// for A's: 2% faster with the rows in virtual threads), rows padded by 4,
// A's shared copy transposed, both shared stages double-
// buffered, groups swizzled in bands of 2; A's register tile (the one read
// along the columns of the transposed copy) read lane by lane and pipelined
// at the outermost reduce loop inside the shared tile; unroll depths of 64
// for the reduction and 16 for the stage storing its accumulators.
std::optional<State> RunsAnnotations(const SketchContext& ctx, const State& filled, std::string* failure) {
  const ThreadBindChoices choices{.swizzle_width = 2,
                                  .pad_offset = 4,
                                  .widest_vectors = true,
                                  .fetch_width = 2,
                                  .double_buffer = true,
                                  .transpose = true,
                                  .pipeline_register_tiles = false};
  std::mt19937 rng(0);
  State s = BindThreads(ctx, filled, choices, &rng);
  for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
    if (s.stage(id).scope == MemScope::Shared && s.stage(id).storage_transposed) s = WithCopyWidth(s, id, 1);
  }
  for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
    if (!IsRegisterTile(s, id) || !s.stage(s.dag().access(id).producers[0]).storage_transposed) continue;
    s = WithCopyWidth(s, id, 1);
    const std::vector<int> nodes = PipelineNodes(s, id);
    if (nodes.empty()) continue;
    if (std::optional<State> pipelined = PipelineRegisterTile(s, id, nodes.front())) s = *pipelined;
  }
  for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
    if (!HasLoops(s, id)) continue;
    if (HasReduceIter(s.stage(id)))
      s = WithUnroll(ctx, s, id, 64);
    else if (s.stage(id).loc == ComputeLocKind::Root)
      s = WithUnroll(ctx, s, id, 16);
  }
  return VectorizedIfValid(ctx, s, &rng, failure);
}

// The annotations of ConvParts' kernel: scalar fetches into compact shared
// rows (on that H200, fetches of 2 or 4 lanes cost it 7 to 28%, rows padded
// by 1 cost it 7%), no double buffering, register tiles loaded lane by lane
// where the sketch puts them, groups swizzled in bands of 8, and an unroll
// depth of 512 for the reduction.
std::optional<State> ConvAnnotations(const SketchContext& ctx, const State& filled, std::string* failure) {
  const ThreadBindChoices choices{.swizzle_width = 8,
                                  .pad_offset = 0,
                                  .widest_vectors = false,
                                  .fetch_width = 1,
                                  .double_buffer = false,
                                  .transpose = false,
                                  .pipeline_register_tiles = false};
  std::mt19937 rng(0);
  State s = BindThreads(ctx, filled, choices, &rng);
  for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
    if (IsRegisterTile(s, id)) s = WithCopyWidth(s, id, 1);
  }
  for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
    if (HasLoops(s, id) && HasReduceIter(s.stage(id))) s = WithUnroll(ctx, s, id, 512);
  }
  return VectorizedIfValid(ctx, s, &rng, failure);
}

// Of the annotations the init rules sample with kAnnotationSeeds fixed
// seeds, the state of the highest AnnotationScore that lowers within the
// device's limits; nullopt (and why the last failed) when none does.
std::optional<State> BestSampledAnnotations(const SketchContext& ctx, const State& filled,
                                            const InitRuleList& rules, std::string* failure) {
  std::optional<State> best;
  double best_score = -1;
  for (int seed = 0; seed < kAnnotationSeeds; ++seed) {
    std::mt19937 rng(seed);
    State s = filled;
    try {
      for (const auto& rule : rules) s = rule->Apply(ctx, s, &rng);
    } catch (const std::exception& e) {
      *failure = std::string("annotations: ") + e.what();
      continue;
    }
    const std::string why = Failure(ctx, s);
    if (!why.empty()) {
      *failure = why;
      continue;
    }
    if (AnnotationScore(s) > best_score) {
      best_score = AnnotationScore(s);
      best = s;
    }
  }
  return best;
}

}  // namespace

ExpertSchedule MakeGpuExpertSchedule(const SearchTask& task, const SearchParams& params,
                                     const std::vector<State>& sketches) {
  ExpertSchedule out;
  const SketchContext ctx{task, params};
  const TilingLevels levels = GpuTilingLevels(params);
  InitRuleList rules = DefaultGpuInitRules();
  rules.erase(rules.begin());  // the tiles are the expert's, not fill-tile-size's
  std::string last_failure =
      "no sketch has a GEMM-like tiled stage (at most 3 spatial axes, one reduction) or an NCHW convolution "
      "whose channels, input channels and columns divide by 8 and rows by 4";
  for (size_t i = 0; i < sketches.size(); ++i) {
    std::optional<State> filled;
    try {
      filled = FillTiles(sketches[i], levels, params, [&](const Stage& st) { return ConvParts(st, levels); });
    } catch (const std::exception& e) {
      last_failure = "sketch " + std::to_string(i) + ": " + e.what();
    }
    if (!filled) continue;
    std::string failure;
    if (std::optional<State> best = ConvAnnotations(ctx, *filled, &failure)) {
      out.state = *best;
      out.note =
          "convolution tiles: 8 x 2 x 4 work items (channels x rows x columns) of 1 x 2 x 2 outputs, input "
          "channels in steps of 8; scalar fetches into compact shared rows\n";
      return out;
    }
    last_failure = "sketch " + std::to_string(i) + " fails " + failure;
  }
  for (const GpuRecipe& recipe : kRecipes) {
    for (ItemTiles placement : kItemTilePlacements) {
      for (size_t i = 0; i < sketches.size(); ++i) {
        std::optional<State> filled;
        try {
          filled = FillTiles(sketches[i], levels, params,
                             [&](const Stage& st) { return GemmParts(st, levels, recipe, placement); });
        } catch (const std::exception& e) {
          last_failure = "sketch " + std::to_string(i) + ": " + e.what();
        }
        if (!filled) continue;
        std::string failure;
        std::optional<State> best = placement == ItemTiles::Runs ? RunsAnnotations(ctx, *filled, &failure)
                                                                 : LibraryAnnotations(ctx, *filled, &failure);
        std::string annotations = placement == ItemTiles::Runs ? "the annotations of its H200 kernel"
                                                               : "the library kernel's annotations";
        if (!best && placement == ItemTiles::Runs) continue;  // the other placements come next
        if (!best) {
          best = BestSampledAnnotations(ctx, *filled, rules, &failure);
          annotations = "sampled annotations (the library kernel's fail: " + failure + ")";
        }
        if (!best) {
          last_failure = "sketch " + std::to_string(i) + " fails " + failure;
          continue;
        }
        std::ostringstream note;
        note << "GEMM tiles: at most " << recipe.items << " x " << recipe.items << " work items of at most "
             << recipe.item_tile << " x " << recipe.item_tile << " accumulators (" << ItemTilesName(placement)
             << "), reduction tiles of " << recipe.k_tile << "; " << annotations << ", score "
             << AnnotationScore(*best) << "\n";
        out.state = *best;
        out.note = note.str();
        return out;
      }
    }
  }
  out.reason = last_failure;
  return out;
}

}  // namespace autosched
