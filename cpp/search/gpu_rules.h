// The GPU rules of the search policy (OpenCL targets), after Ansor's.
//
// Sketch rules, in order (DefaultGpuSketchRules):
//   add-cache-read                    a producer read by one tiled consumer: copied into a
//                                     "shared" stage computed at the consumer's outermost
//                                     reduce tile (each group fetches its tiles together)
//   special-compute-location          a stage always-inline would inline into one consumer that
//                                     unrolls its reads of a constant tensor (Winograd's data
//                                     pack): computed at the consumer's last loop before them
//   always-inline                     as on CPUs
//   simplify-compute-with-const-tensor  as on CPUs
//   cross-thread-reduction            a reduction with little spatial work: the work items of
//                                     a group each reduce a slice into a "shared" stage
//                                     (rfactor), and the group combines the slices
//   add-cache-write                   a tiled stage without an element-wise consumer computes
//                                     into a private "local" stage; ApplyAndSkipRest
//   multi-level-tiling-with-fusion    tiled by gpu_tiling_structure, computed at level 3
//                                     (after blockIdx, vthread, threadIdx) of its consumer
//   multi-level-tiling                tiled "SSSRRSRS"
//   skip-stage                        the stage left as it is
//
// Init rules (DefaultGpuInitRules): fill-tile-size, thread-bind, unroll
// (gpu_auto_unroll_candidates), and vectorize on Mali devices or with
// SearchParams::gpu_vectorize. Mutation rules (DefaultGpuMutationRules):
// tile-size 0.90, auto-unroll 0.10.
//
// Every sampled or mutated state of a GPU task is lowered and its OpenCL
// code generated: one that the code generation refuses is dropped as
// "codegen", one beyond the HardwareParams limits (work items per group,
// shared memory per group, private memory per work item, vthread extent) as
// "device_limits" (CheckGpuState).
#pragma once

#include <string>

#include "lower/stmt.h"
#include "search/init_rules.h"
#include "search/mutation_rules.h"
#include "search/sketch_rules.h"

namespace autosched {

SketchRuleList DefaultGpuSketchRules();
InitRuleList DefaultGpuInitRules();
MutationRuleList DefaultGpuMutationRules();

std::shared_ptr<const SketchRule> MakeAddCacheReadRule();
std::shared_ptr<const SketchRule> MakeSpecialComputeLocationRule();
std::shared_ptr<const SketchRule> MakeCrossThreadReductionRule();
std::shared_ptr<const InitRule> MakeThreadBindRule();

// The rule lists of the task's kind (CPU or GPU).
SketchRuleList DefaultSketchRules(const SearchTask& task);
InitRuleList DefaultInitRules(const SearchTask& task);
MutationRuleList DefaultMutationRules(const SearchTask& task);

// For a GPU task: "" when the lowered state `f` of `state` generates OpenCL
// code within the task's HardwareParams, else "codegen" or "device_limits"
// with the reason in *message. Always "" for a CPU task.
std::string CheckGpuState(const SketchContext& ctx, const State& state, const LoweredFunc& f,
                          std::string* message);

}  // namespace autosched
