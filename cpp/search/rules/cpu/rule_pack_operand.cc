// The pack-operand sketch rule (not in Ansor): an operand that a tiled stage
// streams along its innermost spatial axis while a reduction walks it with a
// large stride (the B of a matmul, conv weights), or that it reads across rows
// along that axis (the weight of a dense layer, a transposed B), is copied
// into a tile-contiguous layout first, so the inner kernel reads it
// contiguously.
#include <algorithm>
#include <optional>

#include "ir/functor.h"
#include "search/rules/search_util.h"
#include "search/rules/sketch_rules.h"
#include "support/error.h"

namespace autosched {

namespace {

using Condition = SketchRule::Condition;
using Results = std::vector<std::pair<State, int>>;

// A row this many cache lines long or longer counts as a large stride.
constexpr int64_t kMinStrideCacheLines = 8;

int64_t PackLanes(const SketchContext& ctx, const DataType& dtype) {
  const int64_t bytes = std::max(1, dtype.bytes());
  const int64_t lanes = ctx.task.hardware_params.vector_unit_bytes / bytes * ctx.params.vector_lanes_factor;
  return std::max<int64_t>(1, std::min(lanes, ctx.params.max_vectorize_size));
}

int StageOfTensor(const State& s, const TensorNode* t) {
  for (int i = 0; i < static_cast<int>(s.stages().size()); ++i) {
    if (s.stage(i).op.get() == t) return i;
  }
  return -1;
}

struct PackCandidate {
  int tensor_stage = -1;
  int axis = 0;
  int64_t lanes = 1;
};

// Whether `load` reads its innermost dimension along `inner` (the stage's
// innermost spatial axis) while an outer dimension indexed by a reduce axis
// has a stride of at least kMinStrideCacheLines cache lines.
bool IsStridedOperand(const SketchContext& ctx, const TensorLoadNode& load, const VarNode* inner,
                      const std::vector<IterVar>& reduce_axis) {
  const auto& shape = load.tensor->shape;
  const int rank = static_cast<int>(load.indices.size());
  if (rank < 2 || load.indices.back().as<VarNode>() != inner) return false;
  const int64_t min_stride = kMinStrideCacheLines * ctx.task.hardware_params.cache_line_bytes;
  int64_t stride = std::max(1, load.tensor->dtype.bytes());
  for (int d = rank - 2; d >= 0; --d) {
    stride *= shape[d + 1];
    const bool reduced = std::any_of(reduce_axis.begin(), reduce_axis.end(), [&](const IterVar& iv) {
      return UsesVar(load.indices[d], iv.var_node());
    });
    if (reduced && stride >= min_stride) return true;
  }
  return false;
}

// The dimension of `load` indexed by exactly the stage's innermost spatial
// axis when that is not its last dimension and the last one follows a reduce
// axis (the weight of a dense layer, a transposed B): a vector along the
// axis would gather one element from every row of at least a cache line.
// -1 otherwise.
int TransposedAxis(const SketchContext& ctx, const TensorLoadNode& load, const VarNode* inner,
                   const std::vector<IterVar>& reduce_axis) {
  const int rank = static_cast<int>(load.indices.size());
  if (rank < 2) return -1;
  const bool reduced_last = std::any_of(reduce_axis.begin(), reduce_axis.end(), [&](const IterVar& iv) {
    return UsesVar(load.indices.back(), iv.var_node());
  });
  if (!reduced_last) return -1;
  int found = -1;
  for (int d = 0; d < rank; ++d) {
    if (!UsesVar(load.indices[d], inner)) continue;
    if (found >= 0 || d == rank - 1 || load.indices[d].as<VarNode>() != inner) return -1;
    found = d;
  }
  if (found < 0) return -1;
  int64_t row_bytes = std::max(1, load.tensor->dtype.bytes());
  for (int d = found + 1; d < rank; ++d) row_bytes *= load.tensor->shape[d];
  return row_bytes >= ctx.task.hardware_params.cache_line_bytes ? found : -1;
}

std::optional<PackCandidate> FindPackCandidate(const SketchContext& ctx, const State& s, int stage_id) {
  const Stage& st = s.stage(stage_id);
  if (st.op->axis.empty() || st.op->reduce_axis.empty()) return std::nullopt;
  const VarNode* inner = st.op->axis.back().var_node();
  std::optional<PackCandidate> found;
  PostOrderVisit(st.op->body, [&](const Expr& x) {
    const auto* load = x.as<TensorLoadNode>();
    if (found || load == nullptr) return;
    int axis = -1;
    if (IsStridedOperand(ctx, *load, inner, st.op->reduce_axis)) {
      axis = static_cast<int>(load->indices.size()) - 1;
    } else {
      axis = TransposedAxis(ctx, *load, inner, st.op->reduce_axis);
    }
    if (axis < 0) return;
    const int t = StageOfTensor(s, load->tensor.get());
    if (t < 0 || s.stage(t).loc == ComputeLocKind::Inlined) return;
    const int64_t lanes = PackLanes(ctx, load->tensor->dtype);
    if (load->tensor->shape[axis] < 2 * lanes) return;  // too narrow to gain from packing
    found = PackCandidate{t, axis, lanes};
  });
  return found;
}

class PackOperandRule : public SketchRule {
 public:
  std::string name() const override { return "pack-operand"; }
  Condition MeetCondition(const SketchContext& ctx, const State& s, int stage_id) const override {
    if (!IsFreshRootStage(s, stage_id)) return Condition::Skip;
    if (!NeedsMultiLevelTiling(s, stage_id) || IsCacheWriteStage(s, stage_id)) return Condition::Skip;
    return FindPackCandidate(ctx, s, stage_id) ? Condition::Apply : Condition::Skip;
  }
  // The packed sketch next to the unpacked one (Apply, not ApplyAndSkipRest);
  // the stage is visited again in it, at its new position, for the tiling rules.
  Results Apply(const SketchContext& ctx, const State& s, int stage_id) const override {
    const std::optional<PackCandidate> c = FindPackCandidate(ctx, s, stage_id);
    AS_CHECK(c.has_value(),
             "pack-operand: stage '" << s.stage(stage_id).name() << "' has no operand to pack");
    const std::string name = s.stage(stage_id).name();
    const State r = s.Apply(PackLayoutStep{c->tensor_stage, {stage_id}, c->axis, c->lanes});
    return {{r, r.StageIndex(name)}};
  }
};

// ---- pack-conv-layout ----

// A convolution over channels whose channel axis is not innermost in its
// data (NCHW): the data is packed into channel blocks (NCHW[x]c: the block
// index outermost, x channels innermost) and the weights into blocks of
// input and output channels (OIHW[x]i[y]o), so that a block of channels is
// contiguous in both. x = y = the vector lanes.
struct ConvLayout {
  int data_stage = -1, data_axis = -1;  // the data's channel dimension
  int weight_stage = -1, in_axis = -1;  // the weights' input-channel dimension
  int out_axis = -1;                    // ... and output-channel dimension
  int64_t lanes = 1;
};

bool IsVar(const Expr& e, const VarNode* v) { return e.as<VarNode>() == v; }

std::optional<ConvLayout> FindConvLayout(const SketchContext& ctx, const State& s, int stage_id) {
  const Stage& st = s.stage(stage_id);
  const TensorNode& op = *st.op.get();
  if (op.axis.empty() || op.reduce_axis.empty()) return std::nullopt;
  const TensorLoadNode* data = nullptr;
  const TensorLoadNode* weight = nullptr;
  const VarNode* channel = nullptr;  // the reduce axis over input channels
  int data_axis = -1;
  PostOrderVisit(op.body, [&](const Expr& x) {
    const auto* load = x.as<TensorLoadNode>();
    if (load == nullptr) return;
    const int rank = static_cast<int>(load->indices.size());
    bool windowed = false;
    for (const Expr& idx : load->indices) {
      bool spatial = false, reduce = false;
      for (const IterVar& a : op.axis) spatial = spatial || UsesVar(idx, a.var_node());
      for (const IterVar& r : op.reduce_axis) reduce = reduce || UsesVar(idx, r.var_node());
      windowed = windowed || (spatial && reduce);
    }
    if (windowed && data == nullptr) {
      for (int d = 0; d + 1 < rank; ++d) {  // the channel dimension, not the innermost one
        for (const IterVar& r : op.reduce_axis) {
          if (IsVar(load->indices[d], r.var_node())) {
            data = load, data_axis = d, channel = r.var_node();
          }
        }
      }
    } else if (!windowed) {
      weight = weight == nullptr ? load : weight;
    }
  });
  if (data == nullptr || weight == nullptr || data->tensor.get() == weight->tensor.get()) return std::nullopt;
  ConvLayout layout;
  const int rank = static_cast<int>(weight->indices.size());
  for (int d = 0; d < rank; ++d) {
    if (IsVar(weight->indices[d], channel)) layout.in_axis = d;
    for (const IterVar& a : op.axis) {
      if (IsVar(weight->indices[d], a.var_node())) layout.out_axis = d;
    }
  }
  if (layout.in_axis < 0 || layout.out_axis < 0 || layout.out_axis > layout.in_axis) return std::nullopt;
  layout.lanes = PackLanes(ctx, data->tensor->dtype);
  const int64_t channels = data->tensor->shape[data_axis];
  if (channels < 2 * layout.lanes || weight->tensor->shape[layout.out_axis] < 2 * layout.lanes)
    return std::nullopt;
  layout.data_stage = StageOfTensor(s, data->tensor.get());
  layout.weight_stage = StageOfTensor(s, weight->tensor.get());
  layout.data_axis = data_axis;
  for (int t : {layout.data_stage, layout.weight_stage}) {
    if (t < 0 || s.stage(t).loc == ComputeLocKind::Inlined) return std::nullopt;
  }
  return layout;
}

class PackConvLayoutRule : public SketchRule {
 public:
  std::string name() const override { return "pack-conv-layout"; }
  Condition MeetCondition(const SketchContext& ctx, const State& s, int stage_id) const override {
    if (!IsFreshRootStage(s, stage_id)) return Condition::Skip;
    if (!NeedsMultiLevelTiling(s, stage_id) || IsCacheWriteStage(s, stage_id)) return Condition::Skip;
    return FindConvLayout(ctx, s, stage_id) ? Condition::Apply : Condition::Skip;
  }
  // Three packs: the data by its channels, the weights by their input
  // channels, then that copy by its output channels (which the first weight
  // pack left in place: the input block index went outermost), the middle
  // copy and a computed (padded) data stage inlined into their packs. The
  // stage is visited again in the packed sketch.
  Results Apply(const SketchContext& ctx, const State& s, int stage_id) const override {
    const std::optional<ConvLayout> c = FindConvLayout(ctx, s, stage_id);
    AS_CHECK(c.has_value(),
             "pack-conv-layout: stage '" << s.stage(stage_id).name() << "' is not a convolution");
    const std::string name = s.stage(stage_id).name();
    const std::string weight_name = s.stage(c->weight_stage).name();
    State r = s.Apply(PackLayoutStep{c->data_stage, {stage_id}, c->data_axis, c->lanes});
    r = r.Apply(PackLayoutStep{r.StageIndex(weight_name), {r.StageIndex(name)}, c->in_axis, c->lanes});
    const int out_axis = c->out_axis + 1;  // after the input-block index, now outermost
    const std::string half_packed = weight_name + ".pack";
    r = r.Apply(PackLayoutStep{r.StageIndex(half_packed), {r.StageIndex(name)}, out_axis, c->lanes});
    // The half-packed copy is only read by the second pack: no pass of its own.
    r = r.ComputeInline(r.StageIndex(half_packed));
    // A computed data stage (the padding) is folded into its pack likewise.
    const Stage& data = s.stage(c->data_stage);
    if (!data.is_placeholder() && data.op->reduce_axis.empty())
      r = r.ComputeInline(r.StageIndex(data.name()));
    return {{r, r.StageIndex(name)}};
  }
};

}  // namespace

std::shared_ptr<const SketchRule> MakePackOperandRule() { return std::make_shared<PackOperandRule>(); }
std::shared_ptr<const SketchRule> MakePackConvLayoutRule() { return std::make_shared<PackConvLayoutRule>(); }

}  // namespace autosched
