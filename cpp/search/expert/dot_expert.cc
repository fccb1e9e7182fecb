// The dot-product expert (expert_schedule.h): a reduction whose operands are
// all contiguous along it and that has few rows, such as x * W^T with W
// stored [N, K] (PyTorch's Linear) for 1 to 16 rows of x.
#include <algorithm>
#include <random>
#include <set>
#include <sstream>

#include "ir/functor.h"
#include "search/expert/expert_schedule.h"
#include "search/rules/cpu/register_block.h"
#include "search/rules/init_rules.h"
#include "search/rules/mutation_rules.h"
#include "search/rules/search_util.h"
#include "search/rules/sketch_rules.h"

namespace autosched {
namespace {

std::vector<const TensorLoadNode*> LoadsOf(const Stage& st) {
  std::vector<const TensorLoadNode*> loads;
  PostOrderVisit(st.op->body, [&](const Expr& x) {
    if (const auto* load = x.as<TensorLoadNode>()) loads.push_back(load);
  });
  return loads;
}

int64_t TensorElements(const TensorLoadNode* load) {
  int64_t n = 1;
  for (int64_t d : load->tensor->shape) n *= std::max<int64_t>(1, d);
  return n;
}

bool Uses(const TensorLoadNode* load, const VarNode* v) {
  return std::any_of(load->indices.begin(), load->indices.end(),
                     [&](const Expr& e) { return UsesVar(e, v); });
}

}  // namespace

std::optional<State> DotProductExpert(const SketchContext& ctx, std::string* note) {
  const ComputeDAG& dag = ctx.task.compute_dag;
  State s(dag);
  int tiled = -1;
  for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
    if (s.stage(id).is_placeholder() || !NeedsMultiLevelTiling(s, id)) continue;
    if (tiled >= 0) return std::nullopt;  // one reduction per task
    tiled = id;
  }
  if (tiled < 0) return std::nullopt;
  const Stage st = s.stage(tiled);  // a copy: s changes below
  if (st.op->reduce_axis.size() != 1 || !IsUntouched(st)) return std::nullopt;
  const VarNode* k = st.op->reduce_axis[0].var_node();
  const int64_t depth = st.op->reduce_axis[0].extent;
  const int64_t lanes =
      std::max<int64_t>(1, ctx.task.hardware_params.vector_unit_bytes / std::max(1, st.op->dtype.bytes()));
  // Every operand contiguous along the reduction (each lane of a vector of k
  // reads the next element of both), and whole vectors of it.
  const std::vector<const TensorLoadNode*> loads = LoadsOf(st);
  if (loads.size() < 2 || depth % lanes != 0) return std::nullopt;
  for (const TensorLoadNode* load : loads) {
    if (load->indices.empty() || load->indices.back().as<VarNode>() != k) return std::nullopt;
  }
  // Rows: the spatial axes the largest operand (the weights it streams) does
  // not depend on; each of its elements serves that many outputs. A register
  // block would first pack that operand across its rows (a strided copy of all
  // of it, each call); below two vectors' worth of rows, the block's twice
  // higher FMA rate does not earn that copy back, and a dot product along k
  // reads the operand in place.
  const TensorLoadNode* streamed = *std::max_element(
      loads.begin(), loads.end(),
      [](const TensorLoadNode* a, const TensorLoadNode* b) { return TensorElements(a) < TensorElements(b); });
  const int num_axes = static_cast<int>(st.op->axis.size());
  std::vector<int> outer_axes, row_axes;
  int64_t rows = 1;
  for (int a = 0; a < num_axes; ++a) {
    if (Uses(streamed, st.op->axis[a].var_node())) {
      outer_axes.push_back(a);
    } else {
      row_axes.push_back(a);
      rows *= std::max<int64_t>(1, st.op->axis[a].extent);
    }
  }
  if (outer_axes.empty() || rows > 2 * lanes) return std::nullopt;
  // Other stages: inlined where the always-inline rule would.
  const auto inline_rule = MakeAlwaysInlineRule();
  for (int id = static_cast<int>(s.stages().size()) - 1; id >= 0; --id) {
    if (id == tiled || s.stage(id).is_placeholder()) continue;
    if (inline_rule->MeetCondition(ctx, s, id) != SketchRule::Condition::Skip)
      s = inline_rule->Apply(ctx, s, id).front().first;
  }
  // A block of the last row axis' rows shares each vector of the streamed
  // operand from a register: `block` rows x `vectors` accumulators, plus the
  // streamed vectors and one for the other operand, fill at most the register
  // file; up to four vectors of k per row (independent partial sums hide the
  // FMA latency), as many as divide K.
  const int64_t registers = VectorRegisterCount(ctx.task.hardware_params);
  const int last_row = row_axes.empty() ? -1 : row_axes.back();
  const int64_t row_extent = last_row >= 0 ? std::max<int64_t>(1, st.op->axis[last_row].extent) : 1;
  int64_t block = 1;
  for (int64_t d = 1; d <= row_extent && d + 2 <= registers; ++d) {
    if (row_extent % d == 0) block = d;
  }
  int64_t vectors = std::clamp<int64_t>((registers - 1) / (block + 1), 1, 4);
  while (vectors > 1 && depth % (vectors * lanes) != 0) --vectors;
  const int64_t length = vectors * lanes;
  s = s.Split(tiled, num_axes, {length});
  s = s.Apply(RfactorStep{tiled, num_axes + 1, num_axes});
  const int rf = tiled, out = tiled + 1;
  // The factored stage: (axes..., k.1, k.0) -> (outer axes, rows, row
  // blocks, k.0, rows of a block, k.1), computed per outer position of the
  // output so that a row of the streamed operand stays in L1 across the rows.
  const bool split_rows = block > 1;
  if (split_rows) s = s.Split(rf, last_row, {block});
  auto rf_index = [&](int a) { return split_rows && a > last_row ? a + 1 : a; };
  const int k_inner = num_axes + (split_rows ? 1 : 0), k_outer = k_inner + 1;
  std::vector<int> rf_order;
  for (int a : outer_axes) rf_order.push_back(rf_index(a));
  for (int a : row_axes) rf_order.push_back(rf_index(a));
  rf_order.push_back(k_outer);
  if (split_rows) rf_order.push_back(last_row + 1);
  rf_order.push_back(k_inner);
  s = s.Reorder(rf, rf_order);
  // Where all the rows of the other operand overflow L1 but a block of them
  // fits (16 rows of K = 768 floats: 48 KiB), the rows go round in blocks
  // inside panels of the streamed operand that fit half of L2: each block
  // stays in L1 across a panel, each panel in L2 across the blocks.
  const HardwareParams& hw = ctx.task.hardware_params;
  const int64_t row_bytes = depth * std::max(1, st.op->dtype.bytes());
  const bool panels = num_axes == 2 && outer_axes.size() == 1 && row_axes.size() == 1 && block < row_extent &&
                      block * row_bytes <= L1Bytes(hw) && row_extent * row_bytes > L1Bytes(hw);
  int64_t panel = 1;
  if (panels) {
    const int64_t outer_extent = st.op->axis[outer_axes[0]].extent;
    for (int64_t d = 1; d <= outer_extent && d * row_bytes <= L2Bytes(hw) / 2; ++d) {
      if (outer_extent % d == 0) panel = d;
    }
  }
  // (j, i) split into (j.0, j.1) by the panel and (i.0, i.1) by the block,
  // ordered (j.0, i.0, j.1, i.1) before any axis after them.
  auto panel_order = [&](int stage) {
    const int j = outer_axes[0], i = row_axes[0];
    if (j > i) {
      s = s.Split(stage, j, {panel});
      s = s.Split(stage, i, {block});
      return std::vector<int>{j + 1, i, j + 2, i + 1};
    }
    s = s.Split(stage, i, {block});
    s = s.Split(stage, j, {panel});
    return std::vector<int>{j, i + 1, j + 1, i + 2};
  };
  const int epilogue = ElementwiseFusionTarget(s, out);
  const bool fuse_epilogue = epilogue >= 0 && s.stage(epilogue).num_iters() == num_axes;
  if (panels) {
    std::vector<int> out_order = panel_order(out);
    out_order.push_back(num_axes + 2);  // the factored lanes
    s = s.Reorder(out, out_order);
    s = s.ComputeAt(rf, out, 2);
    if (fuse_epilogue) {
      s = s.Reorder(epilogue, panel_order(epilogue));
      s = s.ComputeAt(out, epilogue, 1);
    }
  } else {
    std::vector<int> out_order(outer_axes);
    out_order.insert(out_order.end(), row_axes.begin(), row_axes.end());
    out_order.push_back(num_axes);
    s = s.Reorder(out, out_order);
    s = s.ComputeAt(rf, out, static_cast<int>(outer_axes.size()) - 1);
    // An element-wise epilogue (bias, GELU) computes the layer inside its own
    // loops over the outer axes, so the layer's output is written once, by it.
    if (fuse_epilogue) {
      std::vector<int> epilogue_order(outer_axes);
      epilogue_order.insert(epilogue_order.end(), row_axes.begin(), row_axes.end());
      s = s.Reorder(epilogue, epilogue_order);
      s = s.ComputeAt(out, epilogue, static_cast<int>(outer_axes.size()) - 1);
    }
  }
  const int rf_iters = s.stage(rf).num_iters();
  s = s.Annotate(rf, rf_iters - 1, IteratorAnnotation::Vectorize);
  if (split_rows) s = s.Annotate(rf, rf_iters - 2, IteratorAnnotation::Unroll);
  std::mt19937 rng(0);
  s = MakeParallelRule()->Apply(ctx, s, &rng);
  std::ostringstream os;
  os << st.name() << ": dot products along " << st.op->reduce_axis[0].name() << " in vectors of " << length
     << " (" << vectors << " x " << lanes << " lanes), " << block << " row" << (block == 1 ? "" : "s")
     << " at a time sharing each vector of the streamed operand (" << block * vectors << " accumulators + "
     << vectors + 1 << " of " << registers << " registers), factored and summed per output; " << rows
     << " row" << (rows == 1 ? "" : "s")
     << " <= 2 vectors of lanes read the streamed operand in place, unpacked";
  if (panels)
    os << "; the blocks of rows go round panels of " << panel << " of " << st.op->axis[outer_axes[0]].name()
       << " (a block's " << block * row_bytes / 1024 << " KiB within L1, a panel's "
       << panel * row_bytes / 1024 << " KiB within L2/2)";
  *note = os.str();
  return s;
}

}  // namespace autosched
