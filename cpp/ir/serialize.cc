// JSON form of tensor graphs (format in serialize.h).
//
// Expressions are objects with a "kind":
//   {"kind": "int", "dtype": "int32", "value": 5}
//   {"kind": "float", "dtype": "float32", "value": 0.5}   (or "inf", "-inf", "nan")
//   {"kind": "var", "id": 2, "name": "k"}    id: position in axis + reduce_axis of the op
//   {"kind": "binary", "op": "add", "a": ..., "b": ...}
//   {"kind": "not", "a": ...}
//   {"kind": "select", "condition": ..., "true_value": ..., "false_value": ...}
//   {"kind": "cast", "dtype": "float32", "value": ...}
//   {"kind": "call", "op": "exp", "args": [...]}
//   {"kind": "load", "tensor": 0, "indices": [...]}          tensor: index in "tensors"
//   {"kind": "reduce", "combiner": "sum", "source": ..., "axis": [ids], "condition": ... or null}
//     plus "acc_dtype" when the accumulation type is not the default, and
//     "dtype" when the result type differs from the source's.
// An axis is {"name", "min", "extent"}.
#include "ir/serialize.h"

#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "ir/functor.h"
#include "support/error.h"

namespace autosched {

using nlohmann::json;

namespace {

constexpr int kFormatVersion = 1;

// ---- Writing ----

class GraphWriter {
 public:
  json Write(const std::vector<Tensor>& roots) {
    for (const Tensor& t : roots) {
      AS_CHECK(t.defined(), "TensorsToJson got an undefined tensor");
      Visit(t);
    }
    json outputs = json::array();
    for (const Tensor& t : roots) outputs.push_back(index_.at(t.get()));
    return json{{"version", kFormatVersion}, {"tensors", std::move(tensors_)}, {"outputs", outputs}};
  }

 private:
  // Post-order over producers, so the list is topologically sorted.
  void Visit(const Tensor& t) {
    if (index_.count(t.get())) return;
    AS_CHECK(!on_stack_.count(t.get()), "tensor graph has a cycle through '" << t->name << "'");
    on_stack_.insert(t.get());
    for (const Tensor& input : InputTensors(t)) Visit(input);
    on_stack_.erase(t.get());
    index_[t.get()] = tensors_.size();
    tensors_.push_back(WriteTensor(t));
  }

  json WriteTensor(const Tensor& t) {
    json j{{"name", t->name},
           {"op", t->is_placeholder() ? "placeholder" : "compute"},
           {"shape", t->shape},
           {"dtype", t->dtype.str()}};
    if (t->is_placeholder()) return j;
    vars_.clear();
    json axis = json::array(), reduce_axis = json::array();
    for (const IterVar& iv : t->axis) axis.push_back(WriteAxis(iv));
    for (const IterVar& iv : t->reduce_axis) reduce_axis.push_back(WriteAxis(iv));
    j["axis"] = std::move(axis);
    j["reduce_axis"] = std::move(reduce_axis);
    j["body"] = WriteExpr(t->body);
    j["tag"] = t->tag;
    j["attrs"] = t->attrs;
    return j;
  }

  json WriteAxis(const IterVar& iv) {
    vars_.emplace(iv.var_node(), vars_.size());
    return json{{"name", iv.name()}, {"min", iv.min}, {"extent", iv.extent}};
  }

  int64_t VarId(const VarNode* v) const {
    auto it = vars_.find(v);
    AS_CHECK(it != vars_.end(), "cannot serialise variable '" << v->name << "': not an axis of its op");
    return it->second;
  }

  json WriteExprs(const std::vector<Expr>& list) {
    json arr = json::array();
    for (const Expr& e : list) arr.push_back(WriteExpr(e));
    return arr;
  }

  json WriteExpr(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::IntImm:
        return {{"kind", "int"}, {"dtype", e.dtype().str()}, {"value", e.as<IntImmNode>()->value}};
      case ExprKind::FloatImm: {
        double v = e.as<FloatImmNode>()->value;
        json value = std::isnan(v) ? json("nan") : std::isinf(v) ? json(v < 0 ? "-inf" : "inf") : json(v);
        return {{"kind", "float"}, {"dtype", e.dtype().str()}, {"value", value}};
      }
      case ExprKind::Var: {
        const auto* v = e.as<VarNode>();
        return {{"kind", "var"}, {"id", VarId(v)}, {"name", v->name}};
      }
      case ExprKind::Binary: {
        const auto* n = e.as<BinaryNode>();
        return {{"kind", "binary"}, {"op", BinOpName(n->op)}, {"a", WriteExpr(n->a)}, {"b", WriteExpr(n->b)}};
      }
      case ExprKind::Not: return {{"kind", "not"}, {"a", WriteExpr(e.as<NotNode>()->a)}};
      case ExprKind::Select: {
        const auto* n = e.as<SelectNode>();
        return {{"kind", "select"},
                {"condition", WriteExpr(n->condition)},
                {"true_value", WriteExpr(n->true_value)},
                {"false_value", WriteExpr(n->false_value)}};
      }
      case ExprKind::Cast:
        return {{"kind", "cast"}, {"dtype", e.dtype().str()}, {"value", WriteExpr(e.as<CastNode>()->value)}};
      case ExprKind::Call: {
        const auto* n = e.as<CallNode>();
        return {{"kind", "call"}, {"op", IntrinsicName(n->op)}, {"args", WriteExprs(n->args)}};
      }
      case ExprKind::TensorLoad: {
        const auto* n = e.as<TensorLoadNode>();
        return {
            {"kind", "load"}, {"tensor", index_.at(n->tensor.get())}, {"indices", WriteExprs(n->indices)}};
      }
      case ExprKind::Reduce: {
        const auto* n = e.as<ReduceNode>();
        json axis = json::array();
        for (const IterVar& iv : n->axis) axis.push_back(VarId(iv.var_node()));
        json j{{"kind", "reduce"},
               {"combiner", CombinerName(n->combiner)},
               {"source", WriteExpr(n->source)},
               {"axis", axis},
               {"condition", n->condition.defined() ? WriteExpr(n->condition) : json(nullptr)}};
        if (n->acc_dtype != DefaultAccumulationType(n->dtype)) j["acc_dtype"] = n->acc_dtype.str();
        if (n->dtype != n->source.dtype()) j["dtype"] = n->dtype.str();
        return j;
      }
      default: break;
    }
    AS_CHECK(false, "cannot serialise a lowered-code expression: " << static_cast<int>(e.kind()));
    return {};
  }

  json tensors_ = json::array();
  std::unordered_map<const TensorNode*, size_t> index_;
  std::unordered_set<const TensorNode*> on_stack_;
  std::unordered_map<const VarNode*, int64_t> vars_;
};

// ---- Reading ----

// Every access goes through a path ("tensors[2].body.a") so errors name the field.
const json& Field(const json& obj, const char* key, const std::string& path) {
  AS_CHECK(obj.is_object(), "malformed tensor graph: '" << path << "' must be an object");
  auto it = obj.find(key);
  AS_CHECK(it != obj.end(), "malformed tensor graph: missing field '" << path << "." << key << "'");
  return *it;
}

std::string GetString(const json& obj, const char* key, const std::string& path) {
  const json& v = Field(obj, key, path);
  AS_CHECK(v.is_string(), "malformed tensor graph: field '" << path << "." << key << "' must be a string");
  return v.get<std::string>();
}

int64_t GetInt(const json& obj, const char* key, const std::string& path) {
  const json& v = Field(obj, key, path);
  AS_CHECK(v.is_number_integer(),
           "malformed tensor graph: field '" << path << "." << key << "' must be an integer");
  return v.get<int64_t>();
}

const json& GetArray(const json& obj, const char* key, const std::string& path) {
  const json& v = Field(obj, key, path);
  AS_CHECK(v.is_array(), "malformed tensor graph: field '" << path << "." << key << "' must be an array");
  return v;
}

// A string field read with a parser (DataType::Parse, the enum parsers of
// expr.h); the parser's message gets the field.
template <typename T>
T GetParsed(const json& obj, const char* key, const std::string& path, T (*parse)(const std::string&)) {
  std::string name = GetString(obj, key, path);
  try {
    return parse(name);
  } catch (const Error& err) {
    AS_CHECK(false, "malformed tensor graph: field '" << path << "." << key << "': " << err.what());
  }
  return T{};
}

DataType GetDType(const json& obj, const char* key, const std::string& path) {
  return GetParsed(obj, key, path, &DataType::Parse);
}

// Errors raised while building IR nodes (type checks) get the tensor's path.
std::string WithPath(const Error& err, const std::string& path) {
  std::string msg = err.what();
  if (msg.rfind("malformed tensor graph", 0) == 0) return msg;
  return "malformed tensor graph: " + path + ": " + msg;
}

class GraphReader {
 public:
  std::vector<Tensor> Read(const json& doc) {
    AS_CHECK(doc.is_object(), "malformed tensor graph: the document must be an object");
    int64_t version = GetInt(doc, "version", "graph");
    AS_CHECK(version == kFormatVersion,
             "tensor graph has version " << version << ", this build reads version " << kFormatVersion);
    const json& list = GetArray(doc, "tensors", "graph");
    for (size_t i = 0; i < list.size(); ++i) {
      std::string path = "tensors[" + std::to_string(i) + "]";
      try {
        tensors_.push_back(ReadTensor(list[i], path));
      } catch (const TypeError& err) {
        throw TypeError(WithPath(err, path));
      } catch (const Error& err) {
        throw Error(WithPath(err, path));
      }
    }
    std::vector<Tensor> outputs;
    const json& out = GetArray(doc, "outputs", "graph");
    for (size_t i = 0; i < out.size(); ++i) {
      std::string path = "graph.outputs[" + std::to_string(i) + "]";
      AS_CHECK(out[i].is_number_integer(),
               "malformed tensor graph: field '" << path << "' must be an integer");
      outputs.push_back(TensorAt(out[i].get<int64_t>(), tensors_.size(), path));
    }
    return outputs;
  }

 private:
  Tensor TensorAt(int64_t index, size_t limit, const std::string& path) const {
    AS_CHECK(index >= 0 && static_cast<size_t>(index) < limit, "malformed tensor graph: field '"
                                                                   << path << "' refers to tensor " << index
                                                                   << ", which is not defined before it");
    return tensors_[index];
  }

  Tensor ReadTensor(const json& j, const std::string& path) {
    std::string name = GetString(j, "name", path);
    std::string op = GetString(j, "op", path);
    DataType dtype = GetDType(j, "dtype", path);
    std::vector<int64_t> shape;
    const json& shape_json = GetArray(j, "shape", path);
    for (const json& d : shape_json) {
      AS_CHECK(d.is_number_integer(),
               "malformed tensor graph: field '" << path << ".shape' must hold integers");
      shape.push_back(d.get<int64_t>());
    }
    if (op == "placeholder") return placeholder(shape, dtype, name);
    AS_CHECK(op == "compute",
             "malformed tensor graph: field '" << path << ".op' has unknown value '" << op << "'");
    std::vector<IterVar> axis = ReadAxes(j, "axis", IterKind::Spatial, path);
    std::vector<IterVar> reduce_axis = ReadAxes(j, "reduce_axis", IterKind::Reduce, path);
    axes_ = axis;
    axes_.insert(axes_.end(), reduce_axis.begin(), reduce_axis.end());
    Expr body = ReadExpr(Field(j, "body", path), path + ".body");
    std::string tag = GetString(j, "tag", path);
    std::map<std::string, std::string> attrs;
    const json& attrs_json = Field(j, "attrs", path);
    AS_CHECK(attrs_json.is_object(),
             "malformed tensor graph: field '" << path << ".attrs' must be an object");
    for (const auto& [key, value] : attrs_json.items()) {
      AS_CHECK(value.is_string(),
               "malformed tensor graph: field '" << path << ".attrs." << key << "' must be a string");
      attrs[key] = value.get<std::string>();
    }
    Tensor t = compute(name, axis, body, tag, attrs);
    AS_CHECK(t->shape == shape,
             "malformed tensor graph: field '" << path << ".shape' does not match its axes");
    AS_CHECK(t->dtype == dtype,
             "malformed tensor graph: field '" << path << ".dtype' does not match its body");
    return t;
  }

  std::vector<IterVar> ReadAxes(const json& j, const char* key, IterKind kind, const std::string& path) {
    std::vector<IterVar> result;
    const json& list = GetArray(j, key, path);
    for (size_t i = 0; i < list.size(); ++i) {
      std::string p = path + "." + key + "[" + std::to_string(i) + "]";
      int64_t extent = GetInt(list[i], "extent", p);
      AS_CHECK(extent > 0, "malformed tensor graph: field '" << p << ".extent' must be positive");
      result.push_back(
          IterVar{VarNode::make(GetString(list[i], "name", p)), GetInt(list[i], "min", p), extent, kind});
    }
    return result;
  }

  const IterVar& AxisAt(const json& id, const std::string& path) const {
    AS_CHECK(id.is_number_integer(), "malformed tensor graph: field '" << path << "' must be an integer");
    int64_t i = id.get<int64_t>();
    AS_CHECK(i >= 0 && static_cast<size_t>(i) < axes_.size(),
             "malformed tensor graph: field '" << path << "' refers to unknown variable " << i);
    return axes_[i];
  }

  std::vector<Expr> ReadExprs(const json& j, const char* key, const std::string& path) {
    std::vector<Expr> result;
    const json& list = GetArray(j, key, path);
    for (size_t i = 0; i < list.size(); ++i) {
      result.push_back(ReadExpr(list[i], path + "." + key + "[" + std::to_string(i) + "]"));
    }
    return result;
  }

  Expr Child(const json& j, const char* key, const std::string& path) {
    return ReadExpr(Field(j, key, path), path + "." + key);
  }

  Expr ReadFloat(const json& j, const std::string& path) {
    DataType t = GetDType(j, "dtype", path);
    const json& v = Field(j, "value", path);
    if (v.is_number()) return FloatImmNode::make(t, v.get<double>());
    AS_CHECK(v.is_string(), "malformed tensor graph: field '" << path << ".value' must be a number");
    std::string s = v.get<std::string>();
    double inf = std::numeric_limits<double>::infinity();
    AS_CHECK(s == "inf" || s == "-inf" || s == "nan",
             "malformed tensor graph: field '" << path << ".value' has unknown value '" << s << "'");
    return FloatImmNode::make(t, s == "inf"    ? inf
                                 : s == "-inf" ? -inf
                                               : std::numeric_limits<double>::quiet_NaN());
  }

  // Counts the nesting of ReadExpr, so that a document nested past what an
  // expression may be gets an error before the recursion goes deeper.
  struct DepthGuard {
    int& depth;
    explicit DepthGuard(int& d, const std::string& path) : depth(d) {
      AS_CHECK(depth < kMaxExprDepth, "malformed tensor graph: the expression at '"
                                          << path.substr(0, 80) << "...' is nested more than "
                                          << kMaxExprDepth << " levels deep");
      ++depth;
    }
    ~DepthGuard() { --depth; }
  };

  Expr ReadExpr(const json& j, const std::string& path) {
    DepthGuard guard(depth_, path);
    std::string kind = GetString(j, "kind", path);
    if (kind == "int") return IntImmNode::make(GetDType(j, "dtype", path), GetInt(j, "value", path));
    if (kind == "float") return ReadFloat(j, path);
    if (kind == "var") return AxisAt(Field(j, "id", path), path + ".id").var;
    if (kind == "binary") {
      BinOp op = GetParsed(j, "op", path, ParseBinOp);
      return BinaryNode::make(op, Child(j, "a", path), Child(j, "b", path));
    }
    if (kind == "not") return NotNode::make(Child(j, "a", path));
    if (kind == "select") {
      return SelectNode::make(Child(j, "condition", path), Child(j, "true_value", path),
                              Child(j, "false_value", path));
    }
    if (kind == "cast") return CastNode::make(GetDType(j, "dtype", path), Child(j, "value", path));
    if (kind == "call") {
      Intrinsic op = GetParsed(j, "op", path, ParseIntrinsic);
      return CallNode::make(op, ReadExprs(j, "args", path));
    }
    if (kind == "load") {
      Tensor t = TensorAt(GetInt(j, "tensor", path), tensors_.size(), path + ".tensor");
      return t(ReadExprs(j, "indices", path));
    }
    if (kind == "reduce") {
      Combiner c = GetParsed(j, "combiner", path, ParseCombiner);
      std::vector<IterVar> axis;
      const json& ids = GetArray(j, "axis", path);
      for (size_t i = 0; i < ids.size(); ++i) {
        axis.push_back(AxisAt(ids[i], path + ".axis[" + std::to_string(i) + "]"));
      }
      const json& cond = Field(j, "condition", path);
      Expr condition = cond.is_null() ? Expr() : ReadExpr(cond, path + ".condition");
      Expr source = Child(j, "source", path);
      DataType result = j.contains("dtype") ? GetDType(j, "dtype", path) : source.dtype();
      DataType acc =
          j.contains("acc_dtype") ? GetDType(j, "acc_dtype", path) : DefaultAccumulationType(result);
      return ReduceNode::make(c, source, axis, condition, acc, result);
    }
    AS_CHECK(false, "malformed tensor graph: field '" << path << ".kind' has unknown value '" << kind << "'");
    return {};
  }

  std::vector<Tensor> tensors_;
  std::vector<IterVar> axes_;  // axis + reduce_axis of the op being read
  int depth_ = 0;              // nesting of ReadExpr
};

}  // namespace

json TensorsToJson(const std::vector<Tensor>& tensors) { return GraphWriter().Write(tensors); }

json ParseJsonText(const std::string& text, const std::string& what) {
  // Parsing, printing and walking a document recurse on its nesting: measure
  // it first, skipping strings (where brackets are plain characters).
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      AS_CHECK(++depth <= kMaxJsonDepth, what << ": the JSON is nested more than " << kMaxJsonDepth
                                              << " levels deep (at character " << i
                                              << "); no document autosched writes is that deep");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(what + ": not valid JSON: " + e.what());
  }
}

std::vector<Tensor> TensorsFromJson(const json& doc) {
  try {
    return GraphReader().Read(doc);
  } catch (const json::exception& err) {
    AS_CHECK(false, "malformed tensor graph: " << err.what());
  }
  return {};
}

}  // namespace autosched
