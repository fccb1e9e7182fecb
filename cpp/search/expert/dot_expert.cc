// The dot-product expert (expert_schedule.h): a reduction whose operands are
// all contiguous along it and that has few rows, such as x * W^T with W
// stored [N, K] (PyTorch's Linear) for 1 to 16 rows of x.
#include <algorithm>
#include <random>
#include <set>
#include <sstream>

#include "ir/functor.h"
#include "search/expert/expert_schedule.h"
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
  // Up to four vectors of k per step: independent partial sums hide the FMA
  // latency.
  int64_t length = lanes;
  for (int64_t v : {4, 2}) {
    if (depth % (v * lanes) == 0) {
      length = v * lanes;
      break;
    }
  }
  s = s.Split(tiled, num_axes, {length});
  s = s.Apply(RfactorStep{tiled, num_axes + 1, num_axes});
  const int rf = tiled, out = tiled + 1;
  // The factored stage: (axes..., k.1, k.0) -> (outer axes, rows, k.0, k.1),
  // computed per outer position of the output so that a row of the streamed
  // operand stays in L1 across the rows.
  std::vector<int> order;
  for (int a : outer_axes) order.push_back(a);
  for (int a : row_axes) order.push_back(a);
  std::vector<int> rf_order = order;
  rf_order.push_back(num_axes + 1);
  rf_order.push_back(num_axes);
  s = s.Reorder(rf, rf_order);
  std::vector<int> out_order = order;
  out_order.push_back(num_axes);
  s = s.Reorder(out, out_order);
  s = s.ComputeAt(rf, out, static_cast<int>(outer_axes.size()) - 1);
  s = s.Annotate(rf, s.stage(rf).num_iters() - 1, IteratorAnnotation::Vectorize);
  std::mt19937 rng(0);
  s = MakeParallelRule()->Apply(ctx, s, &rng);
  std::ostringstream os;
  os << st.name() << ": dot products along " << st.op->reduce_axis[0].name() << " in vectors of " << length
     << " (" << length / lanes << " x " << lanes << " lanes), factored and summed per output; " << rows
     << " row" << (rows == 1 ? "" : "s")
     << " <= 2 vectors of lanes read the streamed operand in place, unpacked";
  *note = os.str();
  return s;
}

}  // namespace autosched
