#include <gtest/gtest.h>

#include <unordered_set>

#include "ir/structural.h"

namespace autosched {
namespace {

IterVar Spatial(const char* name, int64_t extent) {
  return IterVar{VarNode::make(name), 0, extent, IterKind::Spatial};
}

// C(i, j) = sum_k A[i, k] * B[k, j], with the given names and knobs.
Tensor MatMul(const std::string& prefix, int64_t n = 8, DataType t = DataType::Float(32),
              Combiner c = Combiner::Sum, bool transpose_b = false) {
  Tensor a = placeholder({n, 4}, t, prefix + "A");
  Tensor b = placeholder({4, n}, t, prefix + "B");
  IterVar i = Spatial((prefix + "i").c_str(), n), j = Spatial((prefix + "j").c_str(), n);
  IterVar k = MakeReduceAxis(0, 4, prefix + "k");
  Expr rhs = transpose_b ? b({k.var, i.var}) : b({k.var, j.var});
  return compute(prefix + "C", {i, j}, ReduceNode::make(c, a({i.var, k.var}) * rhs, {k}));
}

int64_t ByName(const TensorNode* t) { return t->name.back(); }  // 'A' or 'B'

TEST(IrStructural, RenamingKeepsHash) {
  Tensor c1 = MatMul("x"), c2 = MatMul("y");
  EXPECT_EQ(StructuralHashOp(c1, ByName), StructuralHashOp(c2, ByName));
  EXPECT_TRUE(StructuralEqual(c1->body, c2->body, ByName));
  EXPECT_EQ(StructuralHash(c1->body, ByName), StructuralHash(c2->body, ByName));
  // Without a tensor mapping tensors are compared by name, so these differ.
  EXPECT_FALSE(StructuralEqual(c1->body, c2->body));
}

TEST(IrStructural, EveryChangeChangesHash) {
  std::unordered_set<uint64_t> hashes = {
      StructuralHashOp(MatMul("x"), ByName),
      StructuralHashOp(MatMul("x", 16), ByName),
      StructuralHashOp(MatMul("x", 8, DataType::Float(16)), ByName),
      StructuralHashOp(MatMul("x", 8, DataType::Float(32), Combiner::Max), ByName),
      StructuralHashOp(MatMul("x", 8, DataType::Float(32), Combiner::Sum, true), ByName),
  };
  EXPECT_EQ(hashes.size(), 5u);

  Expr i = VarNode::make("i"), j = VarNode::make("j");
  std::vector<Expr> exprs = {i + 1,
                             i + 2,
                             i - 1,
                             i * 1,
                             floordiv(i, 1),
                             i + i,
                             i + j,
                             cast(DataType::Int(64), i) + make_const(DataType::Int(64), 1),
                             Expr(1.0f),
                             Expr(2.0f),
                             make_const(DataType::Float(64), 1.0)};
  std::unordered_set<uint64_t> expr_hashes;
  for (const Expr& e : exprs) expr_hashes.insert(StructuralHash(e));
  EXPECT_EQ(expr_hashes.size(), exprs.size());
  for (size_t a = 0; a < exprs.size(); ++a) {
    for (size_t b = 0; b < exprs.size(); ++b) EXPECT_EQ(StructuralEqual(exprs[a], exprs[b]), a == b);
  }
}

TEST(IrStructural, VariablesByFirstAppearance) {
  Expr i = VarNode::make("i"), j = VarNode::make("j"), p = VarNode::make("p");
  EXPECT_TRUE(StructuralEqual(i * j + i, p * i + p));
  EXPECT_FALSE(StructuralEqual(i * j + i, i * j + j));
  EXPECT_NE(StructuralHash(i * j + i), StructuralHash(i * j + j));
}

TEST(IrStructural, AxisOrderMattersInOps) {
  Tensor a = placeholder({4, 4}, DataType::Float(32), "A");
  IterVar i = Spatial("i", 4), j = Spatial("j", 4);
  Tensor t1 = compute("T", {i, j}, a({i.var, j.var}));
  IterVar p = Spatial("p", 4), q = Spatial("q", 4);
  Tensor t2 = compute("T", {p, q}, a({q.var, p.var}));
  auto index = [](const TensorNode*) -> int64_t { return 0; };
  EXPECT_NE(StructuralHashOp(t1, index), StructuralHashOp(t2, index));
}

TEST(IrStructural, HashCombineMixes) {
  EXPECT_NE(HashCombine(1, 2), HashCombine(2, 1));
  EXPECT_NE(HashCombine(0, 0), HashCombine(0, 1));
  // Neighbouring inputs differ in about half of the output bits.
  int bits = __builtin_popcountll(HashCombine(42, 1000) ^ HashCombine(42, 1001));
  EXPECT_GT(bits, 16);
  EXPECT_LT(bits, 48);
}

}  // namespace
}  // namespace autosched
