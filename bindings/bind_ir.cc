// Python view of the expression IR: DataType, Expr (with operators), IterVar,
// Tensor and the type-checked construction functions. The DSL sugar (lambda
// argument names, reductions with where=, te.max's two uses) lives in
// python/autosched/te.py; here Python literals become constants by one rule:
// a literal takes the dtype of the other operand, and a float literal next to
// an integer expression is a TypeError (no silent truncation).
#include <pybind11/stl.h>

#include <cmath>
#include <sstream>

#include "bind.h"
#include "ir/dtype.h"
#include "ir/expr.h"
#include "ir/printer.h"
#include "ir/serialize.h"
#include "ir/tensor.h"
#include "support/error.h"

namespace py = pybind11;

namespace autosched::bindings {
namespace {

// numpy scalars (np.int64(3), np.float32(2)) as the Python number they hold.
py::object NormalizeNumber(py::handle value) {
  if (py::isinstance<py::bool_>(value) || py::isinstance<py::int_>(value) ||
      py::isinstance<py::float_>(value)) {
    return py::reinterpret_borrow<py::object>(value);
  }
  if (py::hasattr(value, "dtype") && py::hasattr(value, "item") && py::len(value.attr("shape")) == 0) {
    std::string kind = py::str(value.attr("dtype").attr("kind"));
    if (kind == "b" || kind == "i" || kind == "u" || kind == "f") return value.attr("item")();
  }
  return py::reinterpret_borrow<py::object>(value);
}

// A Python number as a constant of dtype `like` (see the rule above), or of
// its default type (bool, int32, float32) when there is no other operand.
Expr LiteralToExpr(py::handle original, const DataType* like) {
  py::object value = NormalizeNumber(original);
  if (py::isinstance<py::bool_>(value)) {
    return IntImmNode::make(DataType::Bool(), value.cast<bool>() ? 1 : 0);
  }
  if (py::isinstance<py::int_>(value)) {
    auto v = value.cast<int64_t>();
    if (like == nullptr) {
      AS_TYPE_CHECK(
          WrapToType(DataType::Int(32), v) == v,
          "integer literal " << v << " does not fit in int32; give a dtype, e.g. te.const(v, \"int64\")");
      return IntImmNode::make(DataType::Int(32), v);
    }
    AS_TYPE_CHECK(!like->is_bool(), "integer literal " << v << " used with an expression of dtype bool");
    AS_TYPE_CHECK(
        !like->is_integer() || WrapToType(*like, v) == v,
        "integer literal " << v << " does not fit in " << like->str() << " (the dtype of the other operand)");
    return like->is_float() ? FloatImmNode::make(*like, static_cast<double>(v)) : IntImmNode::make(*like, v);
  }
  if (py::isinstance<py::float_>(value)) {
    double v = value.cast<double>();
    if (like == nullptr) return FloatImmNode::make(DataType::Float(32), v);
    AS_TYPE_CHECK(like->is_float(), "float literal " << v << " used with an expression of dtype "
                                                     << like->str()
                                                     << "; cast one side first (te.cast / .astype)");
    return FloatImmNode::make(*like, v);
  }
  throw TypeError("cannot use a value of Python type '" +
                  std::string(py::str(py::type::of(original).attr("__name__"))) + "' in an expression");
}

// Expr, IterVar (its variable) or a Python number.
Expr ToExpr(py::handle value, const DataType* like = nullptr) {
  if (py::isinstance<Expr>(value)) return value.cast<Expr>();
  if (py::isinstance<IterVar>(value)) return value.cast<IterVar>().var;
  return LiteralToExpr(value, like);
}

// Both operands as Exprs: a literal takes the dtype of the Expr beside it.
std::pair<Expr, Expr> ToOperands(py::handle a, py::handle b) {
  bool a_is_expr = py::isinstance<Expr>(a) || py::isinstance<IterVar>(a);
  bool b_is_expr = py::isinstance<Expr>(b) || py::isinstance<IterVar>(b);
  if (a_is_expr && !b_is_expr) {
    Expr x = ToExpr(a);
    DataType t = x.dtype();
    return {x, ToExpr(b, &t)};
  }
  if (b_is_expr && !a_is_expr) {
    Expr y = ToExpr(b);
    DataType t = y.dtype();
    return {ToExpr(a, &t), y};
  }
  return {ToExpr(a), ToExpr(b)};
}

// Expressions built from Python are held to kMaxExprDepth (the core allows
// more, for what lowering adds).
Expr Checked(Expr e) {
  AS_CHECK(e.depth() <= kMaxExprDepth,
           "expression is nested " << e.depth() << " levels deep, more than the limit of " << kMaxExprDepth
                                   << " (write long sums as a reduction over a reduce axis, e.g. "
                                      "te.sum(A[i, k], axis=k), or compute intermediate results in "
                                      "separate tensors)");
  return e;
}

Expr Binary(BinOp op, py::handle a, py::handle b) {
  auto [x, y] = ToOperands(a, b);
  return Checked(BinaryNode::make(op, x, y));
}

Expr Negate(const Expr& x) { return Checked(BinaryNode::make(BinOp::Sub, make_const(x.dtype(), 0), x)); }

bool IsOperand(py::handle original) {
  py::object value = NormalizeNumber(original);
  return py::isinstance<Expr>(value) || py::isinstance<IterVar>(value) || py::isinstance<py::int_>(value) ||
         py::isinstance<py::float_>(value);
}

Expr ExprOf(const Expr& e) { return e; }
Expr ExprOf(const IterVar& iv) { return iv.var; }

std::string ExprRepr(const Expr& e) { return ToString(e); }

// Operators shared by Expr and IterVar (which stands for its variable).
template <typename T>
void DefineOperators(py::class_<T>& cls) {
  // Anything that is not an operand gives NotImplemented, so Python reports
  // "unsupported operand type(s)" and `expr == None` is simply False.
  auto bin = [](BinOp op) {
    return [op](py::object a, py::object b) -> py::object {
      if (!IsOperand(b)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
      return py::cast(Binary(op, a, b));
    };
  };
  auto rbin = [](BinOp op) {
    return [op](py::object a, py::object b) -> py::object {
      if (!IsOperand(b)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
      return py::cast(Binary(op, b, a));
    };
  };
  struct Entry {
    const char* name;
    const char* rname;
    BinOp op;
  };
  static const Entry kOps[] = {
      {"__add__", "__radd__", BinOp::Add},
      {"__sub__", "__rsub__", BinOp::Sub},
      {"__mul__", "__rmul__", BinOp::Mul},
      {"__truediv__", "__rtruediv__", BinOp::Div},
      {"__floordiv__", "__rfloordiv__", BinOp::FloorDiv},
      {"__mod__", "__rmod__", BinOp::FloorMod},
      {"__and__", "__rand__", BinOp::And},
      {"__or__", "__ror__", BinOp::Or},
      {"__lt__", nullptr, BinOp::LT},
      {"__le__", nullptr, BinOp::LE},
      {"__gt__", nullptr, BinOp::GT},
      {"__ge__", nullptr, BinOp::GE},
      {"__eq__", nullptr, BinOp::EQ},
      {"__ne__", nullptr, BinOp::NE},
  };
  for (const Entry& e : kOps) {
    cls.def(e.name, bin(e.op));
    if (e.rname) cls.def(e.rname, rbin(e.op));
  }
  cls.def("__pow__", [](py::object a, py::object b) {
    auto [x, y] = ToOperands(a, b);
    return Checked(CallNode::make(Intrinsic::Pow, {x, y}));
  });
  cls.def("__neg__", [](py::object a) { return Negate(ToExpr(a)); });
  cls.def("__invert__", [](py::object a) { return Checked(NotNode::make(ToExpr(a))); });
  cls.def("__abs__", [](py::object a) { return Checked(CallNode::make(Intrinsic::Fabs, {ToExpr(a)})); });
  cls.def("astype", [](py::object a, const std::string& dtype) {
    return Checked(cast(DataType::Parse(dtype), ToExpr(a)));
  });
  cls.def("__bool__", [](py::object) -> bool {
    throw TypeError(
        "an expression has no truth value; use te.all / & / | to combine conditions, "
        "te.if_then_else / te.select to choose");
  });
  // __eq__ builds an expression, so hashing is by identity of the node.
  cls.def("__hash__", [](const T& self) { return reinterpret_cast<intptr_t>(ExprOf(self).get()); });
}

void BindExpr(py::module_& m) {
  py::class_<Expr> expr(m, "Expr", "An immutable expression of the tensor-expression IR.");
  expr.def_property_readonly("dtype", [](const Expr& e) { return e.dtype().str(); })
      .def_property_readonly("kind", [](const Expr& e) { return ExprKindName(e.kind()); })
      .def_property_readonly("value",
                             [](const Expr& e) -> py::object {
                               if (const auto* i = e.as<IntImmNode>()) {
                                 return e.dtype().is_bool() ? py::object(py::bool_(i->value != 0))
                                                            : py::object(py::int_(i->value));
                               }
                               if (const auto* f = e.as<FloatImmNode>()) return py::float_(f->value);
                               return py::none();
                             })
      .def_property_readonly("name",
                             [](const Expr& e) -> py::object {
                               if (const auto* v = e.as<VarNode>()) return py::str(v->name);
                               return py::none();
                             })
      .def("same_as", &Expr::same_as)
      .def("__str__", &ExprRepr)
      .def("__repr__", &ExprRepr);
  DefineOperators(expr);
}

void BindIterVar(py::module_& m) {
  // The domain of an axis, as TVM users read it: k.dom.min, k.dom.extent.
  m.attr("Range") = py::module_::import("collections").attr("namedtuple")("Range", "min extent");
  py::class_<IterVar> iter_var(m, "IterVar", "An iteration variable over [min, min + extent).");
  iter_var
      .def(py::init([](const std::string& name, int64_t min, int64_t extent, const std::string& kind) {
             AS_CHECK(extent > 0, "axis '" << name << "' has non-positive extent " << extent);
             return IterVar{VarNode::make(name), min, extent, ParseIterKind(kind)};
           }),
           py::arg("name"), py::arg("min"), py::arg("extent"), py::arg("kind") = "spatial")
      .def_property_readonly("var", [](const IterVar& iv) { return iv.var; })
      .def_property_readonly("name", [](const IterVar& iv) { return iv.name(); })
      .def_property_readonly("min", [](const IterVar& iv) { return iv.min; })
      .def_property_readonly("extent", [](const IterVar& iv) { return iv.extent; })
      .def_property_readonly("dom",
                             [](const IterVar& iv) {
                               return py::module_::import("autosched._core").attr("Range")(iv.min, iv.extent);
                             })
      .def_property_readonly("kind", [](const IterVar& iv) { return IterKindName(iv.kind); })
      .def_property_readonly("dtype", [](const IterVar& iv) { return iv.var.dtype().str(); })
      .def("__str__", [](const IterVar& iv) { return iv.name(); })
      .def("__repr__", [](const IterVar& iv) {
        return "IterVar(" + iv.name() + ", [" + std::to_string(iv.min) + ", " +
               std::to_string(iv.min + iv.extent) + "), " + IterKindName(iv.kind) + ")";
      });
  DefineOperators(iter_var);
}

std::vector<Expr> ToIndices(py::handle index) {
  std::vector<Expr> indices;
  if (py::isinstance<py::tuple>(index) || py::isinstance<py::list>(index)) {
    for (py::handle item : index) indices.push_back(ToExpr(item));
  } else {
    indices.push_back(ToExpr(index));
  }
  return indices;
}

void BindTensor(py::module_& m) {
  py::class_<Tensor>(m, "Tensor", "The output of a placeholder or compute operation.")
      .def("__getitem__", [](const Tensor& t, py::object index) { return Checked(t(ToIndices(index))); })
      .def("__iter__",
           [](const Tensor& t) -> py::object {
             throw TypeError("tensor '" + t->name +
                             "' is symbolic and cannot be iterated; index it as T[i, j]");
           })
      .def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t->shape)); })
      .def_property_readonly("dtype", [](const Tensor& t) { return t->dtype.str(); })
      .def_property_readonly("name", [](const Tensor& t) { return t->name; })
      .def_property_readonly("ndim", &Tensor::ndim)
      .def_property_readonly("op_kind",
                             [](const Tensor& t) { return t->is_placeholder() ? "placeholder" : "compute"; })
      // One output per op: the tensor is its op, so C.op.axis reads as in TVM.
      .def_property_readonly("op", [](const Tensor& t) { return t; })
      .def_property_readonly("tag", [](const Tensor& t) { return t->tag; })
      .def_property_readonly("attrs", [](const Tensor& t) { return t->attrs; })
      .def_property_readonly("axis", [](const Tensor& t) { return t->axis; })
      .def_property_readonly("reduce_axis", [](const Tensor& t) { return t->reduce_axis; })
      .def_property_readonly(
          "body",
          [](const Tensor& t) -> py::object { return t->body.defined() ? py::cast(t->body) : py::none(); })
      .def("input_tensors", &InputTensors)
      .def("same_as", &Tensor::same_as)
      .def("__eq__", [](const Tensor& a,
                        py::object b) { return py::isinstance<Tensor>(b) && a.same_as(b.cast<Tensor>()); })
      .def("__ne__", [](const Tensor& a,
                        py::object b) { return !(py::isinstance<Tensor>(b) && a.same_as(b.cast<Tensor>())); })
      .def("__hash__", [](const Tensor& t) { return reinterpret_cast<intptr_t>(t.get()); })
      // Pickled with the ops it reads (its graph's JSON): the copy is an equal
      // tensor with inputs of its own. Tensors are immutable, so copy and
      // deepcopy keep the tensor itself (and a graph's tensors stay linked).
      .def(py::pickle([](const Tensor& t) { return TensorsToJson({t}).dump(); },
                      [](const std::string& text) {
                        return TensorsFromJson(ParseJsonText(text, "pickled tensor")).at(0);
                      }))
      .def("__copy__", [](py::object self) { return self; })
      .def(
          "__deepcopy__", [](py::object self, py::object) { return self; }, py::arg("memo"))
      .def("__str__", &OpToString)
      .def("__repr__", [](const Tensor& t) {
        std::ostringstream text;
        text << "Tensor(" << t->name << ", shape=(";
        for (size_t i = 0; i < t->shape.size(); ++i) text << (i ? ", " : "") << t->shape[i];
        text << (t->shape.size() == 1 ? ",)" : ")") << ", dtype=" << t->dtype.str() << ")";
        return text.str();
      });
}

// Construction functions, one per IR node family; te.py builds on them.
void BindConstructors(py::module_& m) {
  m.def(
      "convert",
      [](py::object value, py::object like) {
        if (like.is_none()) return ToExpr(value);
        DataType t = DataType::Parse(like.cast<std::string>());
        return ToExpr(value, &t);
      },
      py::arg("value"), py::arg("dtype") = py::none(),
      "An Expr from an Expr, IterVar or Python number (a literal takes `dtype` when given).");
  m.def(
      "const",
      [](py::object value, const std::string& dtype) {
        value = NormalizeNumber(value);
        DataType t = DataType::Parse(dtype);
        if (py::isinstance<py::float_>(value)) {
          double v = value.cast<double>();
          AS_TYPE_CHECK(t.is_float() || std::floor(v) == v,
                        "constant " << v << " is not a whole number and cannot be a " << t.str());
          return make_const(t, v);
        }
        if (t.is_float()) return FloatImmNode::make(t, static_cast<double>(value.cast<int64_t>()));
        return IntImmNode::make(t, value.cast<int64_t>());
      },
      py::arg("value"), py::arg("dtype"));
  m.def(
      "var",
      [](const std::string& name, const std::string& dtype) {
        return VarNode::make(name, DataType::Parse(dtype));
      },
      py::arg("name"), py::arg("dtype") = "int32");
  m.def("binary",
        [](const std::string& op, py::object a, py::object b) { return Binary(ParseBinOp(op), a, b); });
  m.def("logical_not", [](py::object a) { return Checked(NotNode::make(ToExpr(a))); });
  m.def("select", [](py::object c, py::object t, py::object f) {
    auto [x, y] = ToOperands(t, f);
    return Checked(SelectNode::make(ToExpr(c), x, y));
  });
  m.def("call", [](const std::string& name, const std::vector<py::object>& args) {
    std::vector<Expr> exprs;
    Intrinsic op = ParseIntrinsic(name);
    if (op == Intrinsic::IfThenElse && args.size() == 3) {
      auto [x, y] = ToOperands(args[1], args[2]);
      exprs = {ToExpr(args[0]), x, y};
    } else if (op == Intrinsic::Pow && args.size() == 2) {
      auto [x, y] = ToOperands(args[0], args[1]);
      exprs = {x, y};
    } else {
      for (const py::object& a : args) exprs.push_back(ToExpr(a));
    }
    return Checked(CallNode::make(op, std::move(exprs)));
  });
  m.def("cast", [](py::object value, const std::string& dtype) {
    return Checked(cast(DataType::Parse(dtype), ToExpr(value)));
  });
  m.def("reduce_axis", &MakeReduceAxis, py::arg("min"), py::arg("extent"), py::arg("name"));
  m.def(
      "reduce",
      [](const std::string& combiner, py::object source, const std::vector<IterVar>& axis, py::object where,
         py::object acc_dtype) {
        Expr condition = where.is_none() ? Expr() : ToExpr(where);
        Expr src = ToExpr(source);
        DataType acc = acc_dtype.is_none() ? DefaultAccumulationType(src.dtype())
                                           : DataType::Parse(acc_dtype.cast<std::string>());
        return Checked(ReduceNode::make(ParseCombiner(combiner), src, axis, condition, acc, src.dtype()));
      },
      py::arg("combiner"), py::arg("source"), py::arg("axis"), py::arg("where") = py::none(),
      py::arg("acc_dtype") = py::none(),
      "A reduction; acc_dtype is the accumulation type (default: float32 for float16 and bfloat16, else the "
      "source's).");
  m.def(
      "identity",
      [](const std::string& combiner, const std::string& dtype) {
        return CombinerIdentity(ParseCombiner(combiner), DataType::Parse(dtype));
      },
      "The identity of a combiner: sum 0, prod 1, max lowest, min highest value of dtype.");
  m.def(
      "placeholder",
      [](const std::vector<int64_t>& shape, const std::string& dtype, const std::string& name) {
        return placeholder(shape, DataType::Parse(dtype), name);
      },
      py::arg("shape"), py::arg("dtype"), py::arg("name"));
  m.def("compute", &compute, py::arg("name"), py::arg("axis"), py::arg("body"), py::arg("tag") = "",
        py::arg("attrs") = std::map<std::string, std::string>{});
}

}  // namespace

void bind_ir(py::module_& m) {
  py::class_<DataType>(m, "DataType")
      .def_static("parse", &DataType::Parse)
      .def_property_readonly("bits", [](const DataType& t) { return t.bits; })
      .def_property_readonly("lanes", [](const DataType& t) { return t.lanes; })
      .def("__str__", &DataType::str)
      .def("__repr__", [](const DataType& t) { return "DataType(" + t.str() + ")"; })
      .def("__eq__", &DataType::operator==)
      .def("__hash__", [](const DataType& t) { return std::hash<std::string>()(t.str()); });
  BindExpr(m);
  BindIterVar(m);
  BindTensor(m);
  BindConstructors(m);
}

}  // namespace autosched::bindings
