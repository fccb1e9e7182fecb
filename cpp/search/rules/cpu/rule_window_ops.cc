// The window-op sketch rules (not in Ansor), for stages that reduce over a
// small sliding window: depthwise convolution and pooling.
//
// inline-window-padding: the padding stage such a stage reads (a guarded
//   copy, PaddedInput) is inlined into it, next to the sketch that keeps it,
//   so the padding becomes a guarded load in the kernel instead of a pass
//   that writes and rereads the whole padded tensor.
// window-vectorize: a window stage that is not multi-level tiled (pooling)
//   gets its innermost spatial axis split, the window loops moved between the
//   two parts and unrolled, so the inner part is vectorized by the init rules
//   (across channels in NHWC) with the whole window in registers; the plain
//   stage (window innermost, not vectorizable) stays a sketch too.
#include <algorithm>

#include "ir/functor.h"
#include "search/rules/search_util.h"
#include "search/rules/sketch_rules.h"
#include "support/error.h"

namespace autosched {

namespace {

using Condition = SketchRule::Condition;
using Results = std::vector<std::pair<State, int>>;

// Windows up to this many points are unrolled (7 x 7).
constexpr int64_t kMaxWindowPoints = 49;

bool IsBranch(const Expr& e) {
  if (e.kind() == ExprKind::Select) return true;
  const auto* call = e.as<CallNode>();
  return call != nullptr && call->op == Intrinsic::IfThenElse;
}

// Whether the stage's op reduces over a window only. A load whose index
// mixes a spatial and a reduce axis (h * stride + dh) reads the windowed
// data: each of its indices that uses a reduce axis must use exactly one
// spatial axis too (a reduce axis alone there is a reduction over channels,
// as in a convolution). Other loads (the depthwise weights) may use the
// reduce axes freely. The window has at most kMaxWindowPoints points.
bool IsWindowReduction(const Stage& st) {
  const TensorNode& op = *st.op.get();
  if (!op.is_compute() || op.reduce_axis.empty()) return false;
  int64_t points = 1;
  for (const IterVar& r : op.reduce_axis) points *= std::max<int64_t>(1, r.extent);
  if (points > kMaxWindowPoints) return false;
  auto count_uses = [](const Expr& idx, const std::vector<IterVar>& axes) {
    int n = 0;
    for (const IterVar& a : axes) n += UsesVar(idx, a.var_node()) ? 1 : 0;
    return n;
  };
  bool window_seen = false, ok = true;
  PostOrderVisit(op.body, [&](const Expr& x) {
    const auto* load = x.as<TensorLoadNode>();
    if (load == nullptr || !ok) return;
    const bool windowed = std::any_of(load->indices.begin(), load->indices.end(), [&](const Expr& idx) {
      return count_uses(idx, op.reduce_axis) > 0 && count_uses(idx, op.axis) > 0;
    });
    if (!windowed) return;
    window_seen = true;
    for (const Expr& idx : load->indices) {
      if (count_uses(idx, op.reduce_axis) > 0 && count_uses(idx, op.axis) != 1) ok = false;
    }
  });
  return ok && window_seen;
}

// The padding stage the window stage reads: a computed, non-output stage
// without reduction whose only consumer is stage_id, that reads one tensor
// under a branch (if_then_else / select) and is not inlined yet. -1 if none.
int PaddingProducer(const State& s, int stage_id) {
  for (int p : s.dag().access(stage_id).producers) {
    const Stage& ps = s.stage(p);
    const OpAccessInfo& info = s.dag().access(p);
    if (ps.is_placeholder() || ps.loc == ComputeLocKind::Inlined || info.is_output) continue;
    if (!ps.op->reduce_axis.empty() || info.consumers.size() != 1 || info.consumers[0] != stage_id) continue;
    if (InputTensors(ps.op).size() != 1) continue;
    bool branch = false;
    PostOrderVisit(ps.op->body, [&](const Expr& x) { branch = branch || IsBranch(x); });
    if (branch) return p;
  }
  return -1;
}

bool IsFreshWindowStage(const State& s, int stage_id) {
  return IsFreshRootStage(s, stage_id) && !IsCacheWriteStage(s, stage_id) &&
         IsWindowReduction(s.stage(stage_id));
}

class InlineWindowPaddingRule : public SketchRule {
 public:
  std::string name() const override { return "inline-window-padding"; }
  Condition MeetCondition(const SketchContext&, const State& s, int stage_id) const override {
    return IsFreshWindowStage(s, stage_id) && PaddingProducer(s, stage_id) >= 0 ? Condition::Apply
                                                                                : Condition::Skip;
  }
  // The stage is visited again in the new sketch (its padding now inlined)
  // by the rules after this one.
  Results Apply(const SketchContext&, const State& s, int stage_id) const override {
    const int pad = PaddingProducer(s, stage_id);
    AS_CHECK(pad >= 0, "inline-window-padding: stage '" << s.stage(stage_id).name() << "' reads no padding");
    return {{s.ComputeInline(pad), stage_id}};
  }
};

// A convolution's padding, visited after the tiled convolution: also a
// sketch with it computed per output tile (at the loop of the stage the
// convolution is fused into, or at the convolution's outermost spatial tile
// when it is not fused), so the padded copy is written a tile at a time
// while it is hot in cache instead of in a pass of its own over the whole
// input before the convolution. Only for a strided convolution whose padded
// input holds more than kPaddingAtTileRatio times its outputs: there the
// pass costs most against the convolution's work. On a Zen 3, 400 trials
// each: a ResNet-18 stride-2 3x3 convolution (64 to 128 channels, 56 to 28)
// ran 0.656 ms against 0.750 ms with the padding's own pass; a stride-1 one
// (64 channels, 56 x 56), where the search spent its trials on the new
// sketch too, 1.36 ms against 1.24 ms. The ratio alone also lets in stride-1
// convolutions of small images (9 x 9 padded for 7 x 7 outputs: 1.65), where
// ResNet-18's 7 x 7 convolutions tuned 10-13% slower with the sketch.
constexpr double kPaddingAtTileRatio = 1.5;

// Whether `conv` steps through `input` with a stride: an index of its loads
// of `input` multiplies one of its output axes by a constant of at least 2
// (yy * 2 + ry).
bool ReadsWithStride(const TensorNode& conv, const TensorNode* input) {
  auto is_output_axis = [&](const Expr& e) {
    const auto* var = e.as<VarNode>();
    return var != nullptr && std::any_of(conv.axis.begin(), conv.axis.end(),
                                         [&](const IterVar& a) { return a.var_node() == var; });
  };
  auto at_least_two = [](const Expr& e) {
    const auto* c = e.as<IntImmNode>();
    return c != nullptr && c->value >= 2;
  };
  bool strided = false;
  PostOrderVisit(conv.body, [&](const Expr& x) {
    const auto* load = x.as<TensorLoadNode>();
    if (load == nullptr || load->tensor.get() != input) return;
    for (const Expr& idx : load->indices) {
      PostOrderVisit(idx, [&](const Expr& y) {
        const auto* mul = y.as<BinaryNode>();
        if (mul != nullptr && mul->op == BinOp::Mul &&
            ((is_output_axis(mul->a) && at_least_two(mul->b)) ||
             (is_output_axis(mul->b) && at_least_two(mul->a))))
          strided = true;
      });
    }
  });
  return strided;
}

double Elements(const Stage& st) {
  double n = 1;
  for (int64_t d : st.op->shape) n *= static_cast<double>(d);
  return n;
}

class PaddingAtTileRule : public SketchRule {
 public:
  std::string name() const override { return "padding-at-tile"; }
  Condition MeetCondition(const SketchContext&, const State& s, int stage_id) const override {
    const Stage& st = s.stage(stage_id);
    if (!IsFreshRootStage(s, stage_id)) return Condition::Skip;
    const auto& consumers = s.dag().access(stage_id).consumers;
    if (consumers.size() != 1 || PaddingProducer(s, consumers[0]) != stage_id) return Condition::Skip;
    const Stage& consumer = s.stage(consumers[0]);
    if (IsUntouched(consumer) || !NeedsMultiLevelTiling(s, consumers[0])) return Condition::Skip;
    if (Elements(st) <= kPaddingAtTileRatio * Elements(consumer)) return Condition::Skip;
    if (!ReadsWithStride(*consumer.op.get(), st.op.get())) return Condition::Skip;
    return AttachPoint(s, consumers[0]).first >= 0 ? Condition::Apply : Condition::Skip;
  }
  Results Apply(const SketchContext&, const State& s, int stage_id) const override {
    const auto [target, iter] = AttachPoint(s, s.dag().access(stage_id).consumers[0]);
    return {{s.ComputeAt(stage_id, target, iter), stage_id - 1}};
  }

 private:
  // (stage, iterator index) of the output tile around the consumer.
  static std::pair<int, int> AttachPoint(const State& s, int consumer) {
    const Stage& c = s.stage(consumer);
    if (c.loc == ComputeLocKind::At)
      return {c.attach_stage, s.stage(c.attach_stage).LeafIndex(c.attach_node)};
    const int last_outer = static_cast<int>(c.op->axis.size()) - 1;
    if (c.loc != ComputeLocKind::Root || last_outer < 0 || last_outer >= c.num_iters() ||
        c.iter(last_outer).kind != IteratorKind::Spatial)
      return {-1, -1};
    return {consumer, last_outer};
  }
};

class WindowVectorizeRule : public SketchRule {
 public:
  std::string name() const override { return "window-vectorize"; }
  Condition MeetCondition(const SketchContext&, const State& s, int stage_id) const override {
    if (!IsFreshWindowStage(s, stage_id) || NeedsMultiLevelTiling(s, stage_id)) return Condition::Skip;
    const Stage& st = s.stage(stage_id);
    return st.op->axis.back().extent >= 2 ? Condition::Apply : Condition::Skip;
  }
  // Untouched: axes a0..a(n-1), then the window w0..w(m-1). After splitting
  // a(n-1) into (o, i): a0..a(n-2), o, w.., i; the window loops unrolled.
  Results Apply(const SketchContext&, const State& s, int stage_id) const override {
    const Stage& st = s.stage(stage_id);
    const int num_axes = static_cast<int>(st.op->axis.size());
    const int num_window = static_cast<int>(st.op->reduce_axis.size());
    State r = s.Split(stage_id, num_axes - 1, {std::nullopt});
    std::vector<int> order;
    for (int i = 0; i < num_axes; ++i) order.push_back(i);  // a0..a(n-2), o
    for (int w = 0; w < num_window; ++w) order.push_back(num_axes + 1 + w);
    order.push_back(num_axes);  // i
    r = r.Reorder(stage_id, order);
    for (int w = 0; w < num_window; ++w) r = r.Annotate(stage_id, num_axes + w, IteratorAnnotation::Unroll);
    return {{r, stage_id - 1}};
  }
};

}  // namespace

bool IsWindowStage(const State& s, int stage_id) {
  return HasLoops(s, stage_id) && IsWindowReduction(s.stage(stage_id));
}

std::shared_ptr<const SketchRule> MakeInlineWindowPaddingRule() {
  return std::make_shared<InlineWindowPaddingRule>();
}
std::shared_ptr<const SketchRule> MakePaddingAtTileRule() { return std::make_shared<PaddingAtTileRule>(); }
std::shared_ptr<const SketchRule> MakeWindowVectorizeRule() {
  return std::make_shared<WindowVectorizeRule>();
}

}  // namespace autosched
