// The expert schedule: an analytic CPU schedule of a task, built from its
// HardwareParams the way a library writes a micro-kernel, as a starting point
// of the search (measured with the baselines, seeded into every initial
// population).
//
// It is one of the task's sketches completed without randomness: the sketch
// that computes each multi-level-tiled stage into an accumulator stage at the
// register tile (a cache write, or fusion into the element-wise consumer,
// attached at level 2) and reads a packed operand where the pack-operand rule
// offers one; the splits get ExpertTileParts (register_block.h): the best
// register block innermost, the vector operand's L2 panel and the main
// reduction's L1 tile; the pack blocks are as wide as the block's vectors; the
// outer loops run in parallel (the parallel init rule), the block's rows are
// unrolled and its vector axis vectorized, and every other stage vectorizes
// its innermost loop. Being made of ordinary steps, it records, replays and
// mutates like any sampled state. A task without a stage to tile gets its
// sketch's loop nest (stages inlined) with the default schedules' parallel
// and vectorize steps, where the sketch inlines anything; other such tasks
// and sketches that do not lower get no schedule, with the reason.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schedule/state.h"
#include "search/rules/cpu/register_block.h"
#include "search/search_params.h"
#include "task/search_task.h"

namespace autosched {

struct ExpertSchedule {
  std::optional<State> state;
  std::string reason;  // why there is no state (empty when there is one)
  std::string note;    // how the numbers were chosen, one line per tiled stage
};

// From the task's sketches (GenerateSketches of the task's policy; the
// MakeExpertSchedule of sketch_policy.h generates them). A GPU task gets
// MakeGpuExpertSchedule's.
ExpertSchedule MakeExpertSchedule(const SearchTask& task, const SearchParams& params,
                                  const std::vector<State>& sketches);
// The GPU version (gpu_expert_schedule.cc): each tiled stage of a GPU
// sketch gets a group, a register tile and a reduction tile derived from the
// HardwareParams (warp, thread limit, registers per work item, shared
// memory, vector width) and the extents, its annotations fixed through the
// thread-bind rule's choices.
// Both give no state, with the reason, when params.use_expert_schedule is
// off.
ExpertSchedule MakeGpuExpertSchedule(const SearchTask& task, const SearchParams& params,
                                     const std::vector<State>& sketches);

// What the GPU expert's plan leaves open, as choices: the groups it makes at
// least (per compute unit; it shrinks the group and the register tile until
// there are that many), whether work items cover a short axis's tiles
// exactly (7 for 7 columns) instead of by a power of two, and whether the
// planned group is then doubled along its rows (half the groups).
struct GpuPlanVariant {
  int64_t groups_per_unit = 2;  // kGpuGroupsPerUnit
  bool exact_short_axes = false;
  bool double_group = false;
};
ExpertSchedule PlanGpuExpert(const SearchTask& task, const SearchParams& params,
                             const std::vector<State>& sketches, const GpuPlanVariant& variant);
// The GPU expert planned with the other variants, (name, state), those that
// differ from the expert and from each other; empty where the task has no
// expert. Measured on an H100, no variant is better everywhere (groups of
// twice the work items made a strided 3x3 convolution 1.5x faster and a dense
// layer 1.6x slower), so tuning measures them beside the expert before
// searching.
std::vector<std::pair<std::string, State>> GpuExpertAlternatives(const SearchTask& task,
                                                                 const SearchParams& params,
                                                                 const std::vector<State>& sketches);

// The CPU expert of a reduction whose operands are all contiguous along its
// one reduce axis and that has at most two vectors' worth of rows (the
// spatial axes its largest operand does not depend on: x * W^T with W stored
// [N, K] and 1 to 16 rows of x): dot products along the reduction, factored
// (rfactor) into vectors of up to four registers and summed per output, the
// streamed operand read in place where a register block would pack it first
// (dot_expert.cc). nullopt where the task is not of that kind; `note` says
// how the numbers were chosen.
std::optional<State> DotProductExpert(const SketchContext& ctx, std::string* note);

// The lengths of a provisional rfactor split (IsRfactorSplit) at step
// `step` of `steps`, of `extent` into `count` parts, splitting a reduce
// axis of `stage` (a cross-thread reduction, or a reduction split across
// groups); without it they are sampled.
using RfactorLengthsOf = std::function<std::vector<int64_t>(
    const Stage& stage, const std::vector<Step>& steps, int step, int64_t extent, size_t count)>;

// What both expert schedules share: the sketch's steps replayed on its DAG
// with each tiling split's parts from `tile_parts` (of root node `node` of the
// stage the split tiles; nullopt: the sketch cannot be filled, and the result
// is nullopt) and every other unknown split, and the provisional rfactor
// splits, sampled with a fixed seed (the rfactor splits from
// `rfactor_lengths` where it is given). `before_apply`, when given, may adjust
// any other step, seeing the state it applies to.
using TilePartsOf = std::function<std::optional<std::vector<int64_t>>(const Stage& stage, int node)>;
std::optional<State> FillSketchSplits(const State& sketch, const TilingLevels& levels,
                                      int max_innermost_split_factor, const TilePartsOf& tile_parts,
                                      const std::function<void(const State&, Step*)>& before_apply = {},
                                      const RfactorLengthsOf& rfactor_lengths = {});

}  // namespace autosched
