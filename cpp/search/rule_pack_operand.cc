// The pack-operand sketch rule (not in Ansor): an operand that a tiled stage
// streams along its innermost spatial axis while a reduction walks it with a
// large stride (the B of a matmul, conv weights), or that it reads across rows
// along that axis (the weight of a dense layer, a transposed B), is copied
// into a tile-contiguous layout first, so the inner kernel reads it
// contiguously.
#include <algorithm>
#include <optional>

#include "ir/functor.h"
#include "search/search_util.h"
#include "search/sketch_rules.h"
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
    const Stage& st = s.stage(stage_id);
    if (!HasLoops(s, stage_id) || st.loc != ComputeLocKind::Root || !IsUntouched(st)) return Condition::Skip;
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

}  // namespace

std::shared_ptr<const SketchRule> MakePackOperandRule() { return std::make_shared<PackOperandRule>(); }

}  // namespace autosched
