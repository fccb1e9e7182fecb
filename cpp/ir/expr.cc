#include "ir/expr.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/functor.h"
#include "ir/tensor.h"
#include "support/enum_table.h"
#include "support/error.h"

namespace autosched {

namespace {

constexpr EnumEntry<ExprKind> kExprKindNames[] = {
    {ExprKind::IntImm, "IntImm"},
    {ExprKind::FloatImm, "FloatImm"},
    {ExprKind::Var, "Var"},
    {ExprKind::Binary, "Binary"},
    {ExprKind::Not, "Not"},
    {ExprKind::Select, "Select"},
    {ExprKind::Cast, "Cast"},
    {ExprKind::Call, "Call"},
    {ExprKind::TensorLoad, "TensorLoad"},
    {ExprKind::Reduce, "Reduce"},
    {ExprKind::BufferLoad, "BufferLoad"},
    {ExprKind::Ramp, "Ramp"},
    {ExprKind::Broadcast, "Broadcast"},
    {ExprKind::Let, "Let"},
};

constexpr EnumEntry<BinOp> kBinOpNames[] = {
    {BinOp::Add, "add"},
    {BinOp::Sub, "sub"},
    {BinOp::Mul, "mul"},
    {BinOp::Div, "div"},
    {BinOp::Mod, "mod"},
    {BinOp::FloorDiv, "floordiv"},
    {BinOp::FloorMod, "floormod"},
    {BinOp::Min, "min"},
    {BinOp::Max, "max"},
    {BinOp::EQ, "eq"},
    {BinOp::NE, "ne"},
    {BinOp::LT, "lt"},
    {BinOp::LE, "le"},
    {BinOp::GT, "gt"},
    {BinOp::GE, "ge"},
    {BinOp::And, "and"},
    {BinOp::Or, "or"},
};

constexpr EnumEntry<Intrinsic> kIntrinsicNames[] = {
    {Intrinsic::Exp, "exp"},
    {Intrinsic::Log, "log"},
    {Intrinsic::Sqrt, "sqrt"},
    {Intrinsic::Rsqrt, "rsqrt"},
    {Intrinsic::Tanh, "tanh"},
    {Intrinsic::Sigmoid, "sigmoid"},
    {Intrinsic::Erf, "erf"},
    {Intrinsic::Pow, "pow"},
    {Intrinsic::Fabs, "fabs"},
    {Intrinsic::Floor, "floor"},
    {Intrinsic::Ceil, "ceil"},
    {Intrinsic::Round, "round"},
    {Intrinsic::IfThenElse, "if_then_else"},
    {Intrinsic::RoundEven, "round_even"},
};

constexpr EnumEntry<Combiner> kCombinerNames[] = {
    {Combiner::Sum, "sum"}, {Combiner::Prod, "prod"}, {Combiner::Max, "max"}, {Combiner::Min, "min"}};

constexpr EnumEntry<IterKind> kIterKindNames[] = {{IterKind::Spatial, "spatial"},
                                                  {IterKind::Reduce, "reduce"}};

constexpr EnumEntry<MemScope> kMemScopeNames[] = {
    {MemScope::Global, "global"}, {MemScope::Shared, "shared"}, {MemScope::Local, "local"}};

}  // namespace

const char* ExprKindName(ExprKind k) { return EnumName(kExprKindNames, k); }
const char* BinOpName(BinOp op) { return EnumName(kBinOpNames, op); }
const char* IntrinsicName(Intrinsic op) { return EnumName(kIntrinsicNames, op); }

const IntrinsicFacts& FactsOf(Intrinsic op) {
  //                                              expensive  library call per lane
  static const IntrinsicFacts kLibraryMath = {true, true};
  static const IntrinsicFacts kVectorMath = {true, false};  // sqrt has vector instructions
  static const IntrinsicFacts kCheap = {false, false};
  switch (op) {
    case Intrinsic::Exp:
    case Intrinsic::Log:
    case Intrinsic::Tanh:
    case Intrinsic::Sigmoid:
    case Intrinsic::Erf:
    case Intrinsic::Pow: return kLibraryMath;
    case Intrinsic::Sqrt:
    case Intrinsic::Rsqrt: return kVectorMath;
    case Intrinsic::Fabs:
    case Intrinsic::Floor:
    case Intrinsic::Ceil:
    case Intrinsic::Round:
    case Intrinsic::RoundEven:
    case Intrinsic::IfThenElse: return kCheap;
  }
  return kCheap;
}
const char* CombinerName(Combiner c) { return EnumName(kCombinerNames, c); }
const char* IterKindName(IterKind k) { return EnumName(kIterKindNames, k); }
const char* MemScopeName(MemScope s) { return EnumName(kMemScopeNames, s); }
BinOp ParseBinOp(const std::string& name) { return ParseEnum(kBinOpNames, name, "binary operator"); }
Intrinsic ParseIntrinsic(const std::string& name) { return ParseEnum(kIntrinsicNames, name, "intrinsic"); }
Combiner ParseCombiner(const std::string& name) { return ParseEnum(kCombinerNames, name, "reduction"); }
IterKind ParseIterKind(const std::string& name) { return ParseEnum(kIterKindNames, name, "axis kind"); }
MemScope ParseMemScope(const std::string& name) { return ParseEnum(kMemScopeNames, name, "memory scope"); }

bool IsComparison(BinOp op) { return op >= BinOp::EQ && op <= BinOp::GE; }
bool IsLogical(BinOp op) { return op == BinOp::And || op == BinOp::Or; }

bool MayTrapOnDivision(const BinaryNode* b) {
  bool divides =
      b->op == BinOp::Div || b->op == BinOp::Mod || b->op == BinOp::FloorDiv || b->op == BinOp::FloorMod;
  int64_t divisor = 0;
  return divides && !b->dtype.is_float() && !(GetConstInt(b->b, &divisor) && divisor != 0);
}

ExprNode::ExprNode(ExprKind k, DataType t, int child_depth) : kind(k), depth(child_depth + 1), dtype(t) {
  AS_CHECK(depth <= kMaxNodeDepth, "expression is nested " << depth << " levels deep, more than the limit of "
                                                           << kMaxNodeDepth
                                                           << " (write long sums as a reduction over a "
                                                              "reduce axis, or split the computation)");
}

int MaxDepth(const std::vector<Expr>& list) {
  int d = 0;
  for (const Expr& e : list) d = std::max(d, e.depth());
  return d;
}

Expr::Expr(int value) : Expr(IntImmNode::make(DataType::Int(32), value)) {}
Expr::Expr(float value) : Expr(FloatImmNode::make(DataType::Float(32), value)) {}

int64_t WrapToType(DataType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  if (!t.is_integer() || t.bits >= 64) return v;
  uint64_t mask = (uint64_t{1} << t.bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (t.is_int() && (u >> (t.bits - 1)) != 0) u |= ~mask;  // sign-extend
  return static_cast<int64_t>(u);
}

Expr IntImmNode::make(DataType t, int64_t value) {
  AS_TYPE_CHECK(t.is_integer() || t.is_bool(), "integer immediate with non-integer dtype " << t.str());
  return Expr(std::make_shared<IntImmNode>(t, WrapToType(t, value)));
}

Expr FloatImmNode::make(DataType t, double value) {
  AS_TYPE_CHECK(t.is_float(), "float immediate with non-float dtype " << t.str());
  return Expr(std::make_shared<FloatImmNode>(t, value));
}

Expr VarNode::make(const std::string& name, DataType t) {
  AS_TYPE_CHECK(IsSupportedScalar(t.element_of()), "variable '" << name << "' has unsupported dtype");
  return Expr(std::make_shared<VarNode>(t, name));
}

Expr BinaryNode::make(BinOp op, Expr a, Expr b) {
  AS_CHECK(a.defined() && b.defined(), "operand of " << BinOpName(op) << " is undefined");
  AS_TYPE_CHECK(a.dtype() == b.dtype(), "operands of "
                                            << BinOpName(op) << " have different dtypes: " << a.dtype().str()
                                            << " and " << b.dtype().str() << " (cast one of them)");
  DataType t = a.dtype();
  if (IsLogical(op)) {
    AS_TYPE_CHECK(t.is_bool(), BinOpName(op) << " needs bool operands, got " << t.str());
    return Expr(std::make_shared<BinaryNode>(t, op, std::move(a), std::move(b)));
  }
  if (IsComparison(op)) {
    return Expr(std::make_shared<BinaryNode>(DataType::Bool(t.lanes), op, std::move(a), std::move(b)));
  }
  AS_TYPE_CHECK(!t.is_bool() || op == BinOp::Min || op == BinOp::Max,
                "arithmetic " << BinOpName(op) << " on bool operands (cast them first)");
  return Expr(std::make_shared<BinaryNode>(t, op, std::move(a), std::move(b)));
}

Expr NotNode::make(Expr a) {
  AS_TYPE_CHECK(a.defined() && a.dtype().is_bool(), "logical not needs a bool operand");
  DataType t = a.dtype();
  return Expr(std::make_shared<NotNode>(t, std::move(a)));
}

Expr SelectNode::make(Expr condition, Expr true_value, Expr false_value) {
  AS_TYPE_CHECK(condition.defined() && condition.dtype().is_bool(), "select condition must be bool");
  AS_TYPE_CHECK(true_value.dtype() == false_value.dtype(),
                "select branches have different dtypes: " << true_value.dtype().str() << " and "
                                                          << false_value.dtype().str());
  DataType t = true_value.dtype();
  return Expr(
      std::make_shared<SelectNode>(t, std::move(condition), std::move(true_value), std::move(false_value)));
}

Expr CastNode::make(DataType t, Expr value) {
  AS_TYPE_CHECK(IsSupportedScalar(t.element_of()), "cast to unsupported dtype " << t.str());
  AS_CHECK(value.defined(), "cast of an undefined expression");
  if (value.dtype() == t) return value;
  return Expr(std::make_shared<CastNode>(t, std::move(value)));
}

Expr CallNode::make(Intrinsic op, std::vector<Expr> args) {
  size_t arity = op == Intrinsic::Pow ? 2 : op == Intrinsic::IfThenElse ? 3 : 1;
  AS_CHECK(args.size() == arity, IntrinsicName(op)
                                     << " takes " << arity << " argument(s), got " << args.size());
  for (const Expr& a : args) AS_CHECK(a.defined(), IntrinsicName(op) << " got an undefined argument");
  if (op == Intrinsic::IfThenElse) {
    AS_TYPE_CHECK(args[0].dtype().is_bool(),
                  "if_then_else condition must be bool, got " << args[0].dtype().str());
    AS_TYPE_CHECK(args[1].dtype() == args[2].dtype(),
                  "if_then_else branches have different dtypes: " << args[1].dtype().str() << " and "
                                                                  << args[2].dtype().str());
    DataType t = args[1].dtype();
    return Expr(std::make_shared<CallNode>(t, op, std::move(args)));
  }
  DataType t = args[0].dtype();
  if (op == Intrinsic::Pow) {
    AS_TYPE_CHECK(args[1].dtype() == t,
                  "pow operands have different dtypes: " << t.str() << " and " << args[1].dtype().str());
  }
  bool ok = t.is_float() || (op == Intrinsic::Fabs && t.is_integer());
  AS_TYPE_CHECK(ok, IntrinsicName(op) << " needs a float argument, got " << t.str() << " (cast it first)");
  return Expr(std::make_shared<CallNode>(t, op, std::move(args)));
}

Expr TensorLoadNode::make(const Tensor& tensor, std::vector<Expr> indices) {
  AS_CHECK(tensor.defined(), "load from an undefined tensor");
  AS_CHECK(static_cast<int>(indices.size()) == tensor.ndim(),
           "tensor '" << tensor->name << "' has rank " << tensor.ndim() << " but is indexed with "
                      << indices.size() << " index(es)");
  for (size_t i = 0; i < indices.size(); ++i) {
    AS_CHECK(indices[i].defined(), "index " << i << " of tensor '" << tensor->name << "' is undefined");
    AS_TYPE_CHECK(indices[i].dtype().is_integer() && indices[i].dtype().is_scalar(),
                  "index " << i << " of tensor '" << tensor->name << "' has dtype "
                           << indices[i].dtype().str() << ", expected an integer");
    // Index arithmetic is int32 everywhere (see the semantics above).
    indices[i] = cast(DataType::Int(32), std::move(indices[i]));
  }
  return Expr(std::make_shared<TensorLoadNode>(tensor->dtype, tensor.ptr(), std::move(indices)));
}

IterVar MakeReduceAxis(int64_t min, int64_t extent, const std::string& name) {
  AS_CHECK(extent > 0, "reduce axis '" << name << "' has non-positive extent " << extent);
  constexpr int64_t kInt32Max = (int64_t{1} << 31) - 1;
  AS_CHECK(min >= -kInt32Max && extent <= kInt32Max - std::max<int64_t>(min, 0),
           "reduce axis '" << name << "' over [" << min << ", " << min + extent
                           << ") does not fit its 32-bit index variable");
  return IterVar{VarNode::make(name), min, extent, IterKind::Reduce};
}

Expr CombinerIdentity(Combiner c, DataType t) {
  switch (c) {
    case Combiner::Sum: return make_const(t, 0);
    case Combiner::Prod: return make_const(t, 1);
    case Combiner::Max:
      if (t.is_float()) return FloatImmNode::make(t, -std::numeric_limits<double>::infinity());
      if (t.is_uint()) return IntImmNode::make(t, 0);
      return IntImmNode::make(
          t, t.bits >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (t.bits - 1)));
    case Combiner::Min:
      if (t.is_float()) return FloatImmNode::make(t, std::numeric_limits<double>::infinity());
      if (t.is_uint()) return IntImmNode::make(t, (int64_t{1} << t.bits) - 1);
      return IntImmNode::make(
          t, t.bits >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (t.bits - 1)) - 1);
  }
  return Expr();
}

DataType DefaultAccumulationType(DataType t) {
  if (t.is_16bit_float()) return DataType::Float(32, t.lanes);
  return t;
}

Expr ReduceNode::make(Combiner combiner, Expr source, std::vector<IterVar> axis, Expr condition) {
  AS_CHECK(source.defined(), CombinerName(combiner) << " reduction of an undefined expression");
  DataType t = source.dtype();
  return make(combiner, std::move(source), std::move(axis), std::move(condition), DefaultAccumulationType(t),
              t);
}

Expr ReduceNode::make(Combiner combiner, Expr source, std::vector<IterVar> axis, Expr condition,
                      DataType acc_dtype, DataType result_dtype) {
  const char* name = CombinerName(combiner);
  AS_CHECK(source.defined(), name << " reduction of an undefined expression");
  AS_TYPE_CHECK(!source.dtype().is_bool(), name << " reduction over bool values "
                                                   "(cast to an integer type first)");
  AS_TYPE_CHECK(IsSupportedScalar(acc_dtype) && IsSupportedScalar(result_dtype) && !result_dtype.is_bool(),
                name << " reduction with unsupported types: accumulates in " << acc_dtype.str() << ", gives "
                     << result_dtype.str());
  const bool wider_float =
      acc_dtype.is_float() && result_dtype.is_float() && acc_dtype.bits > result_dtype.bits;
  AS_TYPE_CHECK(acc_dtype == result_dtype || wider_float,
                name << " reduction of " << result_dtype.str() << " values cannot accumulate in "
                     << acc_dtype.str() << " (use " << result_dtype.str()
                     << (result_dtype.is_float() ? " or a wider float type)" : ")"));
  const DataType src = source.dtype();
  const bool widens_to_acc = FloatFitsIn(src, acc_dtype);
  AS_TYPE_CHECK(src == result_dtype || src == acc_dtype || widens_to_acc,
                name << " reduction giving " << result_dtype.str() << " has a source of dtype "
                     << source.dtype().str() << " (cast it first)");
  AS_CHECK(!axis.empty(), name << " reduction needs at least one reduce axis");
  for (const IterVar& iv : axis) {
    AS_CHECK(iv.kind == IterKind::Reduce,
             "axis '" << iv.name() << "' of a " << name
                      << " reduction is not a reduce axis (make it with te.reduce_axis)");
    AS_CHECK(UsesVar(source, iv.var_node()) || (condition.defined() && UsesVar(condition, iv.var_node())),
             "reduce axis '" << iv.name() << "' is not used in the body of the " << name << " reduction");
  }
  if (condition.defined()) {
    AS_TYPE_CHECK(condition.dtype().is_bool(), "reduction condition must be bool");
  }
  return Expr(std::make_shared<ReduceNode>(result_dtype, combiner, std::move(source), std::move(axis),
                                           std::move(condition), acc_dtype));
}

Expr ReduceNode::identity() const { return CombinerIdentity(combiner, acc_dtype); }

Buffer MakeBuffer(const std::string& name, DataType dtype, std::vector<int64_t> shape, MemScope scope,
                  std::vector<int64_t> strides) {
  AS_TYPE_CHECK(IsSupportedScalar(dtype), "buffer '" << name << "' has unsupported dtype " << dtype.str());
  auto b = std::make_shared<BufferNode>();
  b->name = name;
  b->dtype = dtype;
  b->shape = std::move(shape);
  b->scope = scope;
  b->strides = std::move(strides);
  return b;
}

Expr BufferLoadNode::make(Buffer buffer, std::vector<Expr> indices) {
  AS_CHECK(buffer != nullptr, "load from an undefined buffer");
  AS_CHECK(!indices.empty(), "load from buffer '" << buffer->name << "' without indices");
  int lanes = indices.back().dtype().lanes;
  for (size_t i = 0; i + 1 < indices.size(); ++i) {
    AS_CHECK(indices[i].dtype().lanes == 1, "only the last index of a buffer load may be a vector");
  }
  return Expr(std::make_shared<BufferLoadNode>(buffer->dtype.with_lanes(lanes), std::move(buffer),
                                               std::move(indices)));
}

Expr RampNode::make(Expr base, int64_t stride, int lanes) {
  AS_CHECK(lanes > 1, "a ramp needs at least 2 lanes");
  AS_TYPE_CHECK(base.dtype().is_integer() && base.dtype().is_scalar(), "ramp base must be a scalar integer");
  DataType t = base.dtype().with_lanes(lanes);
  return Expr(std::make_shared<RampNode>(t, std::move(base), stride, lanes));
}

Expr BroadcastNode::make(Expr value, int lanes) {
  AS_CHECK(lanes > 1, "a broadcast needs at least 2 lanes");
  AS_CHECK(value.dtype().is_scalar(), "broadcast of a vector");
  DataType t = value.dtype().with_lanes(lanes);
  return Expr(std::make_shared<BroadcastNode>(t, std::move(value), lanes));
}

Expr LetNode::make(Expr var, Expr value, Expr body) {
  AS_CHECK(var.as<VarNode>() != nullptr, "let binds a non-variable");
  AS_TYPE_CHECK(var.dtype() == value.dtype(),
                "let binds a " << var.dtype().str() << " variable to a " << value.dtype().str() << " value");
  DataType t = body.dtype();
  return Expr(std::make_shared<LetNode>(t, std::move(var), std::move(value), std::move(body)));
}

Expr make_const(DataType t, double value) {
  if (t.is_float()) return FloatImmNode::make(t, value);
  return IntImmNode::make(t, static_cast<int64_t>(value));
}

Expr operator+(Expr a, Expr b) { return BinaryNode::make(BinOp::Add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return BinaryNode::make(BinOp::Sub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return BinaryNode::make(BinOp::Mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return BinaryNode::make(BinOp::Div, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return BinaryNode::make(BinOp::LT, std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return BinaryNode::make(BinOp::LE, std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return BinaryNode::make(BinOp::GT, std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return BinaryNode::make(BinOp::GE, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) { return BinaryNode::make(BinOp::And, std::move(a), std::move(b)); }
Expr operator||(Expr a, Expr b) { return BinaryNode::make(BinOp::Or, std::move(a), std::move(b)); }
Expr operator!(Expr a) { return NotNode::make(std::move(a)); }
Expr floordiv(Expr a, Expr b) { return BinaryNode::make(BinOp::FloorDiv, std::move(a), std::move(b)); }
Expr floormod(Expr a, Expr b) { return BinaryNode::make(BinOp::FloorMod, std::move(a), std::move(b)); }
Expr min(Expr a, Expr b) { return BinaryNode::make(BinOp::Min, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return BinaryNode::make(BinOp::Max, std::move(a), std::move(b)); }
Expr eq(Expr a, Expr b) { return BinaryNode::make(BinOp::EQ, std::move(a), std::move(b)); }
Expr ne(Expr a, Expr b) { return BinaryNode::make(BinOp::NE, std::move(a), std::move(b)); }
Expr select(Expr c, Expr t, Expr f) { return SelectNode::make(std::move(c), std::move(t), std::move(f)); }
Expr if_then_else(Expr c, Expr t, Expr f) {
  return CallNode::make(Intrinsic::IfThenElse, {std::move(c), std::move(t), std::move(f)});
}
Expr cast(DataType t, Expr v) { return CastNode::make(t, std::move(v)); }

bool GetConstInt(const Expr& e, int64_t* value) {
  if (const auto* imm = e.as<IntImmNode>()) {
    *value = imm->value;
    return true;
  }
  return false;
}

}  // namespace autosched
