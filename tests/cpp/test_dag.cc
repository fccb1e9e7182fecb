#include <gtest/gtest.h>

#include "dag/compute_dag.h"
#include "support/error.h"
#include "test_util.h"

namespace autosched {
namespace {

const DataType kF32 = DataType::Float(32);

IterVar Axis(const std::string& name, int64_t extent) {
  return IterVar{VarNode::make(name), 0, extent, IterKind::Spatial};
}

// [A, B, C, out] with out = matmul(A, B) + C; names are parameters so that a
// renamed copy can be built.
std::vector<Tensor> MatmulAdd(int64_t n, int64_t m, int64_t k, DataType dtype = kF32,
                              const std::string& prefix = "") {
  Tensor a = placeholder({n, k}, dtype, prefix + "A");
  Tensor b = placeholder({k, m}, dtype, prefix + "B");
  Tensor c = placeholder({n, m}, dtype, prefix + "C");
  IterVar i = Axis(prefix + "i", n), j = Axis(prefix + "j", m);
  IterVar r = MakeReduceAxis(0, k, prefix + "k");
  Tensor mm = compute(prefix + "matmul", {i, j},
                      ReduceNode::make(Combiner::Sum, a({i.var, r.var}) * b({r.var, j.var}), {r}));
  IterVar i2 = Axis(prefix + "i2", n), j2 = Axis(prefix + "j2", m);
  Tensor out = compute(prefix + "out", {i2, j2}, mm({i2.var, j2.var}) + c({i2.var, j2.var}));
  return {a, b, c, out};
}

std::vector<std::string> OpNames(const ComputeDAG& dag) {
  std::vector<std::string> names;
  for (const Tensor& t : dag.ops()) names.push_back(t->name);
  return names;
}

TEST(Dag, TopologicalOrderAndLinks) {
  ComputeDAG dag(MatmulAdd(8, 6, 4));
  EXPECT_EQ(OpNames(dag), (std::vector<std::string>{"A", "B", "C", "matmul", "out"}));
  int mm = dag.OpIndex("matmul");
  EXPECT_EQ(mm, 3);
  EXPECT_EQ(dag.OpIndex(dag.ops()[4].get()), 4);
  EXPECT_EQ(dag.OpIndex("nothing"), -1);
  EXPECT_EQ(dag.access(mm).producers, (std::vector<int>{0, 1}));
  EXPECT_EQ(dag.access(mm).consumers, (std::vector<int>{4}));
  EXPECT_EQ(dag.access(4).producers, (std::vector<int>{3, 2}));
  EXPECT_EQ(dag.access(0).consumers, (std::vector<int>{3}));
  // Producers come first even when the user lists the output first.
  std::vector<Tensor> t = MatmulAdd(8, 6, 4);
  ComputeDAG reordered({t[3], t[0], t[1], t[2]});
  EXPECT_EQ(OpNames(reordered), (std::vector<std::string>{"A", "B", "matmul", "C", "out"}));
}

TEST(Dag, AccessFlagsMatmulRelu) {
  std::vector<Tensor> t = MatmulAdd(8, 6, 4);
  Tensor mm = InputTensors(t[3])[0];
  IterVar i = Axis("i", 8), j = Axis("j", 6);
  Tensor relu = compute("relu", {i, j}, max(mm({i.var, j.var}), Expr(0.0f)));
  IterVar i2 = Axis("i2", 8), j2 = Axis("j2", 6);
  Tensor scaled = compute("scaled", {i2, j2}, relu({i2.var, j2.var}) * Expr(2.0f));
  IterVar p = Axis("p", 6), q = Axis("q", 8);
  Tensor transposed = compute("transposed", {p, q}, relu({q.var, p.var}));
  ComputeDAG dag({t[0], t[1], scaled, transposed});
  const OpAccessInfo& m = dag.access(dag.OpIndex("matmul"));
  EXPECT_TRUE(m.needs_multi_level_tiling);
  EXPECT_TRUE(m.is_simple_access);
  EXPECT_FALSE(m.is_strictly_inlineable);
  EXPECT_FALSE(m.is_output);
  const OpAccessInfo& r = dag.access(dag.OpIndex("relu"));
  EXPECT_TRUE(r.is_simple_access);
  EXPECT_TRUE(r.is_strictly_inlineable);
  EXPECT_FALSE(r.needs_multi_level_tiling);
  const OpAccessInfo& s = dag.access(dag.OpIndex("scaled"));
  EXPECT_TRUE(s.is_output);
  EXPECT_FALSE(s.is_strictly_inlineable);  // outputs must be stored
  EXPECT_FALSE(dag.access(dag.OpIndex("transposed")).is_simple_access);
  EXPECT_FALSE(dag.access(0).is_output);  // placeholders are inputs

  EXPECT_TRUE(dag.ElementWiseMatch(dag.OpIndex("matmul"), dag.OpIndex("relu")));
  EXPECT_TRUE(dag.ElementWiseMatch(dag.OpIndex("relu"), dag.OpIndex("scaled")));
  EXPECT_FALSE(dag.ElementWiseMatch(dag.OpIndex("relu"), dag.OpIndex("transposed")));
  EXPECT_FALSE(dag.ElementWiseMatch(0, dag.OpIndex("matmul")));
  EXPECT_THROW(dag.ElementWiseMatch(0, 99), Error);
}

TEST(Dag, ExpensiveBodiesAndRowReductionsAreNotTiled) {
  Tensor a = placeholder({4, 5}, kF32, "A");
  IterVar i = Axis("i", 4), j = Axis("j", 5);
  Tensor e = compute("e", {i, j}, CallNode::make(Intrinsic::Exp, {a({i.var, j.var})}));
  IterVar i2 = Axis("i2", 4);
  IterVar k = MakeReduceAxis(0, 5, "k");
  Tensor rowsum = compute("rowsum", {i2}, ReduceNode::make(Combiner::Sum, e({i2.var, k.var}), {k}));
  ComputeDAG dag({a, rowsum});
  EXPECT_FALSE(dag.access(dag.OpIndex("e")).is_strictly_inlineable);
  EXPECT_TRUE(dag.access(dag.OpIndex("e")).is_simple_access);
  EXPECT_FALSE(dag.access(dag.OpIndex("rowsum")).needs_multi_level_tiling);
}

TEST(Dag, FlopCountMatmul) {
  const int64_t n = 16, m = 8, k = 32;
  std::vector<Tensor> t = MatmulAdd(n, m, k);
  ComputeDAG just_matmul({t[0], t[1], InputTensors(t[3])[0]});
  EXPECT_EQ(just_matmul.flop_ct(), 2.0 * n * m * k);
  ComputeDAG with_add(t);
  EXPECT_EQ(with_add.flop_ct(), 2.0 * n * m * k + n * m);
}

TEST(Dag, FlopCountSoftmaxAndPadding) {
  const int64_t n = 4, m = 10;
  Tensor x = placeholder({n, m}, kF32, "x");
  IterVar i1 = Axis("i", n);
  IterVar k1 = MakeReduceAxis(0, m, "k");
  Tensor mx = compute("max", {i1}, ReduceNode::make(Combiner::Max, x({i1.var, k1.var}), {k1}));
  IterVar i2 = Axis("i", n), j2 = Axis("j", m);
  Tensor e = compute("exp", {i2, j2}, CallNode::make(Intrinsic::Exp, {x({i2.var, j2.var}) - mx({i2.var})}));
  IterVar i3 = Axis("i", n);
  IterVar k3 = MakeReduceAxis(0, m, "k");
  Tensor s = compute("sum", {i3}, ReduceNode::make(Combiner::Sum, e({i3.var, k3.var}), {k3}));
  IterVar i4 = Axis("i", n), j4 = Axis("j", m);
  Tensor out = compute("softmax", {i4, j4}, e({i4.var, j4.var}) / s({i4.var}));
  ComputeDAG dag({x, out});
  // max: 1 per step; exp(x - max): 2; sum: 1 per step; division: 1.
  EXPECT_EQ(dag.flop_ct(), 5.0 * n * m);

  // Padding: index arithmetic and the bounds condition cost nothing.
  IterVar p = Axis("p", m + 2);
  Tensor pad = compute(
      "pad", {p},
      if_then_else(p.var >= 1 && p.var < static_cast<int>(m + 1), x({Expr(0), p.var - 1}), Expr(0.0f)));
  ComputeDAG pad_dag({x, pad});
  EXPECT_EQ(pad_dag.flop_ct(), 0.0);
  // Integer arithmetic on data counts; a cast does not.
  Tensor q = placeholder({n}, DataType::Int(8), "q");
  IterVar w = Axis("w", n);
  Tensor widened = compute("widened", {w}, cast(DataType::Int(32), q({w.var})) * Expr(3));
  EXPECT_EQ(ComputeDAG({q, widened}).flop_ct(), 1.0 * n);
}

TEST(Dag, ValidationErrors) {
  EXPECT_THROW(ComputeDAG(std::vector<Tensor>{}), Error);
  std::vector<Tensor> t = MatmulAdd(4, 4, 4);
  EXPECT_THROW(ComputeDAG({t[0], t[0], t[1], t[2], t[3]}), Error);
  const std::string message = test::ErrorOf([&] { ComputeDAG({t[0], t[2], t[3]}); });
  EXPECT_TRUE(test::Contains(message, "'B'")) << message;
}

TEST(Dag, WorkloadKey) {
  ComputeDAG base(MatmulAdd(16, 8, 4));
  EXPECT_EQ(base.workload_key().size(), 16u);
  EXPECT_EQ(ComputeDAG(MatmulAdd(16, 8, 4)).workload_key(), base.workload_key());
  EXPECT_EQ(ComputeDAG(MatmulAdd(16, 8, 4, kF32, "renamed_")).workload_key(), base.workload_key());
  EXPECT_NE(ComputeDAG(MatmulAdd(16, 8, 8)).workload_key(), base.workload_key());
  EXPECT_NE(ComputeDAG(MatmulAdd(16, 8, 4, DataType::Float(16))).workload_key(), base.workload_key());
  std::vector<Tensor> t = MatmulAdd(16, 8, 4);
  EXPECT_NE(ComputeDAG({t[1], t[0], t[2], t[3]}).workload_key(), base.workload_key());
}

TEST(Dag, TextAndJson) {
  ComputeDAG dag(MatmulAdd(4, 3, 2));
  std::string text = dag.ToString();
  EXPECT_NE(text.find("A = PLACEHOLDER [4, 2]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("matmul(i, j) += (A[i, k]*B[k, j])\n"), std::string::npos) << text;
  EXPECT_NE(text.find("out(i2, j2) = (matmul[i2, j2] + C[i2, j2])\n"), std::string::npos) << text;
  ComputeDAG back = ComputeDAG::FromJson(dag.ToJson());
  EXPECT_EQ(back.workload_key(), dag.workload_key());
  EXPECT_EQ(OpNames(back), OpNames(dag));
  EXPECT_EQ(back.flop_ct(), dag.flop_ct());
}

}  // namespace
}  // namespace autosched
