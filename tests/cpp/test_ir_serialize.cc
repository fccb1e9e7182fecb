#include <gtest/gtest.h>

#include <limits>

#include "ir/printer.h"
#include "ir/serialize.h"
#include "ir/structural.h"
#include "support/error.h"

namespace autosched {
namespace {

IterVar Spatial(const char* name, int64_t extent) {
  return IterVar{VarNode::make(name), 0, extent, IterKind::Spatial};
}

// A small graph that uses every te-level expression kind.
std::vector<Tensor> Graph() {
  DataType f32 = DataType::Float(32);
  Tensor a = placeholder({4, 6}, f32, "A");
  Tensor b = placeholder({6}, DataType::Int(8), "B");
  IterVar i = Spatial("i", 4), j = Spatial("j", 6);
  Expr x = a({i.var, j.var});
  Expr body =
      if_then_else(j.var < 5, CallNode::make(Intrinsic::Exp, {x}), Expr(0.5f)) +
      select(!(eq(floormod(i.var, 2), 0) || ne(floordiv(j.var, 3), 1)),
             cast(f32, b({min(j.var, max(i.var - 1, 0))})), Expr(-std::numeric_limits<float>::infinity()));
  Tensor t = compute("T", {i, j}, body, "injective", {{"layout", "NC"}});
  IterVar r = Spatial("r", 4);
  IterVar k = MakeReduceAxis(1, 5, "k");
  Tensor s =
      compute("S", {r}, ReduceNode::make(Combiner::Max, t({r.var, k.var}) * Expr(2.0f), {k}, k.var < 4));
  Tensor p = compute("P", {r}, ReduceNode::make(Combiner::Prod, t({r.var, k.var}) / Expr(3.0f), {k}));
  return {a, b, s, p};
}

TEST(IrSerialize, RoundTripPreservesStructureAndNames) {
  std::vector<Tensor> graph = Graph();
  nlohmann::json doc = TensorsToJson(graph);
  // Through text, as it travels between processes.
  std::vector<Tensor> back = TensorsFromJson(nlohmann::json::parse(doc.dump()));
  ASSERT_EQ(back.size(), graph.size());
  EXPECT_EQ(doc["tensors"].size(), 5u);  // A, B, T, S, P
  auto index_in = [](const std::vector<Tensor>& roots) {
    return [&roots](const TensorNode* t) -> int64_t { return t->name[0]; };
  };
  for (size_t n = 0; n < graph.size(); ++n) {
    EXPECT_EQ(back[n]->name, graph[n]->name);
    EXPECT_EQ(OpToString(back[n]), OpToString(graph[n]));
    EXPECT_EQ(StructuralHashOp(back[n], index_in(back)), StructuralHashOp(graph[n], index_in(graph)));
  }
  Tensor t = InputTensors(back[2])[0];
  EXPECT_EQ(t->tag, "injective");
  EXPECT_EQ(t->attrs.at("layout"), "NC");
  EXPECT_EQ(OpToString(t), OpToString(InputTensors(graph[2])[0]));
  // compute() moved k over [1, 6) to [0, 5), reading k + 1.
  EXPECT_EQ(back[2]->reduce_axis[0].min, 0);
  EXPECT_EQ(back[2]->reduce_axis[0].extent, 5);
  // Shared producers stay shared.
  EXPECT_TRUE(InputTensors(back[2])[0].same_as(InputTensors(back[3])[0]));
  EXPECT_EQ(TensorsToJson(back), doc);
}

TEST(IrSerialize, MalformedDocumentsNameTheField) {
  nlohmann::json doc = TensorsToJson(Graph());
  auto expect_error = [](const nlohmann::json& bad, const std::string& needle) {
    try {
      TensorsFromJson(bad);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find(needle), std::string::npos) << err.what();
    }
  };
  nlohmann::json bad = doc;
  bad["version"] = 7;
  expect_error(bad, "version 7");
  bad = doc;
  bad["tensors"][2].erase("body");
  expect_error(bad, "tensors[2].body");
  bad = doc;
  bad["tensors"][2]["body"]["b"]["kind"] = "banana";
  expect_error(bad, "tensors[2].body.b.kind");
  bad = doc;
  bad["tensors"][3]["body"]["source"]["a"]["tensor"] = 9;
  expect_error(bad, "tensors[3].body.source.a.tensor");
  bad = doc;
  bad["tensors"][0]["dtype"] = "float8";
  expect_error(bad, "tensors[0].dtype");
  bad = doc;
  bad["outputs"][0] = "x";
  expect_error(bad, "outputs[0]");
  bad = doc;
  bad["tensors"][2]["body"]["a"]["args"][2]["dtype"] = "float64";
  expect_error(bad, "tensors[2]");
  expect_error(nlohmann::json::array(), "must be an object");
}

}  // namespace
}  // namespace autosched
