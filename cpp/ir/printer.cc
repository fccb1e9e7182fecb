// Text form of expressions and ops. The notation follows what TVM users read
// every day; the choices for immediates are:
//   int (any width) and uint8: plain decimal, e.g. 5, -3
//   bool:                      True / False
//   float32:                   shortest round-trip decimal + "f": 1f, 0.5f, inff, -inff, nanf
//   float16:                   the same with "h": 1h, 0.5h
//   bfloat16:                  the same with "bf": 1bf, 0.5bf
//   float64:                   the same with "d": 1d, 0.5d
#include "ir/printer.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "support/error.h"

namespace autosched {

namespace {

// Shortest decimal that reads back to the same value in the immediate's type.
std::string FloatText(DataType t, double v) {
  const char* suffix = t.is_bfloat16() ? "bf" : t.bits == 16 ? "h" : t.bits == 64 ? "d" : "f";
  if (std::isnan(v)) return std::string("nan") + suffix;
  if (std::isinf(v)) return std::string(v < 0 ? "-inf" : "inf") + suffix;
  char buf[64];
  std::to_chars_result r = t.bits == 64 ? std::to_chars(buf, buf + sizeof(buf), v)
                                        : std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v));
  return std::string(buf, r.ptr) + suffix;
}

// Binary operators printed infix (with their spelling) or as a call.
const char* InfixSymbol(BinOp op) {
  switch (op) {
    case BinOp::Add: return " + ";
    case BinOp::Sub: return " - ";
    case BinOp::Mul: return "*";
    case BinOp::Div: return " / ";
    case BinOp::Mod: return " % ";
    case BinOp::EQ: return " == ";
    case BinOp::NE: return " != ";
    case BinOp::LT: return " < ";
    case BinOp::LE: return " <= ";
    case BinOp::GT: return " > ";
    case BinOp::GE: return " >= ";
    case BinOp::And: return " && ";
    case BinOp::Or: return " || ";
    default: return nullptr;  // floordiv, floormod, min, max: call syntax
  }
}

void PrintList(std::ostream& os, const std::vector<Expr>& items) {
  for (size_t i = 0; i < items.size(); ++i) os << (i ? ", " : "") << items[i];
}

void PrintAxisNames(std::ostream& os, const std::vector<IterVar>& axis) {
  for (size_t i = 0; i < axis.size(); ++i) os << (i ? ", " : "") << axis[i].name();
}

void PrintReduce(std::ostream& os, const ReduceNode* n) {
  os << CombinerName(n->combiner) << "(" << n->source << ", axis=[";
  PrintAxisNames(os, n->axis);
  os << "]";
  if (n->condition.defined()) os << ", where=" << n->condition;
  if (n->acc_dtype != DefaultAccumulationType(n->dtype)) os << ", acc_dtype=" << n->acc_dtype.str();
  os << ")";
}

const char* CombinerAssign(Combiner c) {
  switch (c) {
    case Combiner::Sum: return " += ";
    case Combiner::Prod: return " *= ";
    case Combiner::Max: return " max= ";
    case Combiner::Min: return " min= ";
  }
  return " ?= ";
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Expr& e) {
  if (!e.defined()) return os << "<undefined>";
  switch (e.kind()) {
    case ExprKind::IntImm: {
      int64_t v = e.as<IntImmNode>()->value;
      if (e.dtype().is_bool()) return os << (v ? "True" : "False");
      return os << v;
    }
    case ExprKind::FloatImm: return os << FloatText(e.dtype(), e.as<FloatImmNode>()->value);
    case ExprKind::Var: return os << e.as<VarNode>()->name;
    case ExprKind::Binary: {
      const auto* n = e.as<BinaryNode>();
      if (const char* sym = InfixSymbol(n->op)) return os << "(" << n->a << sym << n->b << ")";
      return os << BinOpName(n->op) << "(" << n->a << ", " << n->b << ")";
    }
    case ExprKind::Not: return os << "!" << e.as<NotNode>()->a;
    case ExprKind::Select: {
      const auto* n = e.as<SelectNode>();
      return os << "select(" << n->condition << ", " << n->true_value << ", " << n->false_value << ")";
    }
    case ExprKind::Cast: return os << e.dtype().str() << "(" << e.as<CastNode>()->value << ")";
    case ExprKind::Call: {
      const auto* n = e.as<CallNode>();
      os << IntrinsicName(n->op) << "(";
      PrintList(os, n->args);
      return os << ")";
    }
    case ExprKind::TensorLoad: {
      const auto* n = e.as<TensorLoadNode>();
      os << n->tensor->name << "[";
      PrintList(os, n->indices);
      return os << "]";
    }
    case ExprKind::Reduce: PrintReduce(os, e.as<ReduceNode>()); return os;
    case ExprKind::BufferLoad: {
      const auto* n = e.as<BufferLoadNode>();
      os << n->buffer->name << "[";
      PrintList(os, n->indices);
      return os << "]";
    }
    case ExprKind::Ramp: {
      const auto* n = e.as<RampNode>();
      return os << "ramp(" << n->base << ", " << n->stride << ", " << n->lanes << ")";
    }
    case ExprKind::Broadcast: {
      const auto* n = e.as<BroadcastNode>();
      return os << "broadcast(" << n->value << ", " << n->lanes << ")";
    }
    case ExprKind::Let: {
      const auto* n = e.as<LetNode>();
      return os << "(let " << n->var << " = " << n->value << " in " << n->body << ")";
    }
  }
  return os << "<unknown expr>";
}

std::string ToString(const Expr& e) {
  std::ostringstream os;
  os << e;
  return os.str();
}

std::string OpToString(const Tensor& t) {
  AS_CHECK(t.defined(), "OpToString of an undefined tensor");
  std::ostringstream os;
  if (t->is_placeholder()) {
    os << t->name << " = PLACEHOLDER [";
    for (size_t i = 0; i < t->shape.size(); ++i) os << (i ? ", " : "") << t->shape[i];
    os << "]";
    return os.str();
  }
  os << t->name << "(";
  PrintAxisNames(os, t->axis);
  os << ")";
  if (const auto* red = t->body.as<ReduceNode>()) {
    os << CombinerAssign(red->combiner) << red->source;
    if (red->condition.defined()) os << " where " << red->condition;
    if (red->acc_dtype != DefaultAccumulationType(red->dtype))
      os << " (accumulates in " << red->acc_dtype.str() << ")";
  } else {
    os << " = " << t->body;
  }
  return os.str();
}

}  // namespace autosched
