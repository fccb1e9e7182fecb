// Test helpers for schedules: a small interpreter of the loop-nest IR (so that
// lowering is checked against the reference evaluator without a code
// generator) and a few DAGs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <unordered_map>
#include <vector>

#include "dag/evaluator.h"
#include "lower/lower_state.h"
#include "schedule/state.h"
#include "support/error.h"
#include "task/search_task.h"

namespace autosched::sched_test {

// Runs a lowered function on double-valued buffers (loops run serially; out-of-
// bounds accesses throw).
class LoopInterpreter {
 public:
  void Run(const LoweredFunc& f, std::vector<std::vector<double>>* args) {
    for (size_t i = 0; i < f.args.size(); ++i) memory_[f.args[i].get()] = &(*args)[i];
    Exec(f.body);
  }

 private:
  int64_t Offset(const Buffer& b, const std::vector<int64_t>& idx) {
    AS_CHECK(idx.size() == b->shape.size(), "rank mismatch on " << b->name);
    int64_t off = 0, stride = 1;
    for (size_t d = idx.size(); d-- > 0;) {
      AS_CHECK(idx[d] >= 0 && idx[d] < b->shape[d],
               "out of bounds on " << b->name << " dim " << d << ": " << idx[d] << " of " << b->shape[d]);
      const int64_t s = b->strides.empty() ? stride : b->strides[d];
      off += idx[d] * s;
      stride *= b->shape[d];
    }
    return off;
  }

  std::vector<double>& Mem(const Buffer& b) {
    auto it = memory_.find(b.get());
    AS_CHECK(it != memory_.end(), "buffer " << b->name << " used outside its allocation");
    return *it->second;
  }

  double Eval(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::IntImm: return static_cast<double>(e.as<IntImmNode>()->value);
      case ExprKind::FloatImm: return e.as<FloatImmNode>()->value;
      case ExprKind::Var: {
        auto it = vars_.find(e.as<VarNode>());
        AS_CHECK(it != vars_.end(), "unbound variable " << e.as<VarNode>()->name);
        return static_cast<double>(it->second);
      }
      case ExprKind::Binary: return EvalBinary(e.as<BinaryNode>());
      case ExprKind::Not: return Eval(e.as<NotNode>()->a) == 0;
      case ExprKind::Select: {
        const auto* n = e.as<SelectNode>();
        return Eval(n->condition) != 0 ? Eval(n->true_value) : Eval(n->false_value);
      }
      case ExprKind::Cast: {
        double v = Eval(e.as<CastNode>()->value);
        return e.dtype().is_float() ? v : std::trunc(v);
      }
      case ExprKind::Call: {
        const auto* n = e.as<CallNode>();
        if (n->op == Intrinsic::IfThenElse)
          return Eval(n->args[0]) != 0 ? Eval(n->args[1]) : Eval(n->args[2]);
        const double x = Eval(n->args[0]);
        switch (n->op) {
          case Intrinsic::Exp: return std::exp(x);
          case Intrinsic::Sqrt: return std::sqrt(x);
          case Intrinsic::Tanh: return std::tanh(x);
          case Intrinsic::Fabs: return std::fabs(x);
          default: AS_CHECK(false, "interpreter lacks intrinsic " << IntrinsicName(n->op));
        }
      }
      case ExprKind::BufferLoad: {
        const auto* n = e.as<BufferLoadNode>();
        std::vector<int64_t> idx;
        for (const Expr& i : n->indices) idx.push_back(static_cast<int64_t>(Eval(i)));
        return Mem(n->buffer)[Offset(n->buffer, idx)];
      }
      default: AS_CHECK(false, "interpreter cannot evaluate expression kind " << static_cast<int>(e.kind()));
    }
    return 0;
  }

  double EvalBinary(const BinaryNode* n) {
    const double a = Eval(n->a), b = Eval(n->b);
    const bool integer = n->a.dtype().is_integer();
    switch (n->op) {
      case BinOp::Add: return a + b;
      case BinOp::Sub: return a - b;
      case BinOp::Mul: return a * b;
      case BinOp::Div: return integer ? std::trunc(a / b) : a / b;
      case BinOp::Mod: return std::fmod(a, b);
      case BinOp::FloorDiv: return std::floor(a / b);
      case BinOp::FloorMod: return a - std::floor(a / b) * b;
      case BinOp::Min: return std::min(a, b);
      case BinOp::Max: return std::max(a, b);
      case BinOp::EQ: return a == b;
      case BinOp::NE: return a != b;
      case BinOp::LT: return a < b;
      case BinOp::LE: return a <= b;
      case BinOp::GT: return a > b;
      case BinOp::GE: return a >= b;
      case BinOp::And: return a != 0 && b != 0;
      case BinOp::Or: return a != 0 || b != 0;
    }
    return 0;
  }

  void Exec(const Stmt& s) {
    if (const auto* n = s.as<ForNode>()) {
      const int64_t mn = static_cast<int64_t>(Eval(n->min)), ext = static_cast<int64_t>(Eval(n->extent));
      for (int64_t i = mn; i < mn + ext; ++i) {
        vars_[n->loop_var.as<VarNode>()] = i;
        Exec(n->body);
      }
      vars_.erase(n->loop_var.as<VarNode>());
    } else if (const auto* n = s.as<BufferStoreNode>()) {
      std::vector<int64_t> idx;
      for (const Expr& i : n->indices) idx.push_back(static_cast<int64_t>(Eval(i)));
      double v = Eval(n->value);
      if (n->buffer->dtype.is_float() && n->buffer->dtype.bits == 32) v = static_cast<float>(v);
      Mem(n->buffer)[Offset(n->buffer, idx)] = v;
    } else if (const auto* n = s.as<AllocateNode>()) {
      int64_t size = 1;
      for (size_t d = 0; d < n->buffer->shape.size(); ++d) {
        size = n->buffer->strides.empty() ? size * n->buffer->shape[d]
                                          : std::max(size, n->buffer->strides[d] * n->buffer->shape[d]);
      }
      std::vector<double> storage(size, std::nan(""));
      memory_[n->buffer.get()] = &storage;
      Exec(n->body);
      memory_.erase(n->buffer.get());
    } else if (const auto* n = s.as<IfThenElseNode>()) {
      if (Eval(n->condition) != 0) {
        Exec(n->then_case);
      } else if (n->else_case.defined()) {
        Exec(n->else_case);
      }
    } else if (const auto* n = s.as<SeqNode>()) {
      for (const Stmt& x : n->seq) Exec(x);
    } else if (const auto* n = s.as<LetStmtNode>()) {
      vars_[n->var.as<VarNode>()] = static_cast<int64_t>(Eval(n->value));
      Exec(n->body);
    } else if (const auto* n = s.as<PragmaNode>()) {
      Exec(n->body);
    }
  }

  std::unordered_map<const BufferNode*, std::vector<double>*> memory_;
  std::unordered_map<const VarNode*, int64_t> vars_;
};

inline IterVar Axis(const std::string& name, int64_t extent) {
  return IterVar{VarNode::make(name), 0, extent, IterKind::Spatial};
}

// A, B and C = A x B (n x k, k x m), float32.
inline std::vector<Tensor> MatmulTensors(int64_t n, int64_t m, int64_t k) {
  const DataType f32 = DataType::Float(32);
  Tensor a = placeholder({n, k}, f32, "A");
  Tensor b = placeholder({k, m}, f32, "B");
  IterVar i = Axis("i", n), j = Axis("j", m);
  IterVar r = MakeReduceAxis(0, k, "k");
  Tensor c =
      compute("C", {i, j}, ReduceNode::make(Combiner::Sum, a({i.var, r.var}) * b({r.var, j.var}), {r}));
  return {a, b, c};
}

// [A, B, C] with C = A x B (n x k, k x m).
inline ComputeDAG Matmul(int64_t n, int64_t m, int64_t k) { return ComputeDAG(MatmulTensors(n, m, k)); }
// The same, all n x n.
inline ComputeDAG Matmul(int64_t n) { return Matmul(n, n, n); }

// [X, S] with S[i] = sum_k X[i, k].
inline ComputeDAG RowSum(int64_t n, int64_t k) {
  Tensor x = placeholder({n, k}, DataType::Float(32), "X");
  IterVar i = Axis("i", n);
  IterVar r = MakeReduceAxis(0, k, "k");
  return ComputeDAG({x, compute("S", {i}, ReduceNode::make(Combiner::Sum, x({i.var, r.var}), {r}))});
}

// A CPU search task with a fixed vector width (32 bytes), so that search tests
// give the same sketches and samples on AVX2 and AVX-512 hosts.
inline SearchTask MakeTask(const ComputeDAG& dag, int64_t num_cores = 4) {
  HardwareParams hw = DefaultHardwareParams(Target::Parse("llvm"));
  hw.num_cores = num_cores;
  hw.vector_unit_bytes = 32;
  return SearchTask(dag, "", Target::Parse("llvm"), hw, "test");
}

// [A, B, D] with C = A x B (n x k, k x m), D = relu(C + 1).
inline ComputeDAG MatmulRelu(int64_t n, int64_t m, int64_t k) {
  const std::vector<Tensor> mm = MatmulTensors(n, m, k);
  const Tensor &a = mm[0], &b = mm[1], &c = mm[2];
  IterVar i2 = Axis("i", n), j2 = Axis("j", m);
  Tensor bias = compute("E", {i2, j2}, c({i2.var, j2.var}) + Expr(1.0f));
  IterVar i3 = Axis("i", n), j3 = Axis("j", m);
  Tensor d = compute("D", {i3, j3}, max(bias({i3.var, j3.var}), Expr(0.0f)));
  return ComputeDAG({a, b, d});
}

// Lowers the state, interprets it and compares every output with the
// reference evaluator on random inputs.
inline void ExpectMatchesReference(const State& state, unsigned seed = 1) {
  const ComputeDAG& dag = state.init_dag();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<std::vector<float>> ref;
  std::vector<std::vector<double>> mine;
  std::vector<HostTensor> host;
  for (const Tensor& t : dag.tensors()) {
    std::vector<float> data(t->num_elements());
    for (float& x : data) x = t->is_placeholder() ? dist(rng) : 0.f;
    ref.push_back(data);
    mine.emplace_back(data.begin(), data.end());
  }
  for (size_t i = 0; i < ref.size(); ++i)
    host.push_back({ref[i].data(), dag.tensors()[i]->shape, DataType::Float(32)});
  EvaluateReference(dag, host);
  LoweredFunc f = LowerStateToStmt(state);
  LoopInterpreter().Run(f, &mine);
  for (size_t i = 0; i < ref.size(); ++i) {
    for (size_t e = 0; e < ref[i].size(); ++e) {
      ASSERT_NEAR(mine[i][e], ref[i][e], 1e-4)
          << "tensor " << dag.tensors()[i]->name << " element " << e << "\n"
          << state.ToString();
    }
  }
}

}  // namespace autosched::sched_test
