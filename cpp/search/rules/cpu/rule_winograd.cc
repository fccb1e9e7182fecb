// The winograd-row-fusion sketch rule (not in Ansor), for the Winograd
// convolution of ops/winograd.py: data_pack (tag winograd_data_pack), bgemm
// (winograd_bgemm), inverse (winograd_inverse), then the output put back from
// its tiles, with its bias and activation (inlined into one stage by then).
//
// Unfused, each stage is a parallel pass of its own and every intermediate
// tensor (alpha x alpha x tiles x channels) goes through memory twice. Where
// the transformed weights fit in half of L2, they can instead be re-read for
// every row of tiles: this sketch computes, per output row of tiles (the
// output's parallel loop), the row's padded input, data_pack and bgemm (a
// register block of `row_block` tiles x the channel lanes), then per output
// channel block its inverse, and writes the outputs with their bias and
// activation. The intermediates of a row stay in the caches. On ResNet-18's
// 64-channel 56 x 56 convolutions this ran 1.2x faster than the best unfused
// schedule of a 30-minute search; with 128 channels and more the weights no
// longer fit and it lost, so it is only offered where they do. The unfused
// sketches are kept.
#include <algorithm>
#include <optional>

#include "search/rules/search_util.h"
#include "search/rules/sketch_rules.h"
#include "support/error.h"

namespace autosched {

namespace {

using Condition = SketchRule::Condition;
using Results = std::vector<std::pair<State, int>>;

// The widest register block, in tiles. On ResNet-18's layer 1 (rows of 14
// tiles, AVX-512) the search moved blocks of 7 to whole rows of 14.
constexpr int64_t kMaxRowBlock = 16;

int ProducerTagged(const State& s, int stage_id, const std::string& tag) {
  for (int p : s.dag().access(stage_id).producers) {
    if (s.stage(p).op->tag == tag) return p;
  }
  return -1;
}

// The stage the inverse's values end up in: its consumers inlined down to one
// root stage that has not been touched. -1 if there is no such single stage.
int OutputStage(const State& s, int inverse) {
  int current = inverse;
  for (;;) {
    const auto& consumers = s.dag().access(current).consumers;
    if (consumers.size() != 1) return -1;
    current = consumers[0];
    const Stage& st = s.stage(current);
    if (st.loc == ComputeLocKind::Inlined) continue;
    return st.loc == ComputeLocKind::Root && IsUntouched(st) && !HasReduceIter(st) ? current : -1;
  }
}

// The stage that pads data_pack's input (a computed stage reading a tensor,
// read by data_pack only); -1 if data_pack reads its input directly.
int PaddingOf(const State& s, int data_pack) {
  for (int p : s.dag().access(data_pack).producers) {
    const Stage& st = s.stage(p);
    if (st.is_placeholder() || InputTensors(st.op).empty() || !IsFreshRootStage(s, p)) continue;
    if (s.dag().access(p).consumers.size() == 1) return p;
  }
  return -1;
}

struct WinogradStages {
  int data_pack = -1, bgemm = -1, inverse = -1, output = -1;
};

// The stages when stage_id is a Winograd inverse whose output reads it
// through inlined stages only; nullopt otherwise.
std::optional<WinogradStages> FindStages(const State& s, int stage_id) {
  const Stage& inverse = s.stage(stage_id);
  if (inverse.op->tag != "winograd_inverse" || !IsFreshRootStage(s, stage_id)) return std::nullopt;
  WinogradStages w;
  w.inverse = stage_id;
  w.bgemm = ProducerTagged(s, stage_id, "winograd_bgemm");
  if (w.bgemm < 0 || !IsFreshRootStage(s, w.bgemm)) return std::nullopt;
  w.data_pack = ProducerTagged(s, w.bgemm, "winograd_data_pack");
  if (w.data_pack < 0 || !IsFreshRootStage(s, w.data_pack)) return std::nullopt;
  w.output = OutputStage(s, stage_id);
  // (n, channel blocks, height, width, lanes), as the op writes it.
  if (w.output < 0 || s.stage(w.output).num_iters() != 5) return std::nullopt;
  if (s.dag().access(w.data_pack).consumers.size() != 1 || s.dag().access(w.bgemm).consumers.size() != 1)
    return std::nullopt;
  return w;
}

int64_t Extent(const Stage& st, int iter) { return st.iter(iter).extent; }

class WinogradRowFusionRule : public SketchRule {
 public:
  std::string name() const override { return "winograd-row-fusion"; }
  Condition MeetCondition(const SketchContext& ctx, const State& s, int stage_id) const override {
    const auto w = FindStages(s, stage_id);
    if (!w) return Condition::Skip;
    // bgemm (alpha, alpha, tiles, out blocks, lanes) reads the weights
    // (alpha, alpha, out blocks, in blocks, in lanes, lanes) once per row.
    // Its iterators: eps, nu, tiles, out blocks, lanes, then the reduction's
    // in blocks and in lanes.
    const Stage& bgemm = s.stage(w->bgemm);
    int64_t weight_bytes = bgemm.op->dtype.bytes();
    for (int i : {0, 1, 3, 4, 5, 6}) weight_bytes *= Extent(bgemm, i);
    const int64_t l2 = ctx.task.hardware_params.l2_cache_bytes;
    return l2 > 0 && 2 * weight_bytes <= l2 ? Condition::Apply : Condition::Skip;
  }

  Results Apply(const SketchContext& ctx, const State& s, int stage_id) const override {
    const WinogradStages w = *FindStages(s, stage_id);
    const int64_t tile = Extent(s.stage(w.inverse), 0);
    const int64_t lanes = Extent(s.stage(w.bgemm), 4);
    const int64_t tiles_w = (Extent(s.stage(w.output), 3) + tile - 1) / tile;
    const int64_t row_block = RowBlock(ctx, tiles_w, lanes, s.stage(w.bgemm).op->dtype.bytes());

    // The output: (n, ob, y, x, lanes) -> (n, y / tile, ob, y % tile, x, lanes).
    State r = s.Split(w.output, 2, {tile});
    r = r.Reorder(w.output, {0, 2, 1, 3, 4, 5});
    // inverse per channel block: (vh, vw, p, ob, lanes, t_a, t_b) -> (p, ob, vh, vw, t_a, t_b, lanes).
    r = r.ComputeAt(w.inverse, w.output, 2);
    r = r.Reorder(w.inverse, {2, 3, 0, 1, 5, 6, 4});
    r = UnrollThenVectorize(r, w.inverse, {2, 3, 4, 5}, 6);
    // bgemm per row: accumulators of row_block tiles x lanes over the reduction.
    r = r.Apply(CacheWriteStep{w.bgemm, "local"});
    const int local = w.bgemm, copy = w.bgemm + 1, output = w.output + 1;
    AS_CHECK(IsCacheWriteStage(r, local),
             "cache_write of the Winograd bgemm did not place its stage before it");
    r = r.Split(copy, 2, {row_block});        // eps, nu, p.0, p.1, ob, lanes
    r = r.Reorder(copy, {0, 1, 4, 2, 3, 5});  // eps, nu, ob, p.0, p.1, lanes
    r = r.ComputeAt(copy, output, 1);
    r = r.ComputeAt(local, copy, 3);
    r = r.Reorder(local, {0, 1, 3, 5, 6, 2, 4});  // eps, nu, ob, rc, ri, p, lanes
    r = UnrollThenVectorize(r, local, {5}, 6);
    r = UnrollThenVectorize(r, copy, {4}, 5);
    // data_pack per row: (eps, nu, p, cb, ci, t_a, t_b) -> (p, cb, eps, nu, t_a, t_b, ci).
    r = r.ComputeAt(w.data_pack, output, 1);
    r = r.Reorder(w.data_pack, {2, 3, 0, 1, 5, 6, 4});
    r = UnrollThenVectorize(r, w.data_pack, {2, 3, 4, 5}, 6);
    // The padded input too: its rows of a row of tiles, the overlap of two
    // rows copied twice, instead of a pass of its own.
    if (const int pad = PaddingOf(r, w.data_pack); pad >= 0) r = r.ComputeAt(pad, output, 1);
    // The stages before the inverse are visited as usual: the constant
    // matrices get inlined; the stages fused here are no longer at root.
    return {{r, w.inverse}};
  }

 private:
  // The widest block of tiles, dividing a row, whose accumulators fit in the
  // vector registers with room for the operands.
  static int64_t RowBlock(const SketchContext& ctx, int64_t tiles_w, int64_t lanes, int bytes) {
    const HardwareParams& hw = ctx.task.hardware_params;
    const int64_t per_vector = std::max<int64_t>(1, hw.vector_unit_bytes / std::max(1, bytes));
    const int64_t vectors = (lanes + per_vector - 1) / per_vector;
    const int64_t registers = hw.num_vector_registers > 0 ? hw.num_vector_registers : 16;
    const int64_t most = std::clamp<int64_t>((registers - 4) / vectors, 1, kMaxRowBlock);
    for (int64_t b = std::min(most, tiles_w); b > 1; --b) {
      if (tiles_w % b == 0) return b;
    }
    return 1;
  }

  static State UnrollThenVectorize(State s, int stage, const std::vector<int>& unrolled, int vectorized) {
    for (int i : unrolled) s = s.Annotate(stage, i, IteratorAnnotation::Unroll);
    return s.Annotate(stage, vectorized, IteratorAnnotation::Vectorize);
  }
};

}  // namespace

std::shared_ptr<const SketchRule> MakeWinogradRowFusionRule() {
  return std::make_shared<WinogradRowFusionRule>();
}

}  // namespace autosched
