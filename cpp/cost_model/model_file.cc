#include "cost_model/model_file.h"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <vector>

#include "support/error.h"

namespace autosched {

namespace {

constexpr const char* kFormat = "autosched.cost_model";

// The checks of CheckXGBoostTrees, each naming the part of the model it looks at.
class XGBoostTreeCheck {
 public:
  explicit XGBoostTreeCheck(const std::string& path) : path_(path) {}

  [[noreturn]] void Fail(const std::string& where, const std::string& why) const {
    throw Error("cost model file '" + path_ + "' is damaged (" + where + ": " + why +
                "), XGBoost cannot read it safely: train the model again, or start from another file");
  }

  const nlohmann::json& Field(const nlohmann::json& object, const char* key, const std::string& where) const {
    if (!object.is_object() || !object.contains(key)) Fail(where, std::string("no '") + key + "'");
    return object[key];
  }

  // XGBoost writes its parameters as strings ("31") and its indices as numbers.
  long long Integer(const nlohmann::json& object, const char* key, const std::string& where) const {
    const nlohmann::json& value = Field(object, key, where);
    long long out = 0;
    if (value.is_number_integer()) return value.get<long long>();
    if (value.is_string()) {
      const std::string& text = value.get_ref<const std::string&>();
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
      if (ec == std::errc() && end == text.data() + text.size()) return out;
    }
    Fail(where, std::string("'") + key + "' is not an integer");
  }

  // An array of `size` numbers (integers when `integers`).
  const nlohmann::json& Numbers(const nlohmann::json& object, const char* key, size_t size, bool integers,
                                const std::string& where) const {
    const nlohmann::json& array = Field(object, key, where);
    if (!array.is_array() || array.size() != size) {
      Fail(where, std::string("'") + key + "' is not an array of " + std::to_string(size) + " entries");
    }
    for (const nlohmann::json& v : array) {
      if (integers ? !v.is_number_integer() : !v.is_number()) {
        Fail(where, std::string("'") + key + "' holds " + v.dump() + ", not a number");
      }
    }
    return array;
  }

  void Tree(const nlohmann::json& tree, size_t index, long long num_features) const {
    const std::string where = "tree " + std::to_string(index);
    if (Integer(tree, "id", where) != static_cast<long long>(index))
      Fail(where, "its id is not its position");
    const nlohmann::json& param = Field(tree, "tree_param", where);
    const long long n = Integer(param, "num_nodes", where);
    if (n < 1 || n > (1 << 30)) Fail(where, "num_nodes " + std::to_string(n));
    if (param.contains("size_leaf_vector") && Integer(param, "size_leaf_vector", where) > 1) {
      Fail(where, "leaves of vectors (a multi-target model)");
    }
    const size_t size = static_cast<size_t>(n);
    const nlohmann::json& left = Numbers(tree, "left_children", size, true, where);
    const nlohmann::json& right = Numbers(tree, "right_children", size, true, where);
    const nlohmann::json& parents = Numbers(tree, "parents", size, true, where);
    const nlohmann::json& split = Numbers(tree, "split_indices", size, true, where);
    for (const char* key : {"split_conditions", "base_weights", "loss_changes", "sum_hessian"}) {
      Numbers(tree, key, size, false, where);
    }
    Numbers(tree, "default_left", size, true, where);
    if (tree.contains("split_type")) {
      for (const nlohmann::json& t : Numbers(tree, "split_type", size, true, where)) {
        if (t != 0) Fail(where, "a categorical split (autosched's features are numbers)");
      }
    }
    for (const char* key : {"categories", "categories_nodes", "categories_segments", "categories_sizes"}) {
      if (tree.contains(key) && !(tree[key].is_array() && tree[key].empty())) {
        Fail(where, std::string("'") + key + "' is not empty, but the tree has no categorical split");
      }
    }
    // From the root, as XGBoost walks it: each node reached once, a leaf
    // having no children, an inner node two in the tree and a feature.
    std::vector<char> reached(size, 0);
    std::vector<long long> pending{0};
    reached[0] = 1;
    while (!pending.empty()) {
      const size_t node = static_cast<size_t>(pending.back());
      pending.pop_back();
      const long long l = left[node].get<long long>(), r = right[node].get<long long>();
      const std::string at = where + " node " + std::to_string(node);
      if (l == -1 && r == -1) continue;  // a leaf
      if (l < 1 || l >= n || r < 1 || r >= n || l == r) {
        Fail(at, "children " + std::to_string(l) + " and " + std::to_string(r) + " (the tree has " +
                     std::to_string(n) + " nodes)");
      }
      const long long feature = split[node].get<long long>();
      if (feature < 0 || feature >= num_features) {
        Fail(at, "a split on feature " + std::to_string(feature) + " of " + std::to_string(num_features));
      }
      for (long long child : {l, r}) {
        if (reached[child]) Fail(at, "node " + std::to_string(child) + " is reached twice (the tree loops)");
        if (parents[child].get<long long>() != static_cast<long long>(node)) {
          Fail(at, "its child " + std::to_string(child) + " names another parent");
        }
        reached[child] = 1;
        pending.push_back(child);
      }
    }
  }

 private:
  const std::string& path_;
};

}  // namespace

void WriteModelFile(const std::string& path, const std::string& model, nlohmann::json doc) {
  doc["format"] = kFormat;
  doc["version"] = kModelFileVersion;
  doc["model"] = model;
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    AS_CHECK(out, "cannot write the cost model to '" << path << "'");
    out << doc.dump();
    AS_CHECK(out.good(), "cannot write the cost model to '" << path << "'");
  }
  AS_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "cannot write the cost model to '" << path << "'");
}

nlohmann::json ReadModelFile(const std::string& path, const std::string& model) {
  std::ifstream in(path, std::ios::binary);
  AS_CHECK(in, "cannot open the cost model file '" << path << "'");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error("cost model file '" + path + "' is not valid JSON: " + e.what());
  }
  AS_CHECK(doc.is_object() && doc.value("format", "") == kFormat,
           "'" << path << "' is not an autosched cost model file");
  AS_CHECK(doc.value("version", -1) == kModelFileVersion,
           "cost model file '" << path << "' has version " << doc.value("version", -1)
                               << ", this autosched reads " << kModelFileVersion);
  AS_CHECK(doc.value("model", "") == model, "cost model file '" << path << "' holds a '"
                                                                << doc.value("model", "")
                                                                << "' model, not a '" << model << "' model");
  return doc;
}

size_t CheckXGBoostTrees(const nlohmann::json& booster, const std::string& path, size_t num_features) {
  XGBoostTreeCheck check(path);
  const nlohmann::json& learner = check.Field(booster, "learner", "the booster");
  const nlohmann::json& param = check.Field(learner, "learner_model_param", "the learner");
  if (check.Integer(param, "num_feature", "the learner") != static_cast<long long>(num_features)) {
    check.Fail("the learner", "num_feature is not the " + std::to_string(num_features) + " features");
  }
  if (check.Integer(param, "num_class", "the learner") > 1 ||
      (param.contains("num_target") && check.Integer(param, "num_target", "the learner") != 1)) {
    check.Fail("the learner", "more than one output (autosched's models predict one score)");
  }
  const nlohmann::json& gbm = check.Field(learner, "gradient_booster", "the learner");
  if (check.Field(gbm, "name", "the gradient booster") != "gbtree") {
    check.Fail("the gradient booster", "not 'gbtree'");
  }
  const nlohmann::json& model = check.Field(gbm, "model", "the gradient booster");
  const nlohmann::json& trees = check.Field(model, "trees", "the trees");
  if (!trees.is_array()) check.Fail("the trees", "not an array");
  const nlohmann::json& gbtree_param = check.Field(model, "gbtree_model_param", "the trees");
  if (check.Integer(gbtree_param, "num_trees", "the trees") != static_cast<long long>(trees.size())) {
    check.Fail("the trees", "num_trees is not the number of trees");
  }
  if (check.Integer(gbtree_param, "num_parallel_tree", "the trees") != 1) {
    check.Fail("the trees", "num_parallel_tree is not 1");
  }
  for (const nlohmann::json& group : check.Numbers(model, "tree_info", trees.size(), true, "the trees")) {
    if (group != 0) check.Fail("the trees", "tree_info names an output group other than 0");
  }
  for (size_t i = 0; i < trees.size(); ++i) check.Tree(trees[i], i, static_cast<long long>(num_features));
  return trees.size();
}

}  // namespace autosched
