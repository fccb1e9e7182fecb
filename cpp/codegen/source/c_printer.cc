#include "codegen/source/c_printer.h"

#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>

#include "ir/functor.h"
#include "support/error.h"

namespace autosched {
namespace {

// C's keywords and the words C dialects reserve, never used as identifiers.
const std::set<std::string>& CKeywords() {
  static const std::set<std::string> words = {
      "auto",  "break",    "case",   "char",     "const",  "continue", "default", "do",     "double",
      "else",  "enum",     "extern", "float",    "for",    "goto",     "if",      "inline", "int",
      "long",  "return",   "short",  "signed",   "sizeof", "static",   "struct",  "switch", "typedef",
      "union", "unsigned", "void",   "volatile", "while",  "bool",     "true",    "false",  "restrict",
      "lane",  "uchar",    "ushort", "uint",     "ulong",  "half",     "main",    "max",    "min"};
  return words;
}

std::string UnsignedOf(const std::string& type) {
  return type == "char" ? "uchar" : type == "short" ? "ushort" : type == "int" ? "uint" : "ulong";
}

std::string FloatLiteral(double v, int bits) {
  const char* suffix = bits == 64 ? "" : "f";
  const char* type = bits == 64 ? "(double)" : "";
  if (std::isnan(v)) return std::string("(") + type + "NAN)";
  if (std::isinf(v)) return std::string("(") + (v < 0 ? "-" : "") + type + "INFINITY)";
  char buf[64];
  if (bits == 64) {
    std::snprintf(buf, sizeof(buf), "%a", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%a", static_cast<double>(static_cast<float>(v)));
  }
  return std::string("(") + buf + suffix + ")";
}

}  // namespace

std::string CPrinter::FreshName(const std::string& hint) {
  std::string base;
  for (char c : hint) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0])) || base[0] == '_') base = "v" + base;
  // "as_" names the helpers; keywords and dialect words are taken.
  if (base.rfind("as_", 0) == 0 || CKeywords().count(base) || reserved_.count(base)) base = "v_" + base;
  std::string name = base;
  for (int k = 1; used_names_.count(name); ++k) name = base + "_" + std::to_string(k);
  used_names_.insert(name);
  return name;
}

std::string CPrinter::VarName(const VarNode* v) {
  auto it = var_names_.find(v);
  if (it != var_names_.end()) return it->second;
  return var_names_[v] = FreshName(v->name);
}

std::string CPrinter::BufferName(const BufferNode* b) {
  auto it = buffer_names_.find(b);
  if (it != buffer_names_.end()) return it->second;
  return buffer_names_[b] = FreshName(b->name);
}

void CPrinter::NeedHelper(const std::string& name, const std::string& text) {
  for (const auto& h : helpers_) {
    if (h.first == name) return;
  }
  helpers_.push_back({name, text});
}

std::string CPrinter::Helpers() const {
  std::string text;
  for (const auto& h : helpers_) text += h.second + "\n";
  return text;
}

void CPrinter::Line(const std::string& text) { body_ << std::string(2 * indent_, ' ') << text << "\n"; }

void CPrinter::Open(const std::string& text) {
  Line(text.empty() ? "{" : text + " {");
  ++indent_;
  scopes_.emplace_back();
}

void CPrinter::Close() {
  --indent_;
  Line("}");
  if (scopes_.size() > 1) scopes_.pop_back();
}

void CPrinter::Reopen(const std::string& text) {
  --indent_;
  if (scopes_.size() > 1) scopes_.pop_back();
  Open("} " + text);
}

std::string CPrinter::TakeBody() {
  std::string text = body_.str();
  body_.str("");
  return text;
}

std::string CPrinter::PrintIndex(const Expr& index) {
  bool saved = in_index_;
  in_index_ = true;
  std::string text = PrintExpr(index);
  in_index_ = saved;
  return text;
}

std::string CPrinter::PrintImm(const Expr& e) {
  DataType t = e.dtype();
  if (const auto* f = e.as<FloatImmNode>()) {
    if (t.is_float16()) return RoundToHalf(FloatLiteral(f->value, 32), DataType::Float(32));
    return FloatLiteral(f->value, t.bits);
  }
  int64_t v = e.as<IntImmNode>()->value;
  if (t.is_bool()) return v ? "true" : "false";
  if (t.is_int() && t.bits == 32) {
    return v == std::numeric_limits<int32_t>::min() ? "(-2147483647 - 1)" : std::to_string(v);
  }
  if (t.is_int() && t.bits == 64) {
    return v == std::numeric_limits<int64_t>::min() ? "(-9223372036854775807L - 1L)"
                                                    : "(" + std::to_string(v) + "L)";
  }
  return "((" + TypeName(t) + ")" + std::to_string(v) + ")";
}

std::string CPrinter::PrintExpr(const Expr& e) {
  AS_ICHECK(e.dtype().lanes == 1 || !lane_.empty(),
            "source code generation: a vector expression outside a vector store");
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm: return PrintImm(e);
    case ExprKind::Var: return VarName(e.as<VarNode>());
    case ExprKind::Binary: return PrintBinary(e.as<BinaryNode>());
    case ExprKind::Not: return "(!" + PrintExpr(e.as<NotNode>()->a) + ")";
    case ExprKind::Select: {
      const auto* n = e.as<SelectNode>();
      return "(" + PrintExpr(n->condition) + " ? " + PrintExpr(n->true_value) + " : " +
             PrintExpr(n->false_value) + ")";
    }
    case ExprKind::Cast: return PrintCast(e.dtype(), e.as<CastNode>()->value);
    case ExprKind::Call: {
      const auto* n = e.as<CallNode>();
      std::vector<std::string> args;
      for (const Expr& a : n->args) args.push_back(PrintExpr(a));
      // The conditional operator evaluates only the chosen branch.
      if (n->op == Intrinsic::IfThenElse) return "(" + args[0] + " ? " + args[1] + " : " + args[2] + ")";
      return PrintIntrinsic(n, args);
    }
    case ExprKind::BufferLoad: return PrintLoad(e.as<BufferLoadNode>());
    case ExprKind::Ramp: {
      const auto* n = e.as<RampNode>();
      return "(" + PrintExpr(n->base) + " + " + lane_ + " * " + std::to_string(n->stride) + ")";
    }
    case ExprKind::Broadcast: return PrintExpr(e.as<BroadcastNode>()->value);
    case ExprKind::Let: {
      const auto* n = e.as<LetNode>();
      return PrintExpr(Substitute(n->body, {{n->var.as<VarNode>(), n->value}}));
    }
    case ExprKind::TensorLoad:
    case ExprKind::Reduce: break;
  }
  AS_CHECK(false, "source code generation: " << ExprKindName(e.kind()) << " was not lowered");
  return "";
}

std::string CPrinter::PrintBinary(const BinaryNode* n) {
  std::string a = PrintExpr(n->a), b = PrintExpr(n->b);
  DataType t = n->a.dtype().element_of();
  switch (n->op) {
    case BinOp::EQ: return "(" + a + " == " + b + ")";
    case BinOp::NE: return "(" + a + " != " + b + ")";
    case BinOp::LT: return "(" + a + " < " + b + ")";
    case BinOp::LE: return "(" + a + " <= " + b + ")";
    case BinOp::GT: return "(" + a + " > " + b + ")";
    case BinOp::GE: return "(" + a + " >= " + b + ")";
    case BinOp::And: return "(" + a + " && " + b + ")";
    case BinOp::Or: return "(" + a + " || " + b + ")";
    default: break;
  }
  if (n->op == BinOp::Div || n->op == BinOp::Mod || n->op == BinOp::FloorDiv || n->op == BinOp::FloorMod) {
    if (t.is_integer()) {
      int64_t c = 0;
      bool safe = GetConstInt(n->b, &c) && c > 0;  // no check needed
      // C's division truncates, which is floor division for a non-negative dividend.
      if (safe && (n->op == BinOp::Div || n->op == BinOp::Mod || t.is_uint() || KnownNonNegative(n->a)))
        return "(" + a + (n->op == BinOp::Div || n->op == BinOp::FloorDiv ? " / " : " % ") + b + ")";
      return PrintIntDivision(n->op, t, a, b);
    }
  }
  return PrintArith(n->op, t, a, b);
}

bool CPrinter::KnownNonNegative(const Expr& e) const {
  int64_t c = 0;
  if (GetConstInt(e, &c)) return c >= 0;
  if (const auto* v = e.as<VarNode>()) return non_negative_.count(v) > 0;
  const auto* n = e.as<BinaryNode>();
  if (!n || !n->a.dtype().is_int()) return false;
  switch (n->op) {
    case BinOp::Add:
    case BinOp::Mul:
    case BinOp::Min:
    case BinOp::Max: return KnownNonNegative(n->a) && KnownNonNegative(n->b);
    case BinOp::Div:
    case BinOp::Mod:
    case BinOp::FloorDiv:
    case BinOp::FloorMod: return KnownNonNegative(n->a) && GetConstInt(n->b, &c) && c > 0;
    default: return false;
  }
}

std::string CPrinter::PrintArith(BinOp op, DataType t, const std::string& a, const std::string& b) {
  const std::string type = TypeName(t);
  if (t.is_float()) {
    switch (op) {
      case BinOp::Add: return "(" + a + " + " + b + ")";
      case BinOp::Sub: return "(" + a + " - " + b + ")";
      case BinOp::Mul: return "(" + a + " * " + b + ")";
      case BinOp::Div: return "(" + a + " / " + b + ")";
      case BinOp::Mod: return "fmod(" + a + ", " + b + ")";
      case BinOp::FloorDiv: return "floor(" + a + " / " + b + ")";
      case BinOp::FloorMod: return "(" + a + " - floor(" + a + " / " + b + ") * " + b + ")";
      case BinOp::Min:
      case BinOp::Max: return PrintFloatMinMax(op, t, a, b);
      default: break;
    }
  } else if (t.is_integer()) {
    const char* sym = op == BinOp::Add   ? " + "
                      : op == BinOp::Sub ? " - "
                      : op == BinOp::Mul ? " * "
                                         : nullptr;
    if (sym && in_index_ && t.is_int() && t.bits == 32) return "(" + a + sym + b + ")";
    // Values wrap: narrow types compute in int and convert back; int and
    // long compute on their unsigned type (signed overflow is undefined in C).
    if (sym && t.bits < 32) return "((" + type + ")(" + a + sym + b + "))";
    if (sym) {
      const std::string u = UnsignedOf(type);
      return "((" + type + ")((" + u + ")" + a + sym + "(" + u + ")" + b + "))";
    }
    if (op == BinOp::Min) return "min(" + a + ", " + b + ")";
    if (op == BinOp::Max) return "max(" + a + ", " + b + ")";
  }
  AS_CHECK(false, "source code generation: operator " << BinOpName(op) << " on " << t.str());
  return "";
}

// Integer division as the evaluator defines it (docs/ir.md): by 0 gives 0,
// by -1 negates with wrapping, floor forms round toward negative infinity.
std::string CPrinter::PrintIntDivision(BinOp op, DataType t, const std::string& a, const std::string& b) {
  const std::string type = TypeName(t);
  const std::string name = std::string("as_") + BinOpName(op) + "_" + type;
  const std::string head = type + " " + name + "(" + type + " a, " + type + " b) {\n";
  std::string text;
  if (t.is_uint()) {
    const char* sym = op == BinOp::Div || op == BinOp::FloorDiv ? "/" : "%";
    text = head + "  return b == 0 ? (" + type + ")0 : (" + type + ")(a " + sym + " b);\n}\n";
  } else {
    const std::string u = UnsignedOf(type);
    const bool quotient = op == BinOp::Div || op == BinOp::FloorDiv;
    text = head + "  if (b == 0) return 0;\n";
    text += quotient ? "  if (b == -1) return (" + type + ")((" + u + ")0 - (" + u + ")a);\n"
                     : "  if (b == -1) return 0;\n";
    if (op == BinOp::Div) text += "  return (" + type + ")(a / b);\n";
    if (op == BinOp::Mod) text += "  return (" + type + ")(a % b);\n";
    if (op == BinOp::FloorDiv || op == BinOp::FloorMod) {
      text += "  " + type + " q = (" + type + ")(a / b), r = (" + type + ")(a % b);\n";
      text += "  bool adjust = r != 0 && ((r < 0) != (b < 0));\n";
      text += op == BinOp::FloorDiv ? "  return adjust ? (" + type + ")(q - 1) : q;\n"
                                    : "  return adjust ? (" + type + ")(r + b) : r;\n";
    }
    text += "}\n";
  }
  NeedHelper(name, text);
  return name + "(" + a + ", " + b + ")";
}

// NaN in either operand gives NaN, as numpy.maximum / minimum and the LLVM
// backend's llvm.maximum / llvm.minimum do (C's fmax / fmin drop the NaN).
std::string CPrinter::PrintFloatMinMax(BinOp op, DataType t, const std::string& a, const std::string& b,
                                       const std::string& type_override) {
  const std::string type = type_override.empty() ? TypeName(t) : type_override;
  const std::string fn = op == BinOp::Max ? "fmax" : "fmin";
  const std::string name = "as_" + fn + "_" + type;
  NeedHelper(name, type + " " + name + "(" + type + " a, " + type +
                       " b) {\n  return isnan(a) ? a : (isnan(b) ? b : " + fn + "(a, b));\n}\n");
  return name + "(" + a + ", " + b + ")";
}

std::string CPrinter::PrintCast(DataType to, const Expr& value) {
  DataType from = value.dtype().element_of();
  to = to.element_of();
  std::string v = PrintExpr(value);
  if (from == to) return v;
  if (to.is_bool()) return "(" + v + " != 0)";
  if (to.is_float16()) return RoundToHalf(v, from);
  return "((" + TypeName(to) + ")" + v + ")";
}

std::string CPrinter::PrintIntrinsic(const CallNode* n, const std::vector<std::string>& args) {
  const std::string& x = args[0];
  DataType t = n->dtype.element_of();
  switch (n->op) {
    case Intrinsic::Exp: return "exp(" + x + ")";
    case Intrinsic::Log: return "log(" + x + ")";
    case Intrinsic::Sqrt: return "sqrt(" + x + ")";
    case Intrinsic::Rsqrt: return "(1 / sqrt(" + x + "))";
    case Intrinsic::Tanh: return "tanh(" + x + ")";
    case Intrinsic::Erf: return "erf(" + x + ")";
    case Intrinsic::Sigmoid: return "(1 / (1 + exp(-" + x + ")))";
    case Intrinsic::Pow: return "pow(" + x + ", " + args[1] + ")";
    case Intrinsic::Fabs:
      if (t.is_float()) return "fabs(" + x + ")";
      if (t.is_uint()) return x;
      return "((" + TypeName(t) + ")abs(" + x + "))";  // abs(INT_MIN) wraps to INT_MIN
    case Intrinsic::Floor: return "floor(" + x + ")";
    case Intrinsic::Ceil: return "ceil(" + x + ")";
    case Intrinsic::Round: return "round(" + x + ")";     // halves away from zero
    case Intrinsic::RoundEven: return "rint(" + x + ")";  // the default rounding mode: halves to even
    case Intrinsic::IfThenElse: break;
  }
  AS_CHECK(false, "source code generation: intrinsic " << IntrinsicName(n->op) << " is not supported");
  return "";
}

std::string CPrinter::PrintLoad(const BufferLoadNode* n) {
  AS_CHECK(n->indices.size() == 1,
           "source code generation: load from '" << n->buffer->name << "' is not flattened to one index");
  return LoadElement(n->buffer.get(), PrintIndex(n->indices[0]));
}

void CPrinter::PrintStore(const BufferStoreNode* n) {
  AS_CHECK(n->indices.size() == 1,
           "source code generation: store to '" << n->buffer->name << "' is not flattened to one index");
  const int lanes = n->value.dtype().lanes;
  if (lanes == 1) {
    Line(StoreElement(n->buffer.get(), PrintIndex(n->indices[0]), PrintExpr(n->value), n->value.dtype()));
    return;
  }
  // A vector store: every lane in turn (vectorize_loops made only stores
  // whose lanes do not depend on each other).
  AS_CHECK(n->indices[0].dtype().lanes == lanes,
           "source code generation: store to '" << n->buffer->name << "' mixes index and value lanes");
  if (PrintVectorStore(n)) return;
  lane_ = "lane" + std::to_string(lane_counter_++);
  Open("for (int " + lane_ + " = 0; " + lane_ + " < " + std::to_string(lanes) + "; ++" + lane_ + ")");
  Line(StoreElement(n->buffer.get(), PrintIndex(n->indices[0]), PrintExpr(n->value),
                    n->value.dtype().element_of()));
  Close();
  lane_.clear();
}

void CPrinter::PrintFor(const ForNode* n) {
  const VarNode* var = n->loop_var.as<VarNode>();
  const std::string v = VarName(var);
  const std::string min = PrintIndex(n->min);
  int64_t m = 0;
  const std::string end = GetConstInt(n->min, &m) && m == 0 ? PrintIndex(n->extent)
                                                            : "(" + min + " + " + PrintIndex(n->extent) + ")";
  if (KnownNonNegative(n->min)) NoteNonNegative(var);
  Open("for (" + TypeName(var->dtype) + " " + v + " = " + min + "; " + v + " < " + end + "; ++" + v + ")");
  PrintStmt(n->body);
  Close();
}

void CPrinter::PrintStmt(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::For: return PrintFor(s.as<ForNode>());
    case StmtKind::BufferStore: return PrintStore(s.as<BufferStoreNode>());
    case StmtKind::Allocate: return PrintAllocate(s.as<AllocateNode>());
    case StmtKind::IfThenElse: {
      const auto* n = s.as<IfThenElseNode>();
      Open("if (" + PrintIndex(n->condition) + ")");  // guards: index arithmetic
      PrintStmt(n->then_case);
      if (n->else_case.defined()) {
        Reopen("else");
        PrintStmt(n->else_case);
      }
      Close();
      return;
    }
    case StmtKind::Seq:
      for (const Stmt& x : s.as<SeqNode>()->seq) PrintStmt(x);
      return;
    case StmtKind::LetStmt: {
      const auto* n = s.as<LetStmtNode>();
      const VarNode* var = n->var.as<VarNode>();
      Open("");
      Line("const " + TypeName(var->dtype) + " " + VarName(var) + " = " + PrintExpr(n->value) + ";");
      PrintStmt(n->body);
      Close();
      return;
    }
    case StmtKind::Pragma: return PrintStmt(s.as<PragmaNode>()->body);
  }
}

}  // namespace autosched
