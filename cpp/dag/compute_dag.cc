// ComputeDAG construction and its analyses.
//
// Roadmap: the constructor validates the argument list, orders every
// reachable op (CollectOps), then fills the per-op access facts
// (AnalyzeAccess), the FLOP count (CountOpFlops) and the workload key
// (ComputeWorkloadKey). Each analysis is a free function in the anonymous
// namespace so it can be read on its own.
#include "dag/compute_dag.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/functor.h"
#include "ir/printer.h"
#include "ir/serialize.h"
#include "ir/structural.h"
#include "support/error.h"

namespace autosched {
namespace {

// ---- topological order ----

// Post-order DFS from each argument in the user's order, producers in order of
// first use: deterministic and independent of names.
std::vector<Tensor> CollectOps(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> order;
  std::unordered_set<const TensorNode*> visited;
  std::function<void(const Tensor&)> visit = [&](const Tensor& t) {
    if (!visited.insert(t.get()).second) return;
    for (const Tensor& input : InputTensors(t)) visit(input);
    order.push_back(t);
  };
  for (const Tensor& t : tensors) visit(t);
  return order;
}

void ValidateArguments(const std::vector<Tensor>& tensors, const std::vector<Tensor>& ops) {
  AS_CHECK(!tensors.empty(), "a ComputeDAG needs at least one tensor");
  std::unordered_set<const TensorNode*> listed;
  for (size_t i = 0; i < tensors.size(); ++i) {
    AS_CHECK(tensors[i].defined(), "tensor " << i << " of the ComputeDAG's arguments is undefined");
    AS_CHECK(listed.insert(tensors[i].get()).second,
             "tensor '" << tensors[i]->name << "' appears more than once in the ComputeDAG's arguments");
  }
  for (const Tensor& op : ops) {
    AS_CHECK(!op->is_placeholder() || listed.count(op.get()),
             "placeholder '" << op->name << "' is used by the computation but is not among the "
                             << "ComputeDAG's arguments (add it to the list of tensors)");
  }
}

// ---- access analysis ----

std::vector<const TensorLoadNode*> CollectLoads(const Expr& body) {
  std::vector<const TensorLoadNode*> loads;
  PostOrderVisit(body, [&](const Expr& x) {
    if (const auto* load = x.as<TensorLoadNode>()) loads.push_back(load);
  });
  return loads;
}

// Position of v among the op's spatial axes, or -1.
int SpatialPosition(const TensorNode* op, const VarNode* v) {
  for (size_t i = 0; i < op->axis.size(); ++i) {
    if (op->axis[i].var_node() == v) return static_cast<int>(i);
  }
  return -1;
}

// Indices are plain variables or constants, no variable twice, and the
// spatial axes that appear do so in increasing order (no transpose).
bool IsSimpleLoad(const TensorNode* op, const TensorLoadNode* load) {
  std::unordered_set<const VarNode*> seen;
  int last_spatial = -1;
  for (const Expr& idx : load->indices) {
    if (idx.as<IntImmNode>()) continue;
    const auto* v = idx.as<VarNode>();
    if (v == nullptr || !seen.insert(v).second) return false;
    int pos = SpatialPosition(op, v);
    if (pos < 0) continue;
    if (pos < last_spatial) return false;
    last_spatial = pos;
  }
  return true;
}

// Intrinsics worth computing once rather than in every consumer.
bool HasExpensiveCall(const Expr& body) {
  bool found = false;
  PostOrderVisit(body, [&](const Expr& x) {
    const auto* call = x.as<CallNode>();
    if (call == nullptr) return;
    if (FactsOf(call->op).expensive) found = true;
  });
  return found;
}

// Some load misses a spatial axis (of more than one iteration unless
// `unit_axes`): its data is reused across that axis.
bool HasReuseAcrossSpatialAxes(const TensorNode* op, const std::vector<const TensorLoadNode*>& loads,
                               bool unit_axes) {
  for (const TensorLoadNode* load : loads) {
    for (const IterVar& iv : op->axis) {
      if (iv.extent == 1 && !unit_axes) continue;
      bool used = std::any_of(load->indices.begin(), load->indices.end(),
                              [&](const Expr& idx) { return UsesVar(idx, iv.var_node()); });
      if (!used) return true;
    }
  }
  return false;
}

std::vector<OpAccessInfo> AnalyzeAccess(const std::vector<Tensor>& tensors, const std::vector<Tensor>& ops,
                                        const std::function<int(const TensorNode*)>& index_of) {
  std::vector<OpAccessInfo> access(ops.size());
  std::unordered_set<const TensorNode*> listed;
  for (const Tensor& t : tensors) listed.insert(t.get());
  for (size_t i = 0; i < ops.size(); ++i) {
    const TensorNode* op = ops[i].get();
    OpAccessInfo& info = access[i];
    for (const Tensor& input : InputTensors(ops[i])) {
      int p = index_of(input.get());
      info.producers.push_back(p);
      access[p].consumers.push_back(static_cast<int>(i));  // producers come first: sorted
    }
    if (!op->is_compute()) continue;
    info.is_output = listed.count(op) > 0;
    std::vector<const TensorLoadNode*> loads = CollectLoads(op->body);
    info.is_simple_access =
        std::all_of(loads.begin(), loads.end(), [&](const TensorLoadNode* l) { return IsSimpleLoad(op, l); });
    bool has_reduce = !op->reduce_axis.empty();
    info.is_strictly_inlineable =
        info.is_simple_access && !has_reduce && !info.is_output && !HasExpensiveCall(op->body);
    info.needs_multi_level_tiling = has_reduce && HasReuseAcrossSpatialAxes(op, loads, true);
    info.tiling_optional = info.needs_multi_level_tiling && !HasReuseAcrossSpatialAxes(op, loads, false);
  }
  return access;
}

// ---- FLOP count ----

struct FlopCount {
  double ops = 0;
  bool data = false;  // the value depends on tensor data
};

// Counts arithmetic on values: an operation counts when it is on floats or on
// data read from tensors; pure index arithmetic (variables and constants only,
// in load indices or in conditions) does not.
FlopCount CountFlops(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::TensorLoad: return {0, true};
    case ExprKind::Binary: {
      const auto* n = e.as<BinaryNode>();
      FlopCount a = CountFlops(n->a), b = CountFlops(n->b);
      bool counted = n->a.dtype().is_float() || a.data || b.data;
      return {a.ops + b.ops + (counted ? 1 : 0), a.data || b.data};
    }
    case ExprKind::Select:
    case ExprKind::Call: {
      std::vector<Expr> args = Children(e);
      bool branch = e.kind() == ExprKind::Select || e.as<CallNode>()->op == Intrinsic::IfThenElse;
      FlopCount total{branch ? 0.0 : 1.0, false};  // a branch costs nothing, an intrinsic one op
      double widest_branch = 0;
      for (size_t i = 0; i < args.size(); ++i) {
        FlopCount c = CountFlops(args[i]);
        total.data |= c.data;
        if (branch && i > 0) {
          widest_branch = std::max(widest_branch, c.ops);  // one branch runs per element
        } else {
          total.ops += c.ops;
        }
      }
      total.ops += widest_branch;
      return total;
    }
    case ExprKind::Reduce: {
      const auto* n = e.as<ReduceNode>();
      double steps = 1;
      for (const IterVar& iv : n->axis) steps *= static_cast<double>(iv.extent);
      FlopCount per_step = CountFlops(n->source);
      if (n->condition.defined()) per_step.ops += CountFlops(n->condition).ops;
      return {(per_step.ops + 1) * steps, per_step.data};  // + 1: the combiner
    }
    default: {  // immediates, variables (0); cast, not, let: their operands
      FlopCount total;
      for (const Expr& kid : Children(e)) {
        FlopCount c = CountFlops(kid);
        total.ops += c.ops;
        total.data |= c.data;
      }
      return total;
    }
  }
}

double CountOpFlops(const Tensor& op) {
  if (!op->is_compute()) return 0;
  return CountFlops(op->body).ops * static_cast<double>(op->num_elements());
}

// ---- workload key ----

uint64_t HashString(const std::string& s) {  // FNV-1a: stable across processes and platforms
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t HashShapeAndType(uint64_t seed, const TensorNode* t) {
  seed = HashCombine(seed, HashString(t->dtype.str()));
  seed = HashCombine(seed, t->shape.size());
  for (int64_t d : t->shape) seed = HashCombine(seed, static_cast<uint64_t>(d));
  return seed;
}

std::string HexKey(uint64_t h) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

std::string ComputeWorkloadKey(const std::vector<Tensor>& tensors, const std::vector<Tensor>& ops,
                               const std::function<int(const TensorNode*)>& index_of) {
  TensorIndexFn tensor_index = [&](const TensorNode* t) -> int64_t { return index_of(t); };
  uint64_t h = HashString("autosched.ComputeDAG");
  for (const Tensor& op : ops) h = HashCombine(h, StructuralHashOp(op, tensor_index));
  for (size_t i = 0; i < tensors.size(); ++i) {
    h = HashCombine(h, i);
    h = HashCombine(h, static_cast<uint64_t>(index_of(tensors[i].get())));
    h = HashShapeAndType(h, tensors[i].get());
  }
  return HexKey(h);
}

// The workload key with the sizes left out: the ops' structure, the order of
// the arguments and their dtypes and ranks.
std::string ComputeStructureKey(const std::vector<Tensor>& tensors, const std::vector<Tensor>& ops,
                                const std::function<int(const TensorNode*)>& index_of) {
  TensorIndexFn tensor_index = [&](const TensorNode* t) -> int64_t { return index_of(t); };
  uint64_t h = HashString("autosched.ComputeDAG.structure");
  for (const Tensor& op : ops) h = HashCombine(h, StructureHashOp(op, tensor_index));
  for (size_t i = 0; i < tensors.size(); ++i) {
    h = HashCombine(h, static_cast<uint64_t>(index_of(tensors[i].get())));
    h = HashCombine(h, HashString(tensors[i]->dtype.str()));
    h = HashCombine(h, tensors[i]->shape.size());
  }
  return HexKey(h);
}

}  // namespace

ComputeDAG::ComputeDAG(const std::vector<Tensor>& tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    AS_CHECK(tensors[i].defined(), "tensor " << i << " of the ComputeDAG's arguments is undefined");
  }
  auto node = std::make_shared<ComputeDAGNode>();
  node->tensors = tensors;
  node->ops = CollectOps(tensors);
  ValidateArguments(tensors, node->ops);
  std::unordered_map<const TensorNode*, int> positions;
  for (size_t i = 0; i < node->ops.size(); ++i) positions[node->ops[i].get()] = static_cast<int>(i);
  auto index_of = [&](const TensorNode* t) { return positions.at(t); };
  node->access = AnalyzeAccess(tensors, node->ops, index_of);
  for (const Tensor& op : node->ops) node->flop_ct += CountOpFlops(op);
  node->workload_key = ComputeWorkloadKey(tensors, node->ops, index_of);
  node->structure_key = ComputeStructureKey(tensors, node->ops, index_of);
  node_ = std::move(node);
}

int ComputeDAG::OpIndex(const TensorNode* t) const {
  const std::vector<Tensor>& all = ops();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].get() == t) return static_cast<int>(i);
  }
  return -1;
}

int ComputeDAG::OpIndex(const std::string& name) const {
  const std::vector<Tensor>& all = ops();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i]->name == name) return static_cast<int>(i);
  }
  return -1;
}

int ComputeDAG::FindOp(int64_t index) const {
  const auto n = static_cast<int64_t>(ops().size());
  AS_CHECK(index >= -n && index < n,
           "stage " << index << " does not exist (there are " << n << " stages, one per op)");
  return static_cast<int>(index < 0 ? index + n : index);
}

int ComputeDAG::FindOp(const std::string& name) const {
  int found = -1;
  std::string names;
  for (size_t i = 0; i < ops().size(); ++i) {
    names += (i ? ", " : "") + ops()[i]->name;
    if (ops()[i]->name != name) continue;
    AS_CHECK(found < 0, "stage name '" << name << "' is ambiguous: stages " << found << " and " << i
                                       << " have it; address the stage by tensor or by index");
    found = static_cast<int>(i);
  }
  AS_CHECK(found >= 0, "no stage named '" << name << "' (the stages are " << names << ")");
  return found;
}

int ComputeDAG::FindOp(const Tensor& tensor) const {
  AS_CHECK(tensor.defined(), "an undefined tensor names no stage");
  const int index = OpIndex(tensor.get());
  return index >= 0 ? index : FindOp(tensor->name);
}

bool ComputeDAG::ElementWiseMatch(int op, int consumer) const {
  int n = static_cast<int>(ops().size());
  AS_CHECK(op >= 0 && op < n && consumer >= 0 && consumer < n,
           "ElementWiseMatch: op index " << op << " or " << consumer << " is out of range");
  const TensorNode* producer = ops()[op].get();
  const TensorNode* reader = ops()[consumer].get();
  if (!reader->is_compute() || producer->shape != reader->shape) return false;
  bool reads_producer = false;
  for (const TensorLoadNode* load : CollectLoads(reader->body)) {
    if (load->tensor.get() != producer) continue;
    reads_producer = true;
    for (size_t d = 0; d < load->indices.size(); ++d) {
      if (load->indices[d].as<VarNode>() != reader->axis[d].var_node()) return false;
    }
  }
  return reads_producer;
}

std::string ComputeDAG::ToString() const {
  std::ostringstream os;
  for (const Tensor& op : ops()) os << OpToString(op) << "\n";
  return os.str();
}

nlohmann::json ComputeDAG::ToJson() const { return TensorsToJson(tensors()); }

ComputeDAG ComputeDAG::FromJson(const nlohmann::json& doc) { return ComputeDAG(TensorsFromJson(doc)); }

}  // namespace autosched
