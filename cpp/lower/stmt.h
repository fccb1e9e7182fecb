// Statements of the loop-nest IR that lowering produces and code generation
// consumes (CPU through LLVM, GPU through OpenCL C), and that cost-model
// features are extracted from.
//
// Expressions inside statements use the Expr nodes of ir/expr.h; after
// lowering they contain no TensorLoad or Reduce, only BufferLoad (plus Ramp,
// Broadcast and Let once vectorized).
//
// Semantics
//  - For: runs body for loop_var = min .. min + extent - 1. kind says how:
//    serial, parallel (CPU threads), vectorized (extent lanes of SIMD),
//    unrolled, or bound to a GPU thread / block index / virtual thread.
//  - BufferStore: buffer[indices] = value; a vector index (Ramp) stores lanes.
//  - Allocate: buffer lives for the duration of body, in its scope.
//  - IfThenElse: else_case may be undefined.
//  - Seq: statements in order.
//  - LetStmt: var bound to value in body.
//  - Pragma: an annotation of the enclosed statement, e.g.
//    "auto_unroll_max_step" = 16, consumed by passes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace autosched {

enum class StmtKind : uint8_t { For, BufferStore, Allocate, IfThenElse, Seq, LetStmt, Pragma };

enum class ForKind : uint8_t {
  Serial,
  Parallel,
  Vectorized,
  Unrolled,
  VThread,
  BlockIdxX,
  BlockIdxY,
  BlockIdxZ,
  ThreadIdxX,
  ThreadIdxY,
  ThreadIdxZ,
};
const char* ForKindName(ForKind k);  // "serial", "parallel", "blockIdx.x", ...
bool IsGpuBinding(ForKind k);        // block / thread indices

struct StmtNode {
  StmtKind kind;
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
};

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const StmtNode> node) : node_(std::move(node)) {}
  bool defined() const { return node_ != nullptr; }
  const StmtNode* get() const { return node_.get(); }
  StmtKind kind() const { return node_->kind; }
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }
  bool same_as(const Stmt& o) const { return node_ == o.node_; }

 private:
  std::shared_ptr<const StmtNode> node_;
};

struct ForNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::For;
  Expr loop_var;  // a VarNode
  Expr min, extent;
  ForKind for_kind;
  Stmt body;
  ForNode(Expr v, Expr mn, Expr ext, ForKind k, Stmt b)
      : StmtNode(kKind),
        loop_var(std::move(v)),
        min(std::move(mn)),
        extent(std::move(ext)),
        for_kind(k),
        body(std::move(b)) {}
  static Stmt make(Expr loop_var, Expr min, Expr extent, ForKind kind, Stmt body);
};

struct BufferStoreNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::BufferStore;
  Buffer buffer;
  Expr value;
  std::vector<Expr> indices;
  BufferStoreNode(Buffer b, Expr v, std::vector<Expr> idx)
      : StmtNode(kKind), buffer(std::move(b)), value(std::move(v)), indices(std::move(idx)) {}
  static Stmt make(Buffer buffer, Expr value, std::vector<Expr> indices);
};

struct AllocateNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Allocate;
  Buffer buffer;
  Stmt body;
  AllocateNode(Buffer b, Stmt s) : StmtNode(kKind), buffer(std::move(b)), body(std::move(s)) {}
  static Stmt make(Buffer buffer, Stmt body);
};

// A vector condition (made by VectorizeLoops) predicates lanes: the then
// branch's vector stores write only the lanes where it holds (its loads run
// in every lane: VectorizeLoops guards those that could leave their buffer
// with an if_then_else on the same mask); such an if has no else branch.
struct IfThenElseNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::IfThenElse;
  Expr condition;
  Stmt then_case, else_case;
  IfThenElseNode(Expr c, Stmt t, Stmt e)
      : StmtNode(kKind), condition(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  static Stmt make(Expr condition, Stmt then_case, Stmt else_case = Stmt());
};

struct SeqNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Seq;
  std::vector<Stmt> seq;
  explicit SeqNode(std::vector<Stmt> s) : StmtNode(kKind), seq(std::move(s)) {}
  // Flattens nested Seqs, drops undefined entries; a single entry is returned as is.
  static Stmt make(std::vector<Stmt> seq);
};

struct LetStmtNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::LetStmt;
  Expr var;  // a VarNode
  Expr value;
  Stmt body;
  LetStmtNode(Expr x, Expr v, Stmt b)
      : StmtNode(kKind), var(std::move(x)), value(std::move(v)), body(std::move(b)) {}
  static Stmt make(Expr var, Expr value, Stmt body);
};

struct PragmaNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Pragma;
  std::string key;
  int64_t value;
  Stmt body;
  PragmaNode(std::string k, int64_t v, Stmt b)
      : StmtNode(kKind), key(std::move(k)), value(v), body(std::move(b)) {}
  static Stmt make(std::string key, int64_t value, Stmt body);
};

// A lowered function: the loop nest plus its arguments (buffers in the DAG's
// tensor order).
struct LoweredFunc {
  std::string name;
  std::vector<Buffer> args;
  Stmt body;
};
// A lowered function shared by those who read it, e.g. the checks of a search
// candidate and its program features (null: not lowered).
using LoweredPtr = std::shared_ptr<const LoweredFunc>;

}  // namespace autosched
