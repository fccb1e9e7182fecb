// The GPU rules of the search policy (targets whose kind is a GPU: is_gpu), after Ansor's.
//
// Sketch rules, in order (DefaultGpuSketchRules):
//   add-cache-read                    a producer read by one tiled consumer: copied into a
//                                     "shared" stage computed at the consumer's outermost
//                                     reduce tile (each group fetches its tiles together)
//   special-compute-location          a stage always-inline would inline into one consumer that
//                                     unrolls its reads of a constant tensor (Winograd's data
//                                     pack): computed at the consumer's last loop before them
//   inline-into-shared-fetch          a stage without a reduction read only by a shared
//                                     cache-read stage (a padding): also a sketch with it
//                                     inlined into the fetch
//   always-inline                     every other stage without a reduction that is no output
//                                     (Ansor's GPU rule; on CPUs only the cheap ones)
//   simplify-compute-with-const-tensor  as on CPUs
//   cross-thread-reduction            a reduction with little spatial work: the work items of
//                                     a group each reduce a slice into a "shared" stage
//                                     (rfactor), and the group combines the slices;
//                                     first a sketch with the sums computed inside
//                                     the stage that reads their rows (one kernel)
//   split-reduction                   a matmul-like stage with too few outputs for full tiles to
//                                     fill the device: its reduction split across groups
//                                     (rfactor of the outer part), then summed; Apply
//   add-cache-write                   a tiled stage without an element-wise consumer computes
//                                     into a private "local" stage; ApplyAndSkipRest
//   multi-level-tiling-with-fusion    tiled by gpu_tiling_structure, computed at level 3
//                                     (after blockIdx, vthread, threadIdx) of its consumer
//   multi-level-tiling                tiled "SSSRRSRS"
//   skip-stage                        the stage left as it is
//
// Init rules (DefaultGpuInitRules): fill-tile-size, thread-bind (also the
// vector width of each cooperative fetch and the row padding of each shared
// buffer, and pragma double_buffer with probability 1/2 on each shared
// stage CanDoubleBuffer accepts and on each register tile, which is computed
// at a sampled reduce loop of its shared tile first; a block swizzle of a sampled width on the
// blockIdx loop of each tiled stage), unroll (gpu_auto_unroll_candidates), and vectorize on Mali devices
// or with SearchParams::gpu_vectorize. Mutation rules
// (DefaultGpuMutationRules): tile-size 0.80 (not the fetch splits),
// auto-unroll 0.10, shared-fetch 0.10 (another fetch width or row padding,
// double buffering of a shared stage or a register tile switched on or off,
// or another block swizzle width).
//
// Every sampled or mutated state of a GPU task is lowered and its OpenCL
// code generated: one that the code generation refuses is dropped as
// "codegen", one beyond the HardwareParams limits (work items per group,
// shared memory per group, private memory per work item, vthread extent) as
// "device_limits" (CheckGpuState, rules/gpu_state.h, which the CPU rules' checks
// call too).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lower/stmt.h"
#include "search/rules/gpu_state.h"
#include "search/rules/init_rules.h"
#include "search/rules/mutation_rules.h"
#include "search/rules/sketch_rules.h"

namespace autosched {

SketchRuleList DefaultGpuSketchRules();
InitRuleList DefaultGpuInitRules();
MutationRuleList DefaultGpuMutationRules();

std::shared_ptr<const SketchRule> MakeAddCacheReadRule();
std::shared_ptr<const SketchRule> MakeInlineIntoSharedFetchRule();
std::shared_ptr<const SketchRule> MakeSpecialComputeLocationRule();
std::shared_ptr<const SketchRule> MakeCrossThreadReductionRule();

// Split-reduction (a reduction split across groups): whether the split at
// `split_step` is one (the outer part factored into the first axis), and
// the number of parts for a stage of `spatial` outputs and a reduction of
// `reduce`. Only where full tiles would fill at most 1/kSplitIdleShare of
// the device (the outputs that fill it: kGpuGroupsPerUnit groups of
// kGpuGroupWarps warps, kSplitTileOutputs accumulators per work item, on
// each of num_cores); then powers of two, as long as the outputs times the
// parts stay within what fills it, each part at least kSplitMinPartLength
// long and the parts dividing the reduction; 1 where no split pays. On an
// H100, stages that filled more than a quarter of it (BERT-base's first
// feed-forward layer: 128 x 3072 outputs) ran slower split than whole.
//
// Warps per group: while some wait on shared or global memory (hundreds of
// cycles), others issue; 8 keep each of a compute unit's schedulers busy
// with two. A device without warps (warp_size 1) still interleaves work
// items to hide latency: at least kGpuMinGroupItems. Groups per compute
// unit the tiles should at least make: one running while another waits.
constexpr int64_t kGpuGroupWarps = 8;
constexpr int64_t kGpuMinGroupItems = 64;
constexpr int64_t kGpuGroupsPerUnit = 2;
constexpr int64_t kSplitTileOutputs = 16;
constexpr int64_t kSplitMinPartLength = 128;
constexpr int64_t kSplitMaxParts = 16;
constexpr int64_t kSplitIdleShare = 4;
// Work items a GPU group holds: kGpuGroupWarps warps (at least
// kGpuMinGroupItems), a multiple of the warp, within max_threads_per_block
// (kGpuUnknownMaxThreads, the generic OpenCL limit, where it is unknown).
constexpr int64_t kGpuUnknownMaxThreads = 256;
int64_t GpuGroupItems(const HardwareParams& hw);
bool IsSplitReduction(const std::vector<Step>& steps, int split_step);
int64_t SplitReductionParts(const HardwareParams& hw, int64_t spatial, int64_t reduce);
std::shared_ptr<const InitRule> MakeThreadBindRule();

// The choices the thread-bind rule samples, fixed where set (the GPU expert
// schedule fixes them).
struct ThreadBindChoices {
  std::optional<int64_t> swizzle_width;  // of each GPU-tiled stage's blockIdx loop (1: none)
  std::optional<int64_t> pad_offset;     // row padding of each shared stage (0: compact)
  bool widest_vectors = false;           // the widest fetch and register-tile widths that divide
  std::optional<int64_t> fetch_width;    // of the cooperative fetches, where it divides their rows
  std::optional<bool> double_buffer;     // of each shared stage that can be
  std::optional<bool> transpose;         // a shared stage whose register tile is a column
  // of each register tile: computed at a reduce loop of its shared tile
  // (sampled among PipelineNodes) and double-buffered
  std::optional<bool> pipeline_register_tiles;
  // work items of a group of each stage that is not tiled (an element-wise
  // or row-wise stage: one work item per output), within the thread limit
  std::optional<int64_t> plain_threads;
};
// The thread-bind rule's binding of `state` under `choices`.
State BindThreads(const SketchContext& ctx, const State& state, const ThreadBindChoices& choices,
                  std::mt19937* rng);
std::shared_ptr<const MutationRule> MakeMutateSharedFetchRule();

// Vector widths of a cooperative fetch: each work item copies this many
// consecutive elements of a row with one vector load and store (vloadN /
// vstoreN); only widths dividing the row of the copied region are sampled.
inline constexpr int64_t kFetchWidths[] = {1, 2, 4};
// Row padding of shared buffers (storage_align of the second innermost
// dimension): the row stride made `offset` modulo the 32 banks of a GPU's
// shared memory, so that work items reading a column hit different banks.
// Offset 0 leaves the buffer compact; 4 keeps rows aligned for float4.
inline constexpr int64_t kSharedBanks = 32;
inline constexpr int64_t kRowPadOffsets[] = {0, 1, 4};

// Whether stage `id` of `s` is a register tile: a "local" copy of a shared
// stage computed inside its consumer (add-cache-read).
bool IsRegisterTile(const State& s, int id);

// Whether stage `id` of `s` can take pragma double_buffer in the GPU
// sketches: a shared copy (no reduction of its own) or a register tile,
// computed at a serial reduce loop of extent > 1 (for a shared copy, the
// outer reduce tile of a matmul or conv; for a register tile, a reduce loop
// inside it).
bool CanDoubleBuffer(const State& s, int id);
// The consumer loops (node ids) at which register tile `id` can be
// pipelined: the serial reduce loops of extent > 1 from its shared
// producer's loop (exclusive) to its own (inclusive). At one of them the
// tile holds the values of the steps inside it, and the values of the next
// iteration are loaded from shared memory while this one computes. Empty
// for any other stage.
std::vector<int> PipelineNodes(const State& s, int id);
// `s` with register tile `id` computed at consumer loop `node` (one of
// PipelineNodes; its own steps replayed on the new region) and double-
// buffered; nullopt when that does not apply.
std::optional<State> PipelineRegisterTile(const State& s, int id, int node);
// The id of the step that set pragma double_buffer on stage `id`; -1 if none.
int DoubleBufferStep(const State& s, int id);

// Group widths of the thread-block swizzle (pragma block_swizzle$G on the
// blockIdx loop fused from a tiled stage's outer tiles; 1: off).
inline constexpr int64_t kSwizzleWidths[] = {1, 2, 4, 8};
// The position of stage `id`'s blockIdx.x loop when it is fused from two or
// more loops (a swizzle can reorder its groups); -1 otherwise.
int SwizzleLoop(const State& s, int id);
// The id of the step that set pragma block_swizzle on stage `id`; -1 if none.
int SwizzleStep(const State& s, int id);

}  // namespace autosched
