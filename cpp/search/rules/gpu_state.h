// What the rules of both families, and the checks of every sampled or
// mutated state, need to know about a state scheduled for a GPU: the work
// items per group of its tiling, the steps of its shared copies, and whether
// its code fits the device. The tile-size mutation (shared by the CPU and GPU
// lists) keeps to the group size and leaves the fetch widths alone; sampling
// and mutation drop a state CheckGpuState refuses. The GPU rules themselves
// are in rules/gpu/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lower/stmt.h"
#include "schedule/state.h"
#include "search/rules/sketch_rules.h"

namespace autosched {

// Ids of the steps of `s` applied to a copy of a tensor into a "shared" or
// "local" stage computed inside another (a shared stage, a register tile):
// their vector-width splits (splits with one length) when `splits`, else
// their storage_align steps.
std::vector<int> SharedStageSteps(const State& s, bool splits);

// Work items per group of the GPU tiling. A stage tiled by
// gpu_tiling_structure splits each spatial axis into its 'S' levels (the
// split's lengths are the levels from 1 on, inner_to_outer); thread-bind
// binds level 2 (after blockIdx.x and vthread) to threadIdx.x, so the
// group's work items are the product of the tiling splits' level-2 lengths.
// GpuTileSplits: the ids of those split steps of `s`, by the stage they tile.
// TileThreads: that product with the lengths of `steps` (s's steps, or a copy
// with other lengths).
inline constexpr int kThreadTileLevel = 2;
std::map<std::string, std::vector<int>> GpuTileSplits(const SketchContext& ctx, const State& s);
int64_t TileThreads(const std::vector<Step>& steps, const std::vector<int>& split_ids);

// For a GPU task: "" when the lowered state `f` of `state` generates OpenCL
// code within the task's HardwareParams, else "codegen" or "device_limits"
// with the reason in *message. Always "" for a CPU task.
std::string CheckGpuState(const SketchContext& ctx, const State& state, const LoweredFunc& f,
                          std::string* message);

}  // namespace autosched
