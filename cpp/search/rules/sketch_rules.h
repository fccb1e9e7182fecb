// Sketch rules: how a sketch (a State whose split lengths are still unknown)
// grows, one stage at a time.
//
// Sketch generation (sketch_policy.h) walks the stages from the last (the
// outputs) to the first. At stage i of a partial sketch it asks every rule of
// one ordered list, in order, for its condition:
//   Skip              the rule does not apply here;
//   Apply             its results are kept and the next rules are asked too;
//   ApplyAndSkipRest  its results are kept and the next rules are not asked.
// A rule's Apply returns new (state, next stage id) pairs: the next stage id
// is the stage to look at next in that state (usually i - 1; a rule that adds
// a stage returns the id it wants visited next).
//
// The CPU list, in order (DefaultCpuSketchRules):
//   always-inline                     strictly inlineable element-wise stage, a gather
//                                     every consumer reads element-wise, or an element-wise
//                                     stage with an expensive call read by one consumer at
//                                     the same element: inline it
//   winograd-row-fusion               a Winograd inverse whose transformed weights fit in half
//                                     of L2: also a sketch computing data_pack, bgemm and inverse
//                                     per output row of tiles (rule_winograd.cc)
//   row-fusion                        an element-wise output reading reductions along its
//                                     innermost axis (softmax, layer_norm): also a sketch
//                                     computing them per output row, vectorized over a factored
//                                     part of the axis (rule_row_fusion.cc)
//   simplify-compute-with-const-tensor  reads a constant tensor: unroll its indices, tile the rest
//   inline-window-padding             a window stage (depthwise, pooling) reading a padding
//                                     stage: also a sketch with the padding inlined
//                                     (rule_window_ops.cc)
//   add-rfactor                       a reduction with little spatial parallelism: fuse its
//                                     reduce axes, split, factor a part
//   pack-operand                      a tiled stage streams an operand with a large stride (the
//                                     B of a matmul) or across rows (a dense layer's weight):
//                                     also a sketch reading a packed copy (rule_pack_operand.cc)
//   pack-conv-layout                  a convolution over channels not innermost in its data
//                                     (NCHW): also a sketch with the data packed NCHW[x]c and
//                                     the weights OIHW[x]i[y]o (rule_pack_operand.cc)
//   add-cache-write                   multi-level tiling: compute into a "local" stage, copy
//                                     out (the sketches without it are kept too)
//   multi-level-tiling-with-fusion    tile and compute inside the element-wise consumer's tiles
//   multi-level-tiling                tile "SSRSRS"
//   padding-at-tile                   a tiled strided convolution's padding (more padded
//                                     inputs than outputs): also a sketch with it computed
//                                     per output tile (rule_window_ops.cc)
//   window-vectorize                  a window stage not tiled (pooling): also a sketch with
//                                     the window loops unrolled above the innermost axis's
//                                     inner part (vectorized by the init rules)
//   skip-stage                        leave the stage as it is
// Custom rules (SketchPolicy::PreloadSketchRule, e.g. rules written in
// Python) go first in the list, in the order they were added.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "schedule/state.h"
#include "search/search_params.h"
#include "task/search_task.h"

namespace autosched {

// What a rule sees besides the state: the task and the parameters.
struct SketchContext {
  const SearchTask& task;
  const SearchParams& params;
};

class SketchRule {
 public:
  enum class Condition { Skip, Apply, ApplyAndSkipRest };

  virtual ~SketchRule() = default;
  virtual std::string name() const = 0;
  virtual Condition MeetCondition(const SketchContext& ctx, const State& state, int stage_id) const = 0;
  // May throw Error (a step the core refuses); generation records it and
  // goes on without this rule's results.
  virtual std::vector<std::pair<State, int>> Apply(const SketchContext& ctx, const State& state,
                                                   int stage_id) const = 0;
  // Whether generation records what this rule throws in rule_failures and
  // goes on (the built-in rules: a step the core refuses), or lets it
  // propagate and stops (a rule written by a user, whose mistakes they must
  // see rather than find missing from the sketches).
  virtual bool RecordsFailures() const { return true; }
};

using SketchRuleList = std::vector<std::shared_ptr<const SketchRule>>;

// The rules of the CPU policy, in the order above.
SketchRuleList DefaultCpuSketchRules();

// The auto_unroll_max_step values of the task's kind (CPU or GPU list).
const std::vector<int64_t>& AutoUnrollCandidates(const SketchContext& ctx);

// The rules one by one (for tests and custom lists).
std::shared_ptr<const SketchRule> MakeAlwaysInlineRule();
std::shared_ptr<const SketchRule> MakeSimplifyComputeWithConstTensorRule();
// Whether the stage indexes a constant tensor (a compute op that reads no
// tensor) with its root loop variables: what simplify-compute-with-const-tensor
// unrolls.
bool ReadsConstTensor(const Stage& st);
std::shared_ptr<const SketchRule> MakeAddRfactorRule();
std::shared_ptr<const SketchRule> MakePackOperandRule();
std::shared_ptr<const SketchRule> MakePackConvLayoutRule();
// rule_winograd.cc: the Winograd convolution's stages fused per row of tiles.
std::shared_ptr<const SketchRule> MakeWinogradRowFusionRule();
// rule_row_fusion.cc: row reductions (softmax, layer_norm) computed per row of their output.
std::shared_ptr<const SketchRule> MakeRowFusionRule();
// rule_window_ops.cc: sliding-window reductions (depthwise convolution, pooling).
std::shared_ptr<const SketchRule> MakeInlineWindowPaddingRule();
std::shared_ptr<const SketchRule> MakeWindowVectorizeRule();
std::shared_ptr<const SketchRule> MakePaddingAtTileRule();
// Whether the stage reduces over a small sliding window only (depthwise, pooling).
bool IsWindowStage(const State& s, int stage_id);
// gpu: the GPU variants (gpu_rules.h): cache write only without an element-wise
// consumer and ApplyAndSkipRest; tiling by gpu_tiling_structure; fusion at level 3 only.
std::shared_ptr<const SketchRule> MakeAddCacheWriteRule(bool gpu = false);
std::shared_ptr<const SketchRule> MakeMultiLevelTilingWithFusionRule(bool gpu = false);
std::shared_ptr<const SketchRule> MakeMultiLevelTilingRule(bool gpu = false);
std::shared_ptr<const SketchRule> MakeSkipStageRule();

// The split made by the add-rfactor rule carries the provisional length 1
// (the core's rfactor needs known extents); a split step directly followed by
// an rfactor step of the same stage is therefore sampled like an unknown one.
bool IsRfactorSplit(const std::vector<Step>& steps, int step_id);

}  // namespace autosched
