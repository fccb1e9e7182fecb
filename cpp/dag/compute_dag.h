// ComputeDAG: the tensors a task computes, as a DAG of operations.
//
// Built from the list of input and output tensors the user gives (the
// "arguments", in their order); every operation reachable from the outputs is
// collected in topological order (producers first). Per operation an access
// analysis records what the search and the schedule rules need to know.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace autosched {

// What the access analysis knows about one operation.
struct OpAccessInfo {
  // Every load indexes its tensor with plain variables or constants in order
  // (an element-wise or broadcasting read, no arithmetic on indices).
  bool is_simple_access = false;
  // Simple access, no reduction, not an output, cheap body: can always be
  // inlined into its consumers.
  bool is_strictly_inlineable = false;
  // Has a reduction and reuse of its inputs across spatial axes (matmul,
  // conv): worth multi-level tiling.
  bool needs_multi_level_tiling = false;
  // Needs multi-level tiling only for reuse across axes of extent 1 (a
  // reduction that keeps a dimension, as softmax's row maximum): the tiled
  // loop nest is one sketch of it, the plain one another.
  bool tiling_optional = false;
  bool is_output = false;
  std::vector<int> producers;  // op indices (placeholders included)
  std::vector<int> consumers;  // op indices
};

struct ComputeDAGNode {
  std::vector<Tensor> tensors;       // arguments, as given by the user
  std::vector<Tensor> ops;           // every op, topological order
  std::vector<OpAccessInfo> access;  // parallel to ops
  double flop_ct = 0;
  std::string workload_key;
  std::string structure_key;
};

class ComputeDAG {
 public:
  // Throws Error if the list is empty, holds a duplicate, or if an output
  // depends on a placeholder that is not in the list.
  explicit ComputeDAG(const std::vector<Tensor>& tensors);
  static ComputeDAG FromNode(std::shared_ptr<const ComputeDAGNode> node) {
    return ComputeDAG(std::move(node));
  }

  const std::vector<Tensor>& tensors() const { return node_->tensors; }
  const std::vector<Tensor>& ops() const { return node_->ops; }
  const OpAccessInfo& access(int op) const { return node_->access[op]; }
  // Position of a tensor in ops(); -1 if absent.
  int OpIndex(const TensorNode* t) const;
  int OpIndex(const std::string& name) const;
  // The op a user names, as every API that takes a stage resolves it (a
  // State has one stage per op, in the same order): by position (negative
  // counts from the end), by name (unique among the ops) or by tensor (by
  // identity, else by its unique name: cache and rfactor steps rebuild ops).
  // Throws Error naming the stage when there is no such op or the name is
  // ambiguous.
  int FindOp(int64_t index) const;
  int FindOp(const std::string& name) const;
  int FindOp(const Tensor& tensor) const;
  // True when op's output feeds `consumer` element by element: the consumer
  // reads op at exactly its own spatial indices (same order, no arithmetic).
  bool ElementWiseMatch(int op, int consumer) const;

  // Floating-point (and integer arithmetic) operations to compute all outputs
  // once; index arithmetic excluded; a reduction counts its combiner and body
  // per reduction step.
  double flop_ct() const { return node_->flop_ct; }
  // Canonical key: structural hash of the ops plus shapes and dtypes; stable
  // under renaming of tensors and variables.
  const std::string& workload_key() const { return node_->workload_key; }
  // The key of the DAG's compute structure: the workload key without the
  // sizes (shapes, loop extents and integer constants: see StructureHashOp).
  // DAGs of one structure have the same ops, stages, axes and access
  // patterns, so a schedule of one replays on the other once its split
  // lengths are fitted to the new extents (search/evolution/transfer_seeds.h).
  const std::string& structure_key() const { return node_->structure_key; }
  // The DAG as text, one line per op (see OpToString).
  std::string ToString() const;

  nlohmann::json ToJson() const;
  static ComputeDAG FromJson(const nlohmann::json& doc);

  const std::shared_ptr<const ComputeDAGNode>& node() const { return node_; }

 private:
  explicit ComputeDAG(std::shared_ptr<const ComputeDAGNode> node) : node_(std::move(node)) {}
  std::shared_ptr<const ComputeDAGNode> node_;
};

}  // namespace autosched
