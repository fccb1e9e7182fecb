// The GPU expert schedule (expert_schedule.h): a GEMM-style kernel whose
// every number is derived from the task's HardwareParams and extents,
// written into a GPU sketch ("SSSRRSRS"), its annotations fixed through the
// thread-bind rule's choices.
//
// Each tiled stage (multi-level tiling: matmul, dense, batch_matmul, direct
// convolutions of either layout, ...) is planned on its own:
//   - the column axis is the innermost spatial axis above 1 (contiguous
//     outputs), the row axis the one the operands indexed by the columns do
//     not depend on (PickRowAxis: A's rows of a matmul, the output channels of
//     an NCHW convolution), so that a work item's register tile is an outer
//     product of one column of values and one row per reduction step;
//   - the register tile (accumulators per work item, rows x columns) is the
//     largest of powers of two, columns first, whose accumulators and one
//     step's operand values take at most half of max_registers_per_thread
//     (the rest holds addresses, indices and the loads in flight), no longer
//     than an extent, and within the private memory of a work item;
//   - the group holds kGpuGroupWarps warps (warp_size; at least
//     kGpuMinGroupItems work items where there are no warps), at most
//     max_threads_per_block; its prime factors go round the columns, the
//     rows and then the other spatial axes, each taking no more work items
//     than its extent needs;
//   - where a work item's tile is several fetch widths long, it is split
//     into interleaved virtual threads of one width each (within
//     max_vthread_extent), so that a warp's vector reads of a register tile
//     are contiguous in shared memory;
//   - the main reduction (the longest reduce axis above 1; the others, a
//     convolution's window, stay whole and innermost) is stepped by the
//     largest power of two whose shared tiles, double-buffered, fit half of
//     max_shared_memory_per_block (room for two resident groups): the bytes
//     one reduction step takes are read off the sketch filled with a step of
//     one (InferBound of its shared stages);
//   - where a group tile (or the reduction tile) does not divide its extent,
//     a tile down to half as long that divides it is taken, else the last
//     groups run guarded (lowering guards a split that does not divide);
//   - the fetches and register-tile loads are vectors of vector_unit_bytes
//     (at most 4 lanes, where they divide a row), shared rows are padded by
//     one fetch width (aligned for vectors, a row's banks shifted), both
//     shared stages double-buffered, A's copy stored transposed so its
//     register tile takes vectors too, the groups swizzled in bands about as
//     wide as the square root of the groups in flight (two per compute unit)
//     so that they share operand panels in cache, and the reduction unrolled
//     at least over one shared tile's multiply-adds of a work item (and the
//     stage storing the accumulators over its tile) so that the
//     accumulators are indexed by constants and stay in registers.
// Where the device's limits or the lowering refuse that, the same without
// double buffering, then compact rows without the transposition; then the
// reduction tile, the register tile and the group are halved in turn. The
// note says where every number came from. The search mutates the expert
// like any state. Three of the plan's choices (2 groups per compute unit,
// work items in powers of two, the group as shrunk) lose on some kernels:
// GpuExpertAlternatives plans them the other way (GpuPlanVariant), and
// tuning measures those plans beside the expert.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "ir/functor.h"
#include "lower/lower.h"
#include "schedule/infer_bound.h"
#include "search/expert/expert_schedule.h"
#include "search/rules/cpu/register_block.h"
#include "search/rules/gpu/gpu_rules.h"
#include "search/rules/search_util.h"
#include "search/rules/sketch_rules.h"
#include "support/arith.h"

namespace autosched {
namespace {

// Where HardwareParams leaves a field 0 (unknown), a value every device
// family of task/target.cc meets: the generic OpenCL group limit
// (kGpuUnknownMaxThreads, gpu_rules.h), Mali's register budget, half the
// 32 KiB of local memory OpenCL 1.2 guarantees.
constexpr int64_t kUnknownRegisters = 64;
constexpr int64_t kUnknownSharedBytes = 16 * 1024;
// The group's work items and the groups per compute unit the tiles should
// make: gpu_rules.h (GpuGroupItems, kGpuGroupsPerUnit; shared with the
// split-reduction rule). The fewest warps a group keeps when it shrinks to
// make the groups.
constexpr int64_t kMinShrunkWarps = 2;
// Unrolled steps a shared tile's multiply-adds of a work item take: each
// multiply-add and about as many register-tile loads and address updates
// (with fewer, the reduction loop stays rolled and its accumulators are
// indexed by a loop variable).
constexpr int64_t kUnrollStepsPerMultiplyAdd = 2;
// Elements of a row each work item of a cross-thread reduction sums at
// least (fewer items, fewer steps of the shared-memory tree).
constexpr int64_t kRowElementsPerItem = 4;
// Groups the shared memory of a compute unit must hold at once (one
// computes while the other fetches), and the copies of each shared tile
// (double buffering).
constexpr int64_t kResidentGroups = 2;
constexpr int64_t kSharedBuffers = 2;
// Widest vector a fetch or a register-tile load takes (kFetchWidths).
constexpr int64_t kMaxFetchLanes = 4;
static_assert(GpuPlanVariant{}.groups_per_unit == kGpuGroupsPerUnit);

int64_t Pow2Floor(int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

int64_t Pow2Ceil(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

std::vector<int64_t> PrimeFactors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t f = 2; f * f <= n; ++f) {
    while (n % f == 0) out.push_back(f), n /= f;
  }
  if (n > 1) out.push_back(n);
  return out;
}

// What the device allows, with the origin of each number for the note.
// `shrink` halves the register budget and the group (the fallbacks).
struct GpuBudget {
  int64_t warp = 1;
  int64_t group_items = 1;    // work items the group should hold
  int64_t registers = 1;      // 32-bit registers a work item's tile may take
  int64_t private_bytes = 0;  // bytes of private memory a work item may hold (0: no limit)
  int64_t shared_bytes = 0;   // bytes of shared memory one group may take
  int64_t vthreads = 0;       // most virtual threads (0: no limit)
  int64_t vector_bytes = 4;
  int64_t swizzle = 1;
  int64_t min_groups = 1;  // groups a stage should make to fill the device
  int64_t max_group = 0;   // the device's most work items in a group (0: unknown)
  bool exact_short_axes = false;
  bool double_group = false;
  std::string origin;
};

GpuBudget Budget(const HardwareParams& hw, int shrink, const GpuPlanVariant& variant) {
  GpuBudget b;
  std::ostringstream origin;
  b.warp = std::max<int64_t>(1, hw.warp_size);
  b.group_items = GpuGroupItems(hw);
  origin << "group of " << b.group_items << " work items (stages not tiled too): " << kGpuGroupWarps
         << " warps of warp_size " << hw.warp_size << " (at least " << kGpuMinGroupItems
         << "), at most max_threads_per_block "
         << (hw.max_threads_per_block > 0 ? std::to_string(hw.max_threads_per_block)
                                          : "unknown, taken as " + std::to_string(kGpuUnknownMaxThreads));
  const int64_t registers = hw.max_registers_per_thread > 0 ? hw.max_registers_per_thread : kUnknownRegisters;
  b.registers = registers / 2;
  origin << "; register tile within half of max_registers_per_thread "
         << (hw.max_registers_per_thread > 0 ? std::to_string(registers)
                                             : "unknown, taken as " + std::to_string(registers));
  b.private_bytes = hw.max_local_memory_per_block;
  const int64_t shared =
      hw.max_shared_memory_per_block > 0 ? hw.max_shared_memory_per_block : kUnknownSharedBytes;
  b.shared_bytes = shared / kResidentGroups;
  origin << "; shared tiles within max_shared_memory_per_block "
         << (hw.max_shared_memory_per_block > 0 ? std::to_string(shared)
                                                : "unknown, taken as " + std::to_string(shared))
         << " / " << kResidentGroups << " resident groups";
  b.min_groups = std::max<int64_t>(1, hw.num_cores) * variant.groups_per_unit;
  b.max_group = hw.max_threads_per_block;
  b.exact_short_axes = variant.exact_short_axes;
  b.double_group = variant.double_group;
  origin << "; at least " << b.min_groups << " groups (" << variant.groups_per_unit
         << " on each of num_cores " << hw.num_cores
         << "): the group, then the register tile, halved in turn until the tiles make them";
  b.vthreads = hw.max_vthread_extent;
  b.vector_bytes = std::max<int64_t>(1, hw.vector_unit_bytes);
  // Bands of about sqrt(groups in flight) groups, among kSwizzleWidths.
  const double in_flight = static_cast<double>(std::max<int64_t>(1, hw.num_cores) * kResidentGroups);
  for (int64_t w : kSwizzleWidths) {
    if (static_cast<double>(w * w) <= in_flight) b.swizzle = w;
  }
  origin << "; groups swizzled in bands of " << b.swizzle << " (about sqrt of " << kResidentGroups
         << " groups on each of num_cores " << hw.num_cores << ")";
  if (shrink > 0) {
    b.registers = std::max<int64_t>(2, b.registers >> shrink);
    b.group_items = std::max(b.warp, (b.group_items >> (shrink - 1)) / b.warp * b.warp);
    origin << "; register budget" << (shrink > 1 ? " and group" : "") << " halved (" << shrink
           << "x) after the full ones failed";
  }
  if (variant.exact_short_axes)
    origin << "; work items cover an axis's tiles exactly where that changes the group by less than 2x";
  if (variant.double_group) origin << "; then twice the work items along the rows (else another axis)";
  b.origin = origin.str();
  return b;
}

// One tiled spatial axis: work items along it, each computing `tile`
// accumulators in `vthreads` interleaved runs.
struct AxisTile {
  int axis = -1;
  int64_t items = 1;
  int64_t tile = 1;
  int64_t vthreads = 1;
  bool guarded = false;  // the group tile does not divide the extent
};

struct StagePlan {
  std::vector<AxisTile> axes;  // columns, rows, then the other spatial axes above 1
  int main_reduce = -1;        // index into op->reduce_axis; -1 without a reduction above 1
  int64_t k_tile = 1;
  bool k_guarded = false;
  int64_t lanes = 1;       // fetch width in elements
  int64_t step_bytes = 0;  // shared bytes of one reduction step (both operands' tiles)
  int64_t element_bytes = 4;
};

int64_t AccumulatorTile(const StagePlan& p) {
  int64_t n = 1;
  for (const AxisTile& t : p.axes) n *= t.tile;
  return n;
}

int64_t GroupItems(const StagePlan& p) {
  int64_t n = 1;
  for (const AxisTile& t : p.axes) n *= t.items;
  return n;
}

// `tile` shortened to a length down to half of it whose group tile divides
// `extent`, or kept with a guarded edge.
void FitExtent(int64_t extent, int64_t per_tile, int64_t* tile, bool* guarded) {
  if (extent % (per_tile * *tile) == 0) return;
  for (int64_t t = *tile - 1; 2 * t >= *tile && t >= 1; --t) {
    if (extent % (per_tile * t) == 0) {
      *tile = t;
      return;
    }
  }
  *guarded = true;
}

// Whether some operand of the stage reads spatial axis `a` in an index
// together with one of the variables `others`.
bool IndexedTogether(const Stage& st, int a, const std::vector<const VarNode*>& others) {
  const VarNode* var = st.op->axis[a].var_node();
  bool together = false;
  PostOrderVisit(st.op->body, [&](const Expr& e) {
    const auto* load = e.as<TensorLoadNode>();
    if (load == nullptr || together) return;
    for (const Expr& index : load->indices) {
      if (!UsesVar(index, var)) continue;
      for (const VarNode* other : others) together = together || UsesVar(index, other);
    }
  });
  return together;
}

// Whether spatial axis `a` of a factored stage ("<name>.rf", or its
// "<name>.rf.local" cache) takes part in an index of the reduction: the
// parts of a reduction split across groups (x[i, k0 * L + k1]). Its values
// read disjoint slices of the operands, so it is left to the groups, one
// value each, where work items along it would only widen the shared tiles.
bool IndexesTheReduction(const Stage& st, int a) {
  if (st.op->name.find(".rf") == std::string::npos) return false;
  std::vector<const VarNode*> reduce;
  for (const IterVar& r : st.op->reduce_axis) reduce.push_back(r.var_node());
  return IndexedTogether(st, a, reduce);
}

// Whether spatial axis `a` shares an operand's index with another spatial
// axis: a projection whose heads or query/key/value parts were folded into
// its output (W[part * 768 + column, k]). Work items along it would make a
// group's shared tile span the rows between the parts (bound inference
// takes the hull), so it is left to the groups, one value each.
bool SharesAnIndex(const Stage& st, int a) {
  std::vector<const VarNode*> others;
  for (size_t o = 0; o < st.op->axis.size(); ++o) {
    if (static_cast<int>(o) != a) others.push_back(st.op->axis[o].var_node());
  }
  return IndexedTogether(st, a, others);
}

// The spatial part of a stage's plan (the reduction tile comes later, from
// the shared bytes of a step).
StagePlan PlanSpatial(const Stage& st, const GpuBudget& b, int64_t max_inner) {
  StagePlan p;
  p.element_bytes = std::max(1, st.op->dtype.bytes());
  p.lanes = std::clamp<int64_t>(Pow2Floor(b.vector_bytes / p.element_bytes), 1, kMaxFetchLanes);
  const int num_axes = static_cast<int>(st.op->axis.size());
  std::vector<int> wide;     // innermost first
  int64_t whole_groups = 1;  // groups along the axes left to groups alone
  for (int a = num_axes - 1; a >= 0; --a) {
    if (st.op->axis[a].extent <= 1) continue;
    if (IndexesTheReduction(st, a)) {
      whole_groups *= st.op->axis[a].extent;
    } else {
      wide.push_back(a);
    }
  }
  int64_t longest = 1;
  for (int r = 0; r < static_cast<int>(st.op->reduce_axis.size()); ++r) {
    if (st.op->reduce_axis[r].extent > longest) longest = st.op->reduce_axis[r].extent, p.main_reduce = r;
  }
  if (wide.empty()) return p;
  const int cols = wide[0], rows = wide.size() > 1 ? PickRowAxis(st, cols) : -1;
  p.axes.push_back({cols});
  if (rows >= 0) p.axes.push_back({rows});
  for (int a : wide) {
    if (a == cols || a == rows) continue;
    if (SharesAnIndex(st, a)) {
      whole_groups *= st.op->axis[a].extent;
    } else {
      p.axes.push_back({a});
    }
  }
  auto extent = [&](const AxisTile& t) { return st.op->axis[t.axis].extent; };
  // Register tile on the columns and rows: accumulators plus one step's
  // operand values (a column of rows and a row of columns) within the budget.
  const int tiled = std::min<int>(2, static_cast<int>(p.axes.size()));
  auto fits = [&](int64_t c, int64_t r) {
    const bool registers = c * r + c + r <= b.registers;
    const bool private_memory = b.private_bytes <= 0 || (c * r + c + r) * p.element_bytes <= b.private_bytes;
    return registers && private_memory;
  };
  for (bool grew = true; grew;) {
    grew = false;
    for (int i = 0; i < tiled; ++i) {
      AxisTile& t = p.axes[i];
      const int64_t c = i == 0 ? 2 * t.tile : p.axes[0].tile;
      const int64_t r = i == 1 ? 2 * t.tile : (tiled > 1 ? p.axes[1].tile : 1);
      if (2 * t.tile <= std::min(Pow2Floor(extent(t)), max_inner) && fits(c, r)) t.tile *= 2, grew = true;
    }
  }
  // Work items: the group's prime factors round the axes, each axis taking
  // no more than its extent needs (rounded up to a power of two). With
  // exact_short_axes, an axis whose tiles number less than twice its work
  // items gets one work item per tile (7 for 7 columns, not 4 or 8: no
  // guarded edge, no idle items), within the device's group limit.
  auto place_items = [&](int64_t group_items) {
    for (AxisTile& t : p.axes) t.items = 1;
    size_t next = 0;
    for (int64_t f : PrimeFactors(group_items)) {
      for (size_t tries = 0; tries < p.axes.size(); ++tries, next = (next + 1) % p.axes.size()) {
        AxisTile& t = p.axes[next];
        if (t.items * f <= Pow2Ceil(CeilDiv(extent(t), t.tile))) {
          t.items *= f;
          next = (next + 1) % p.axes.size();
          break;
        }
      }
    }
    if (!b.exact_short_axes) return;
    for (AxisTile& t : p.axes) {
      const int64_t tiles = CeilDiv(extent(t), t.tile);
      if (tiles == t.items || tiles >= 2 * t.items) continue;
      const int64_t group = GroupItems(p) / t.items * tiles;
      if (b.max_group <= 0 || group <= b.max_group) t.items = tiles;
    }
  };
  auto groups = [&] {
    int64_t n = whole_groups;
    for (const AxisTile& t : p.axes) n *= CeilDiv(extent(t), t.items * t.tile);
    return n;
  };
  // Enough groups to fill the device: where the largest tiles leave compute
  // units idle, the group and the register tile shrink in turn (the group
  // first, down to kMinShrunkWarps warps, the register tile down to 1).
  int64_t group_items = b.group_items;
  place_items(group_items);
  const int64_t min_group = std::max(kMinShrunkWarps * b.warp, kGpuMinGroupItems);
  for (int turn = 0; groups() < b.min_groups; ++turn) {
    const bool shrink_group = turn % 2 == 0 && group_items / 2 >= min_group;
    if (shrink_group) {
      group_items /= 2;
    } else {
      AxisTile* longest = nullptr;
      for (int i = 0; i < tiled; ++i) {
        if (p.axes[i].tile > 1 && (!longest || p.axes[i].tile >= longest->tile)) longest = &p.axes[i];
      }
      if (!longest) {
        if (group_items / 2 < min_group) break;
        group_items /= 2;
      } else {
        longest->tile /= 2;
      }
    }
    place_items(group_items);
  }
  // Twice the work items along the rows (the axis whose group tile then
  // still lies within its extent; the columns, then the others, where the
  // rows cannot): half the groups along it, the same register tile. Only a
  // group that was shrunk, so it stays within the budget's group (a group of
  // 512 work items of 8 x 8 accumulators failed to build on an H100).
  if (b.double_group && 2 * GroupItems(p) <= b.group_items) {
    std::vector<int> order(p.axes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    if (order.size() > 1) std::swap(order[0], order[1]);
    for (int i : order) {
      AxisTile& t = p.axes[i];
      if (2 * t.items * t.tile <= extent(t)) {
        t.items *= 2;
        break;
      }
    }
  }
  int64_t vthreads = 1;
  for (int i = 0; i < static_cast<int>(p.axes.size()); ++i) {
    AxisTile& t = p.axes[i];
    FitExtent(extent(t), t.items, &t.tile, &t.guarded);
    // Interleaved runs of one fetch width each (register-tile axes only).
    const int64_t v = i < tiled && t.tile % p.lanes == 0 ? t.tile / p.lanes : 1;
    if (v > 1 && (b.vthreads <= 0 || vthreads * v <= b.vthreads)) {
      t.vthreads = v;
      vthreads *= v;
    }
  }
  return p;
}

// The reduction tile: the largest power of two whose double-buffered shared
// tiles fit the group's share (the whole reduction where it fits), fitted to
// the extent like a spatial tile.
void PlanReduction(const Stage& st, const GpuBudget& b, int64_t max_inner, int shrink, StagePlan* p) {
  if (p->main_reduce < 0) return;
  const int64_t extent = st.op->reduce_axis[p->main_reduce].extent;
  int64_t fit = max_inner;
  if (p->step_bytes > 0) fit = std::min(fit, b.shared_bytes / (kSharedBuffers * p->step_bytes));
  fit = std::max<int64_t>(1, fit >> shrink);
  if (extent <= fit) {
    p->k_tile = extent;
    return;
  }
  p->k_tile = Pow2Floor(fit);
  FitExtent(extent, 1, &p->k_tile, &p->k_guarded);
}

// The parts of every root node of a planned stage (op axes, then reduce
// axes) for "SSSRRSRS": (groups, virtual threads, work items, 1, a run of
// the tile) on tiled axes, every other spatial axis on groups; (steps, tile,
// 1) on the main reduction, the other reduce axes whole and innermost.
std::vector<int64_t> Parts(const Stage& st, const StagePlan& p, int node) {
  const int num_axes = static_cast<int>(st.op->axis.size());
  if (node < num_axes) {
    const int64_t extent = st.op->axis[node].extent;
    for (const AxisTile& t : p.axes) {
      if (t.axis != node) continue;
      const int64_t group_tile = t.items * t.tile;
      return {CeilDiv(extent, group_tile), t.vthreads, t.items, 1, t.tile / t.vthreads};
    }
    return {extent, 1, 1, 1, 1};
  }
  const int r = node - num_axes;
  const int64_t extent = st.op->reduce_axis[r].extent;
  if (r == p.main_reduce) return {CeilDiv(extent, p.k_tile), p.k_tile, 1};
  return {1, 1, extent};
}

std::string Describe(const Stage& st, const StagePlan& p, const GpuBudget& b) {
  std::ostringstream os;
  os << st.name() << ": ";
  auto names = [&](auto value) {
    std::ostringstream part;
    for (size_t i = 0; i < p.axes.size(); ++i) part << (i ? " x " : "") << value(p.axes[i]);
    return part.str();
  };
  os << "work items " << names([](const AxisTile& t) { return t.items; }) << " ("
     << names([&](const AxisTile& t) { return st.op->axis[t.axis].name(); }) << ") = " << GroupItems(p)
     << "; register tile " << names([](const AxisTile& t) { return t.tile; }) << " in "
     << names([](const AxisTile& t) { return t.vthreads; }) << " virtual threads (runs of " << p.lanes
     << "-lane vectors: vector_unit_bytes " << b.vector_bytes << ")";
  if (p.main_reduce >= 0)
    os << "; reduction tile " << p.k_tile << " of " << st.op->reduce_axis[p.main_reduce].name() << " ("
       << p.step_bytes << " shared bytes a step, " << kSharedBuffers << " buffers)";
  std::string guarded;
  for (const AxisTile& t : p.axes) {
    if (t.guarded) guarded += " " + st.op->axis[t.axis].name();
  }
  if (p.k_guarded) guarded += " " + st.op->reduce_axis[p.main_reduce].name();
  if (!guarded.empty()) os << "; guarded edges on" << guarded;
  return os.str();
}

TilingLevels GpuTilingLevels(const SearchParams& params) {
  const std::string& s = params.gpu_tiling_structure;
  return {static_cast<int>(std::count(s.begin(), s.end(), 'S')),
          static_cast<int>(std::count(s.begin(), s.end(), 'R'))};
}

// Work items of a group that sum one row of a cross-thread reduction: the
// largest divisor of the row's length within the group and leaving each
// item at least kRowElementsPerItem elements (a warp at least, where the row
// is that long), so that a warp's reads of a row are contiguous. Where no
// divisor reaches half of that (a prime row, 129), as many whole warps, the
// row's last step guarded.
int64_t RowReductionItems(int64_t extent, const GpuBudget& b) {
  const int64_t cap = std::min(b.group_items, std::max(b.warp, extent / kRowElementsPerItem));
  for (int64_t d = std::min(cap, extent); d > 1 && 2 * d > cap; --d) {
    if (extent % d == 0) return d;
  }
  return std::max<int64_t>(1, std::min(extent, std::max(b.warp, cap / b.warp * b.warp)));
}

// The sketch with its tiling splits filled from the plans (made on first
// use, by stage name) and its cross-thread reductions' splits from
// RowReductionItems; nullopt when it does neither (`row_items`: the work
// items of each cross-thread reduction, for the note).
std::optional<State> FillTiles(const State& sketch, const TilingLevels& levels, const SearchParams& params,
                               const HardwareParams& hw, const GpuBudget& b,
                               const std::function<const StagePlan&(const Stage&)>& plan_of,
                               std::vector<int64_t>* row_items = nullptr,
                               std::vector<int64_t>* split_parts = nullptr) {
  bool tiled = false;
  auto tile_parts = [&](const Stage& st, int node) -> std::optional<std::vector<int64_t>> {
    tiled = true;
    return Parts(st, plan_of(st), node);
  };
  auto rfactor_lengths = [&](const Stage& st, const std::vector<Step>& steps, int step, int64_t extent,
                             size_t count) {
    tiled = true;
    std::vector<int64_t> lengths(count, 1);
    if (IsSplitReduction(steps, step)) {  // the parts' length: the parts go to groups
      const int64_t parts = SplitReductionParts(hw, SpatialProduct(st), extent);
      lengths.back() = extent / parts;
      if (split_parts) split_parts->push_back(parts);
      return lengths;
    }
    lengths.back() = RowReductionItems(extent, b);
    if (row_items) row_items->push_back(lengths.back());
    return lengths;
  };
  std::optional<State> s =
      FillSketchSplits(sketch, levels, params.max_innermost_split_factor, tile_parts, {}, rfactor_lengths);
  if (!tiled) return std::nullopt;
  return s;
}

// Shared bytes per step of the main reduction of each tiled stage: the
// regions of the shared stages computed inside it, with a step of one, once
// the group's loops are bound to threads (a shared region spans them).
std::map<std::string, int64_t> SharedStepBytes(const SketchContext& ctx, const State& filled) {
  std::mt19937 rng(0);
  const ThreadBindChoices plain{.swizzle_width = 1,
                                .pad_offset = 0,
                                .fetch_width = 1,
                                .double_buffer = false,
                                .transpose = false,
                                .pipeline_register_tiles = false};
  const State bounded = InferBound(BindThreads(ctx, filled, plain, &rng));
  std::map<std::string, int64_t> bytes;
  for (const Stage& st : bounded.stages()) {
    if (st.scope != MemScope::Shared || st.loc != ComputeLocKind::At || HasReduceIter(st)) continue;
    int64_t elements = 1;
    for (int i = 0; i < st.num_iters(); ++i) elements *= std::max<int64_t>(1, st.iter(i).extent);
    bytes[bounded.stage(st.attach_stage).name()] += elements * std::max(1, st.op->dtype.bytes());
  }
  return bytes;
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

// The annotations on the filled sketch (see the top of this file): the
// first of full, single-buffered and compact that lowers within the
// device's limits; nullopt (and why) when none does. `plans`: the tiled
// stages' plans by name.
std::optional<State> Annotate(const SketchContext& ctx, const State& filled, const GpuBudget& b,
                              const std::map<std::string, StagePlan>& plans, std::string* failure) {
  int64_t lanes = kMaxFetchLanes;
  for (const auto& [name, plan] : plans) lanes = std::min(lanes, plan.lanes);
  ThreadBindChoices full{.swizzle_width = b.swizzle,
                         .pad_offset = lanes,
                         .widest_vectors = true,
                         .fetch_width = lanes,
                         .double_buffer = true,
                         .transpose = true,
                         .pipeline_register_tiles = false,
                         .plain_threads = b.group_items};
  ThreadBindChoices single = full;
  single.double_buffer = false;
  ThreadBindChoices compact = single;
  compact.pad_offset = 0;
  compact.transpose = false;
  for (const ThreadBindChoices& choices : {full, single, compact}) {
    std::mt19937 rng(0);  // nothing left to sample on a tiled sketch but the Mali vectorize rule's loops
    State s = BindThreads(ctx, filled, choices, &rng);
    for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
      if (!HasLoops(s, id)) continue;
      const auto plan = plans.find(s.stage(id).name());
      if (plan != plans.end() && HasReduceIter(s.stage(id)))
        s = WithUnroll(ctx, s, id,
                       kUnrollStepsPerMultiplyAdd * AccumulatorTile(plan->second) * plan->second.k_tile);
      else if (s.stage(id).loc == ComputeLocKind::Root)
        s = WithUnroll(ctx, s, id, plans.empty() ? 1 : AccumulatorTile(plans.begin()->second));
    }
    if (std::optional<State> valid = VectorizedIfValid(ctx, s, &rng, failure)) return valid;
  }
  return std::nullopt;
}

}  // namespace

constexpr const char* kNothingToTile = "no sketch has a stage to tile (a reduction with reuse)";

ExpertSchedule PlanGpuExpert(const SearchTask& task, const SearchParams& params,
                             const std::vector<State>& all_sketches, const GpuPlanVariant& variant) {
  ExpertSchedule out;
  const SketchContext ctx{task, params};
  const TilingLevels levels = GpuTilingLevels(params);
  if (levels.space != 5 || levels.reduce != 3) {
    out.reason =
        "the GPU expert plans the tiling structure \"SSSRRSRS\", not \"" + params.gpu_tiling_structure + "\"";
    return out;
  }
  const int64_t max_inner = std::max<int64_t>(1, params.max_innermost_split_factor);
  std::string last_failure = kNothingToTile;
  // Fallbacks: 0 = as planned; then the reduction tile, the register budget
  // and the group halved together, once and twice.
  // Sketches whose reduction is split across groups first: the rule offers
  // them only where full tiles of the stage alone leave the device idle.
  std::vector<State> sketches = all_sketches;
  std::stable_partition(sketches.begin(), sketches.end(), [](const State& sketch) {
    const std::vector<Step>& steps = sketch.steps();
    for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
      if (IsSplitReduction(steps, i)) return true;
    }
    return false;
  });
  for (int shrink = 0; shrink <= 2; ++shrink) {
    const GpuBudget budget = Budget(task.hardware_params, shrink, variant);
    for (size_t i = 0; i < sketches.size(); ++i) {
      std::map<std::string, StagePlan> plans;
      auto plan_of = [&](const Stage& st) -> const StagePlan& {
        auto it = plans.find(st.name());
        if (it == plans.end()) it = plans.emplace(st.name(), PlanSpatial(st, budget, max_inner)).first;
        return it->second;
      };
      std::optional<State> filled;
      std::vector<int64_t> row_items, split_parts;
      std::string failure;
      try {
        // A step of one first, to read off the shared bytes of a step.
        const std::optional<State> one_step =
            FillTiles(sketches[i], levels, params, task.hardware_params, budget, plan_of);
        if (!one_step) continue;
        for (const auto& [name, bytes] : SharedStepBytes(ctx, *one_step)) {
          if (plans.count(name)) plans.at(name).step_bytes = bytes;
        }
        for (auto& [name, plan] : plans) {
          const int id = one_step->StageIndex(name);
          PlanReduction(one_step->stage(id), budget, max_inner, shrink, &plan);
        }
        row_items.clear();
        split_parts.clear();
        filled = FillTiles(sketches[i], levels, params, task.hardware_params, budget, plan_of, &row_items,
                           &split_parts);
      } catch (const std::exception& e) {
        last_failure = "sketch " + std::to_string(i) + ": " + e.what();
        continue;
      }
      std::optional<State> best = Annotate(ctx, *filled, budget, plans, &failure);
      if (!best) {
        last_failure = "sketch " + std::to_string(i) + " fails " + failure;
        continue;
      }
      std::ostringstream note;
      for (const auto& [name, plan] : plans) {
        note << Describe(best->stage(best->StageIndex(name)), plan, budget) << "\n";
      }
      for (int64_t items : row_items) {
        note << "a cross-thread reduction over " << items << " work items a row (at least "
             << kRowElementsPerItem << " elements each)\n";
      }
      for (int64_t parts : split_parts) {
        note << "the reduction split across groups in " << parts
             << " parts (too few outputs for full tiles to fill num_cores " << task.hardware_params.num_cores
             << " compute units), then summed\n";
      }
      note << budget.origin << "\n";
      out.state = *best;
      out.note = note.str();
      return out;
    }
  }
  // No stage to tile (element-wise ops, a pooling): the first sketch, whose
  // stages without a reduction are inlined, one work item per output.
  if (!sketches.empty() && last_failure == kNothingToTile) {
    std::string failure;
    const GpuBudget budget = Budget(task.hardware_params, 0, variant);
    if (std::optional<State> plain = Annotate(ctx, sketches.front(), budget, {}, &failure)) {
      out.state = *plain;
      out.note =
          "no stage to tile: the sketch's stages without a reduction inlined, one work item per output\n" +
          budget.origin + "\n";
      return out;
    }
    last_failure = "the untiled sketch fails " + failure;
  }
  out.reason = last_failure;
  return out;
}

ExpertSchedule MakeGpuExpertSchedule(const SearchTask& task, const SearchParams& params,
                                     const std::vector<State>& sketches) {
  return PlanGpuExpert(task, params, sketches, GpuPlanVariant{});
}

std::vector<std::pair<std::string, State>> GpuExpertAlternatives(const SearchTask& task,
                                                                 const SearchParams& params,
                                                                 const std::vector<State>& sketches) {
  std::vector<std::pair<std::string, State>> out;
  const ExpertSchedule expert = MakeGpuExpertSchedule(task, params, sketches);
  if (!expert.state) return out;
  const std::pair<std::string, GpuPlanVariant> variants[] = {
      {"expert, one group a compute unit", GpuPlanVariant{.groups_per_unit = 1}},
      {"expert, short axes covered exactly", GpuPlanVariant{.exact_short_axes = true}},
      {"expert, groups of twice the work items", GpuPlanVariant{.double_group = true}},
  };
  for (const auto& [name, variant] : variants) {
    const ExpertSchedule alternative = PlanGpuExpert(task, params, sketches, variant);
    if (!alternative.state) continue;
    const auto same = [&](const State& s) { return s.SameSteps(*alternative.state); };
    if (same(*expert.state) ||
        std::any_of(out.begin(), out.end(), [&](const auto& o) { return same(o.second); }))
      continue;
    out.emplace_back(name, *alternative.state);
  }
  return out;
}

}  // namespace autosched
