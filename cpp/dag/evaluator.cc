// The reference evaluator.
//
// Roadmap
//  - float16 <-> double conversion and typed element access (ReadElement /
//    WriteElement) at the top; bfloat16 converts through float32 with the
//    rounding of ir/dtype.h, the one generated code uses.
//  - BodyCompiler turns one op's body into a tree of small closures. Every
//    variable (spatial or reduce axis) gets a slot in the op's frame,
//    an array of Slot; a closure reads its operands' closures and the frame,
//    so interpretation does no lookups. Integer and bool values travel as
//    int64 (already wrapped to their dtype), floats as double.
//  - Evaluator owns one TensorStore per op of the DAG (the caller's memory for
//    arguments, owned memory for intermediates) and the compiled bodies. It
//    either materialises every compute op in topological order, or (on demand)
//    computes an element the first time a load needs it and remembers it.
//
// Choices beyond what ir/expr.h fixes: And / Or evaluate both operands (as
// Select does), so a guard must use if_then_else; float -> int casts send NaN
// to 0 and saturate at the int64 range before wrapping; min / max of floats
// propagate NaN; float immediates and casts to float16 / bfloat16 / float32
// round to that type (to bfloat16 through float32, as generated code does),
// except that a bfloat16 immediate keeps float32 precision (ir/expr.h).
#include "dag/evaluator.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "support/error.h"

namespace autosched {
namespace {

// ---- float16 ----

double HalfBitsToDouble(uint16_t h) {
  int sign = h >> 15;
  int exponent = (h >> 10) & 0x1f;
  int mantissa = h & 0x3ff;
  double magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(mantissa, -24);  // zero or subnormal
  } else if (exponent == 0x1f) {
    magnitude = mantissa ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    magnitude = std::ldexp(mantissa + 1024, exponent - 25);
  }
  return sign ? -magnitude : magnitude;
}

// Rounds a non-negative value to the nearest integer, ties to even.
double RoundHalfEven(double q) {
  double floor_q = std::floor(q);
  double fraction = q - floor_q;
  if (fraction > 0.5) return floor_q + 1;
  if (fraction < 0.5) return floor_q;
  return std::fmod(floor_q, 2.0) == 0 ? floor_q : floor_q + 1;
}

// Direct double -> half (one rounding, to nearest even), so no double
// rounding through float32.
uint16_t DoubleToHalfBits(double d) {
  uint16_t sign = std::signbit(d) ? 0x8000 : 0;
  if (std::isnan(d)) return sign | 0x7e00;
  double a = std::fabs(d);
  if (a >= 65520.0) return sign | 0x7c00;  // 65520 is the midpoint past the largest half, 65504
  if (a < std::ldexp(1.0, -14)) {
    // Subnormal: units of 2^-24; rounding up to 1024 yields the smallest normal.
    return sign | static_cast<uint16_t>(RoundHalfEven(std::ldexp(a, 24)));
  }
  int exp2 = 0;
  std::frexp(a, &exp2);  // a = m * 2^exp2, m in [0.5, 1)
  int exponent = exp2 - 1;
  double significand = RoundHalfEven(std::ldexp(a, 10 - exponent));  // in [1024, 2048]
  if (significand >= 2048) {
    significand = 1024;
    ++exponent;
  }
  if (exponent > 15) return sign | 0x7c00;
  return sign | static_cast<uint16_t>(((exponent + 15) << 10) | (static_cast<int>(significand) - 1024));
}

// ---- bfloat16 ----

double BFloat16BitsToDouble(uint16_t b) { return static_cast<double>(BFloat16BitsToFloat(b)); }

// Through float32 (two roundings), as generated code and PyTorch convert.
uint16_t DoubleToBFloat16Bits(double d) { return FloatToBFloat16Bits(static_cast<float>(d)); }

// The value a float of type t holds after being rounded to t.
double RoundToFloatType(DataType t, double v) {
  if (t.is_bfloat16()) return BFloat16BitsToDouble(DoubleToBFloat16Bits(v));
  if (t.bits == 16) return HalfBitsToDouble(DoubleToHalfBits(v));
  if (t.bits == 32) return static_cast<double>(static_cast<float>(v));
  return v;
}

// ---- typed element access ----

template <typename T>
T LoadRaw(const uint8_t* base, int64_t i) {
  T v;
  std::memcpy(&v, base + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}
template <typename T>
void StoreRaw(uint8_t* base, int64_t i, T v) {
  std::memcpy(base + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

using FloatReader = double (*)(const uint8_t*, int64_t);
using IntReader = int64_t (*)(const uint8_t*, int64_t);

FloatReader FloatReaderFor(DataType t) {
  if (t.is_bfloat16()) {
    return [](const uint8_t* p, int64_t i) { return BFloat16BitsToDouble(LoadRaw<uint16_t>(p, i)); };
  }
  switch (t.bits) {
    case 16: return [](const uint8_t* p, int64_t i) { return HalfBitsToDouble(LoadRaw<uint16_t>(p, i)); };
    case 32: return [](const uint8_t* p, int64_t i) { return static_cast<double>(LoadRaw<float>(p, i)); };
    default: return [](const uint8_t* p, int64_t i) { return LoadRaw<double>(p, i); };
  }
}

IntReader IntReaderFor(DataType t) {
  if (t.is_bool()) return [](const uint8_t* p, int64_t i) -> int64_t { return p[i] != 0; };
  if (t.is_uint()) return [](const uint8_t* p, int64_t i) -> int64_t { return p[i]; };  // uint8 only
  switch (t.bits) {
    case 8: return [](const uint8_t* p, int64_t i) -> int64_t { return LoadRaw<int8_t>(p, i); };
    case 16: return [](const uint8_t* p, int64_t i) -> int64_t { return LoadRaw<int16_t>(p, i); };
    case 32: return [](const uint8_t* p, int64_t i) -> int64_t { return LoadRaw<int32_t>(p, i); };
    default: return [](const uint8_t* p, int64_t i) { return LoadRaw<int64_t>(p, i); };
  }
}

void WriteFloat(DataType t, uint8_t* p, int64_t i, double v) {
  if (t.is_bfloat16()) return StoreRaw<uint16_t>(p, i, DoubleToBFloat16Bits(v));
  switch (t.bits) {
    case 16: StoreRaw<uint16_t>(p, i, DoubleToHalfBits(v)); break;
    case 32: StoreRaw<float>(p, i, static_cast<float>(v)); break;
    default: StoreRaw<double>(p, i, v); break;
  }
}

void WriteInt(DataType t, uint8_t* p, int64_t i, int64_t v) {
  v = WrapToType(t, v);
  switch (t.bytes()) {
    case 1: p[i] = static_cast<uint8_t>(v); break;
    case 2: StoreRaw<int16_t>(p, i, static_cast<int16_t>(v)); break;
    case 4: StoreRaw<int32_t>(p, i, static_cast<int32_t>(v)); break;
    default: StoreRaw<int64_t>(p, i, v); break;
  }
}

std::string ShapeStr(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

// ---- compiled code ----

union Slot {
  int64_t i;
  double f;
};
using IntFn = std::function<int64_t(Slot*)>;
using FloatFn = std::function<double(Slot*)>;

// A compiled expression: `f` for float dtypes, `i` for integers and bool.
struct Code {
  DataType dtype;
  IntFn i;
  FloatFn f;
  bool is_float() const { return dtype.is_float(); }
};

Code IntCode(DataType t, IntFn fn) { return Code{t, std::move(fn), nullptr}; }
Code FloatCode(DataType t, FloatFn fn) { return Code{t, nullptr, std::move(fn)}; }

// Memory of one op's tensor, row-major.
struct TensorStore {
  const TensorNode* tensor = nullptr;
  uint8_t* data = nullptr;
  std::vector<uint8_t> owned;
  std::vector<int64_t> strides;
  // On-demand mode only: computed[flat] != 0 once that element holds its value.
  std::vector<uint8_t> computed;
};

class Evaluator;

// Turns one op's body into closures; see the roadmap above.
class BodyCompiler {
 public:
  BodyCompiler(Evaluator* ev, const TensorNode* op) : ev_(ev), op_(op) {
    for (const IterVar& iv : op->axis) BindSlot(iv.var_node());
  }
  Code Compile(const Expr& e);
  int num_slots() const { return num_slots_; }

 private:
  int BindSlot(const VarNode* v) {
    slots_[v] = num_slots_;
    return num_slots_++;
  }
  Code CompileVar(const VarNode* n);
  Code CompileBinary(const BinaryNode* n);
  Code CompileIntBinary(BinOp op, DataType t, IntFn a, IntFn b);
  Code CompileFloatBinary(BinOp op, DataType t, FloatFn a, FloatFn b);
  Code CompileCast(const CastNode* n);
  Code CompileCall(const CallNode* n);
  Code CompileLoad(const TensorLoadNode* n);
  Code CompileReduce(const ReduceNode* n);
  Code CompileSelect(const SelectNode* n);

  Evaluator* ev_;
  const TensorNode* op_;
  std::unordered_map<const VarNode*, int> slots_;
  int num_slots_ = 0;
};

// One op's compiled body and its frame.
struct OpProgram {
  Code body;
  std::vector<Slot> frame;
};

class Evaluator {
 public:
  Evaluator(const ComputeDAG& dag, const std::vector<HostTensor>& args, bool on_demand);
  void MaterializeAll();
  // Value of op `op` at a full index (checked against its shape).
  double ValueAt(int op, const std::vector<int64_t>& index);

  // Used by compiled loads.
  TensorStore* store(const TensorNode* t);
  void EnsureComputed(TensorStore* s, int64_t flat) {
    if (!s->computed.empty() && !s->computed[flat]) ComputeElement(op_of_store(s), flat);
  }

 private:
  int op_of_store(const TensorStore* s) const { return static_cast<int>(s - stores_.data()); }
  void CheckArgs(const std::vector<HostTensor>& args, bool on_demand) const;
  void ComputeElement(int op, int64_t flat);
  void StoreValue(int op, int64_t flat);

  const ComputeDAG& dag_;
  bool on_demand_;
  std::vector<TensorStore> stores_;  // parallel to dag.ops()
  std::vector<OpProgram> programs_;  // parallel to dag.ops(); empty bodies for placeholders
  std::unordered_map<const TensorNode*, int> op_index_;
};

// ---- BodyCompiler ----

Code BodyCompiler::Compile(const Expr& e) {
  AS_CHECK(e.defined(), "compute '" << op_->name << "' has an undefined expression");
  AS_CHECK(e.dtype().is_scalar(), "compute '" << op_->name << "': the reference evaluator takes scalar "
                                              << "expressions only, got " << e.dtype().str());
  switch (e.kind()) {
    case ExprKind::IntImm: {
      int64_t v = e.as<IntImmNode>()->value;
      return IntCode(e.dtype(), [v](Slot*) { return v; });
    }
    case ExprKind::FloatImm: {
      // A bfloat16 immediate is a float32 value until stored (ir/expr.h).
      const DataType precision = e.dtype().is_bfloat16() ? DataType::Float(32) : e.dtype();
      double v = RoundToFloatType(precision, e.as<FloatImmNode>()->value);
      return FloatCode(e.dtype(), [v](Slot*) { return v; });
    }
    case ExprKind::Var: return CompileVar(e.as<VarNode>());
    case ExprKind::Binary: return CompileBinary(e.as<BinaryNode>());
    case ExprKind::Not: {
      IntFn a = Compile(e.as<NotNode>()->a).i;
      return IntCode(e.dtype(), [a](Slot* s) -> int64_t { return !a(s); });
    }
    case ExprKind::Select: return CompileSelect(e.as<SelectNode>());
    case ExprKind::Cast: return CompileCast(e.as<CastNode>());
    case ExprKind::Call: return CompileCall(e.as<CallNode>());
    case ExprKind::TensorLoad: return CompileLoad(e.as<TensorLoadNode>());
    case ExprKind::Reduce: return CompileReduce(e.as<ReduceNode>());
    default: break;
  }
  AS_CHECK(false, "compute '" << op_->name << "': the reference evaluator does not take lowered-code "
                              << "expressions (buffer loads, ramps, broadcasts, lets)");
  return {};
}

Code BodyCompiler::CompileVar(const VarNode* n) {
  auto it = slots_.find(n);
  AS_CHECK(it != slots_.end(), "compute '" << op_->name << "' uses unbound variable '" << n->name << "'");
  int slot = it->second;
  if (n->dtype.is_float()) return FloatCode(n->dtype, [slot](Slot* s) { return s[slot].f; });
  return IntCode(n->dtype, [slot](Slot* s) { return s[slot].i; });
}

Code BodyCompiler::CompileSelect(const SelectNode* n) {
  // Eager: both branches are evaluated, as generated code may do.
  IntFn c = Compile(n->condition).i;
  Code t = Compile(n->true_value), f = Compile(n->false_value);
  if (t.is_float()) {
    return FloatCode(n->dtype, [c, tf = t.f, ff = f.f](Slot* s) {
      bool cond = c(s);
      double x = tf(s), y = ff(s);
      return cond ? x : y;
    });
  }
  return IntCode(n->dtype, [c, ti = t.i, fi = f.i](Slot* s) {
    bool cond = c(s);
    int64_t x = ti(s), y = fi(s);
    return cond ? x : y;
  });
}

// The comparisons of the IR on two values of one type.
template <typename T>
int64_t Compare(BinOp op, T x, T y) {
  switch (op) {
    case BinOp::EQ: return x == y;
    case BinOp::NE: return x != y;
    case BinOp::LT: return x < y;
    case BinOp::LE: return x <= y;
    case BinOp::GT: return x > y;
    default: return x >= y;
  }
}

Code BodyCompiler::CompileBinary(const BinaryNode* n) {
  Code a = Compile(n->a), b = Compile(n->b);
  if (IsComparison(n->op)) {
    if (a.is_float()) {
      return IntCode(n->dtype,
                     [op = n->op, af = a.f, bf = b.f](Slot* s) { return Compare(op, af(s), bf(s)); });
    }
    return IntCode(n->dtype, [op = n->op, ai = a.i, bi = b.i](Slot* s) { return Compare(op, ai(s), bi(s)); });
  }
  if (a.is_float()) return CompileFloatBinary(n->op, n->dtype, a.f, b.f);
  return CompileIntBinary(n->op, n->dtype, a.i, b.i);
}

int64_t FloorDivInt(int64_t a, int64_t b) {
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));  // no overflow trap
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Code BodyCompiler::CompileIntBinary(BinOp op, DataType t, IntFn a, IntFn b) {
  // Integer division and remainder by 0 give 0 (docs/ir.md), as generated code does.
  auto arith = [op](int64_t x, int64_t y) -> int64_t {
    uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    const bool divides =
        op == BinOp::Div || op == BinOp::Mod || op == BinOp::FloorDiv || op == BinOp::FloorMod;
    if (divides && y == 0) return 0;
    // Arithmetic in uint64 wraps without undefined behaviour; WrapToType narrows.
    switch (op) {
      case BinOp::Add: return static_cast<int64_t>(ux + uy);
      case BinOp::Sub: return static_cast<int64_t>(ux - uy);
      case BinOp::Mul: return static_cast<int64_t>(ux * uy);
      case BinOp::Div: return y == -1 ? static_cast<int64_t>(0 - ux) : x / y;
      case BinOp::Mod: return y == -1 ? 0 : x % y;
      case BinOp::FloorDiv: return FloorDivInt(x, y);
      case BinOp::FloorMod: return static_cast<int64_t>(ux - static_cast<uint64_t>(FloorDivInt(x, y)) * uy);
      case BinOp::Min: return x < y ? x : y;
      case BinOp::Max: return x > y ? x : y;
      case BinOp::And: return x && y;
      case BinOp::Or: return x || y;
      default: return 0;
    }
  };
  return IntCode(t, [arith, t, a = std::move(a), b = std::move(b)](Slot* s) {
    int64_t x = a(s);  // both operands always evaluated, left first
    int64_t y = b(s);
    return WrapToType(t, arith(x, y));
  });
}

Code BodyCompiler::CompileFloatBinary(BinOp op, DataType t, FloatFn a, FloatFn b) {
  auto arith = [op](double x, double y) -> double {
    switch (op) {
      case BinOp::Add: return x + y;
      case BinOp::Sub: return x - y;
      case BinOp::Mul: return x * y;
      case BinOp::Div: return x / y;
      case BinOp::Mod: return std::fmod(x, y);
      case BinOp::FloorDiv: return std::floor(x / y);
      case BinOp::FloorMod: return x - std::floor(x / y) * y;
      case BinOp::Min: return std::isnan(x) || std::isnan(y) ? x + y : (x < y ? x : y);
      case BinOp::Max: return std::isnan(x) || std::isnan(y) ? x + y : (x > y ? x : y);
      default: return 0;
    }
  };
  return FloatCode(t, [arith, a = std::move(a), b = std::move(b)](Slot* s) {
    double x = a(s);
    double y = b(s);
    return arith(x, y);
  });
}

int64_t FloatToInt(DataType t, double v) {
  if (t.is_bool()) return v != 0;
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  if (v >= 9223372036854775807.0) return WrapToType(t, std::numeric_limits<int64_t>::max());
  if (v <= -9223372036854775808.0) return WrapToType(t, std::numeric_limits<int64_t>::min());
  return WrapToType(t, static_cast<int64_t>(v));
}

Code BodyCompiler::CompileCast(const CastNode* n) {
  Code v = Compile(n->value);
  DataType t = n->dtype;
  if (t.is_float()) {
    if (v.is_float()) return FloatCode(t, [t, f = v.f](Slot* s) { return RoundToFloatType(t, f(s)); });
    return FloatCode(t, [t, i = v.i](Slot* s) { return RoundToFloatType(t, static_cast<double>(i(s))); });
  }
  if (v.is_float()) return IntCode(t, [t, f = v.f](Slot* s) { return FloatToInt(t, f(s)); });
  return IntCode(t, [t, i = v.i](Slot* s) { return WrapToType(t, i(s)); });
}

Code BodyCompiler::CompileCall(const CallNode* n) {
  if (n->op == Intrinsic::IfThenElse) {
    // Lazy: only the chosen branch runs (guards out-of-bounds loads).
    IntFn c = Compile(n->args[0]).i;
    Code t = Compile(n->args[1]), f = Compile(n->args[2]);
    if (t.is_float()) {
      return FloatCode(n->dtype, [c, tf = t.f, ff = f.f](Slot* s) { return c(s) ? tf(s) : ff(s); });
    }
    return IntCode(n->dtype, [c, ti = t.i, fi = f.i](Slot* s) { return c(s) ? ti(s) : fi(s); });
  }
  Code x = Compile(n->args[0]);
  if (!x.is_float()) {  // fabs of an integer (the only integer intrinsic)
    DataType t = n->dtype;
    return IntCode(t, [t, i = x.i](Slot* s) {
      int64_t v = i(s);
      return WrapToType(t, v < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(v)) : v);
    });
  }
  if (n->op == Intrinsic::Pow) {
    FloatFn y = Compile(n->args[1]).f;
    return FloatCode(n->dtype, [f = x.f, y](Slot* s) {
      double base = f(s);
      return std::pow(base, y(s));
    });
  }
  double (*fn)(double) = nullptr;
  switch (n->op) {
    case Intrinsic::Exp: fn = [](double v) { return std::exp(v); }; break;
    case Intrinsic::Log: fn = [](double v) { return std::log(v); }; break;
    case Intrinsic::Sqrt: fn = [](double v) { return std::sqrt(v); }; break;
    case Intrinsic::Rsqrt: fn = [](double v) { return 1.0 / std::sqrt(v); }; break;
    case Intrinsic::Tanh: fn = [](double v) { return std::tanh(v); }; break;
    case Intrinsic::Sigmoid: fn = [](double v) { return 1.0 / (1.0 + std::exp(-v)); }; break;
    case Intrinsic::Erf: fn = [](double v) { return std::erf(v); }; break;
    case Intrinsic::Fabs: fn = [](double v) { return std::fabs(v); }; break;
    case Intrinsic::Floor: fn = [](double v) { return std::floor(v); }; break;
    case Intrinsic::Ceil: fn = [](double v) { return std::ceil(v); }; break;
    case Intrinsic::Round: fn = [](double v) { return std::round(v); }; break;          // half away from zero
    case Intrinsic::RoundEven: fn = [](double v) { return std::nearbyint(v); }; break;  // half to even
    default: AS_CHECK(false, "intrinsic " << IntrinsicName(n->op) << " is not supported by the evaluator");
  }
  return FloatCode(n->dtype, [fn, f = x.f](Slot* s) { return fn(f(s)); });
}

// One index of a load: `slot + offset` (slot -1: a constant) when the index is
// that simple, which keeps the common loads free of closure calls; otherwise
// a compiled expression.
struct LoadIndex {
  int slot = -1;
  int64_t offset = 0;
  IntFn general;
  int64_t operator()(Slot* s) const {
    if (general) return general(s);
    return (slot >= 0 ? s[slot].i : 0) + offset;
  }
};

struct LoadSite {
  Evaluator* ev;
  TensorStore* store;
  std::vector<LoadIndex> indices;
  std::string reader;  // the op whose body loads, for error messages

  // Evaluates the indices, checks bounds, and makes sure the element exists.
  int64_t Offset(Slot* s) const {
    const std::vector<int64_t>& shape = store->tensor->shape;
    int64_t flat = 0;
    for (size_t d = 0; d < indices.size(); ++d) {
      int64_t i = indices[d](s);
      if (i < 0 || i >= shape[d]) ReportOutOfBounds(s);
      flat += i * store->strides[d];
    }
    ev->EnsureComputed(store, flat);
    return flat;
  }
  [[noreturn]] void ReportOutOfBounds(Slot* s) const {
    std::vector<int64_t> full;
    for (const LoadIndex& idx : indices) full.push_back(idx(s));
    throw Error("out-of-bounds load of tensor '" + store->tensor->name + "' at index " + ShapeStr(full) +
                " (shape " + ShapeStr(store->tensor->shape) + ") in compute '" + reader + "'");
  }
};

Code BodyCompiler::CompileLoad(const TensorLoadNode* n) {
  TensorStore* store = ev_->store(n->tensor.get());
  AS_CHECK(store != nullptr, "compute '" << op_->name << "' reads tensor '" << n->tensor->name
                                         << "', which is not part of the DAG");
  auto site = std::make_shared<LoadSite>(LoadSite{ev_, store, {}, op_->name});
  for (const Expr& idx : n->indices) {
    LoadIndex li;
    // An int64 index converted to int32 (TensorLoadNode::make) is checked
    // against the bounds at its own width: a value past int32 is out of
    // bounds, not wrapped into them.
    const auto* conversion = idx.as<CastNode>();
    if (conversion && conversion->value.dtype().is_integer() && conversion->value.dtype().bits > 32) {
      site->indices.push_back(LoadIndex{-1, 0, Compile(conversion->value).i});
      continue;
    }
    Expr var = idx;
    if (const auto* bin = idx.as<BinaryNode>()) {
      int64_t c = 0;
      if ((bin->op == BinOp::Add || bin->op == BinOp::Sub) && bin->a.as<VarNode>() &&
          GetConstInt(bin->b, &c)) {
        var = bin->a;
        li.offset = bin->op == BinOp::Add ? c : -c;
      }
    }
    auto it = var.as<VarNode>() ? slots_.find(var.as<VarNode>()) : slots_.end();
    // Narrow index types and large offsets could wrap: those take the general path.
    bool cannot_wrap =
        idx.dtype().bits >= 32 && li.offset > -(int64_t{1} << 30) && li.offset < (int64_t{1} << 30);
    if (it != slots_.end() && cannot_wrap) {
      li.slot = it->second;
    } else if (!GetConstInt(idx, &li.offset)) {
      li = LoadIndex{-1, 0, Compile(idx).i};
    }
    site->indices.push_back(std::move(li));
  }
  DataType t = n->tensor->dtype;
  if (t.is_float()) {
    FloatReader read = FloatReaderFor(t);
    return FloatCode(t, [site, read](Slot* s) { return read(site->store->data, site->Offset(s)); });
  }
  IntReader read = IntReaderFor(t);
  return IntCode(t, [site, read](Slot* s) { return read(site->store->data, site->Offset(s)); });
}

template <typename T, typename Combine>
std::function<T(Slot*)> ReduceLoop(std::vector<IterVar> axes, std::vector<int> slots, T identity,
                                   std::function<T(Slot*)> source, IntFn condition, Combine combine) {
  return [=](Slot* s) {
    T acc = identity;
    size_t n = axes.size();
    for (size_t d = 0; d < n; ++d) s[slots[d]].i = axes[d].min;
    while (true) {
      if (!condition || condition(s)) acc = combine(acc, source(s));
      // Odometer step: the last axis runs fastest.
      size_t d = n;
      while (d > 0) {
        --d;
        if (++s[slots[d]].i < axes[d].min + axes[d].extent) break;
        s[slots[d]].i = axes[d].min;
        if (d == 0) return acc;
      }
    }
  };
}

Code BodyCompiler::CompileReduce(const ReduceNode* n) {
  std::vector<int> slots;
  for (const IterVar& iv : n->axis) slots.push_back(BindSlot(iv.var_node()));
  Code source = Compile(n->source);
  IntFn condition = n->condition.defined() ? Compile(n->condition).i : nullptr;
  const DataType t = n->dtype, acc_t = n->acc_dtype;
  Combiner c = n->combiner;
  if (t.is_float()) {
    double identity = n->identity().as<FloatImmNode>()->value;
    // The accumulator is a double; a float16 / bfloat16 accumulator is
    // rounded to its type after every step, as generated code stores it.
    const bool round_each_step = acc_t.bits < 32;
    auto combine = [c, acc_t, round_each_step](double acc, double v) {
      double r;
      switch (c) {
        case Combiner::Sum: r = acc + v; break;
        case Combiner::Prod: r = acc * v; break;
        case Combiner::Max: r = std::isnan(acc) || std::isnan(v) ? acc + v : (v > acc ? v : acc); break;
        default: r = std::isnan(acc) || std::isnan(v) ? acc + v : (v < acc ? v : acc); break;
      }
      return round_each_step ? RoundToFloatType(acc_t, r) : r;
    };
    FloatFn loop = ReduceLoop<double>(n->axis, slots, identity, source.f, condition, combine);
    // One rounding to the result type at the end (source values convert to
    // the accumulation type exactly: it is never narrower).
    return FloatCode(t, [t, loop](Slot* s) { return RoundToFloatType(t, loop(s)); });
  }
  int64_t identity = n->identity().as<IntImmNode>()->value;
  auto combine = [c, t](int64_t acc, int64_t v) {
    uint64_t ua = static_cast<uint64_t>(acc), uv = static_cast<uint64_t>(v);
    switch (c) {
      case Combiner::Sum: return WrapToType(t, static_cast<int64_t>(ua + uv));
      case Combiner::Prod: return WrapToType(t, static_cast<int64_t>(ua * uv));
      case Combiner::Max: return v > acc ? v : acc;
      default: return v < acc ? v : acc;
    }
  };
  return IntCode(t, ReduceLoop<int64_t>(n->axis, slots, identity, source.i, condition, combine));
}

// ---- Evaluator ----

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d > 1; --d) strides[d - 2] = strides[d - 1] * shape[d - 1];
  return strides;
}

void Evaluator::CheckArgs(const std::vector<HostTensor>& args, bool on_demand) const {
  const std::vector<Tensor>& tensors = dag_.tensors();
  AS_CHECK(args.size() == tensors.size(),
           "the DAG takes " << tensors.size() << " arguments, got " << args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorNode* t = tensors[i].get();
    const HostTensor& a = args[i];
    AS_CHECK(a.shape == t->shape, "argument " << i << " ('" << t->name << "') has shape " << ShapeStr(a.shape)
                                              << ", expected " << ShapeStr(t->shape));
    AS_TYPE_CHECK(a.dtype == t->dtype, "argument " << i << " ('" << t->name << "') has dtype "
                                                   << a.dtype.str() << ", expected " << t->dtype.str());
    bool needed = t->is_placeholder() || !on_demand;
    AS_CHECK(a.data != nullptr || !needed, "argument " << i << " ('" << t->name << "') has no data");
  }
}

Evaluator::Evaluator(const ComputeDAG& dag, const std::vector<HostTensor>& args, bool on_demand)
    : dag_(dag), on_demand_(on_demand) {
  CheckArgs(args, on_demand);
  const std::vector<Tensor>& ops = dag.ops();
  stores_.resize(ops.size());  // never resized again: compiled loads keep pointers into it
  programs_.resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) op_index_[ops[i].get()] = static_cast<int>(i);
  for (size_t i = 0; i < ops.size(); ++i) {
    TensorStore& s = stores_[i];
    s.tensor = ops[i].get();
    s.strides = RowMajorStrides(s.tensor->shape);
    for (size_t a = 0; a < args.size(); ++a) {
      bool use_caller_memory = s.tensor->is_placeholder() || !on_demand;
      if (dag.tensors()[a].get() == s.tensor && use_caller_memory)
        s.data = static_cast<uint8_t*>(args[a].data);
    }
    AS_CHECK(s.data != nullptr || s.tensor->is_compute(),
             "placeholder '" << s.tensor->name << "' is not among the DAG's arguments");
    if (s.data == nullptr) {
      s.owned.assign(static_cast<size_t>(s.tensor->num_elements() * s.tensor->dtype.bytes()), 0);
      s.data = s.owned.data();
    }
    if (on_demand && s.tensor->is_compute()) s.computed.assign(s.tensor->num_elements(), 0);
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i]->is_compute()) continue;
    BodyCompiler compiler(this, ops[i].get());
    programs_[i].body = compiler.Compile(ops[i]->body);
    programs_[i].frame.assign(compiler.num_slots(), Slot{0});
  }
}

TensorStore* Evaluator::store(const TensorNode* t) {
  auto it = op_index_.find(t);
  return it == op_index_.end() ? nullptr : &stores_[it->second];
}

void Evaluator::StoreValue(int op, int64_t flat) {
  OpProgram& p = programs_[op];
  TensorStore& s = stores_[op];
  Slot* frame = p.frame.data();
  if (p.body.is_float()) {
    WriteFloat(s.tensor->dtype, s.data, flat, p.body.f(frame));
  } else {
    WriteInt(s.tensor->dtype, s.data, flat, p.body.i(frame));
  }
}

void Evaluator::ComputeElement(int op, int64_t flat) {
  // An op never reads itself, so its frame is free while its loads recurse
  // into producers.
  TensorStore& s = stores_[op];
  Slot* frame = programs_[op].frame.data();
  int64_t rest = flat;
  for (size_t d = 0; d < s.strides.size(); ++d) {
    frame[d].i = rest / s.strides[d];
    rest %= s.strides[d];
  }
  StoreValue(op, flat);
  s.computed[flat] = 1;
}

void Evaluator::MaterializeAll() {
  for (size_t op = 0; op < stores_.size(); ++op) {
    const TensorNode* t = stores_[op].tensor;
    if (!t->is_compute()) continue;
    Slot* frame = programs_[op].frame.data();
    size_t rank = t->shape.size();
    for (size_t d = 0; d < rank; ++d) frame[d].i = 0;
    int64_t total = t->num_elements();
    for (int64_t flat = 0; flat < total; ++flat) {
      StoreValue(static_cast<int>(op), flat);
      for (size_t d = rank; d > 0; --d) {  // next index, row-major
        if (++frame[d - 1].i < t->shape[d - 1]) break;
        frame[d - 1].i = 0;
      }
    }
  }
}

double Evaluator::ValueAt(int op, const std::vector<int64_t>& index) {
  TensorStore& s = stores_[op];
  const std::vector<int64_t>& shape = s.tensor->shape;
  AS_CHECK(index.size() == shape.size(), "point " << ShapeStr(index) << " has " << index.size()
                                                  << " indices, tensor '" << s.tensor->name << "' has rank "
                                                  << shape.size());
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    AS_CHECK(index[d] >= 0 && index[d] < shape[d], "point " << ShapeStr(index) << " is outside tensor '"
                                                            << s.tensor->name << "' of shape "
                                                            << ShapeStr(shape));
    flat += index[d] * s.strides[d];
  }
  EnsureComputed(&s, flat);
  DataType t = s.tensor->dtype;
  if (t.is_float()) return FloatReaderFor(t)(s.data, flat);
  return static_cast<double>(IntReaderFor(t)(s.data, flat));
}

}  // namespace

void EvaluateReference(const ComputeDAG& dag, const std::vector<HostTensor>& args) {
  Evaluator ev(dag, args, /*on_demand=*/false);
  ev.MaterializeAll();
}

std::vector<double> EvaluateReferencePoints(const ComputeDAG& dag, const std::vector<HostTensor>& args,
                                            int arg_index, const std::vector<std::vector<int64_t>>& points) {
  AS_CHECK(arg_index >= 0 && arg_index < static_cast<int>(dag.tensors().size()),
           "argument index " << arg_index << " is out of range (the DAG has " << dag.tensors().size()
                             << " arguments)");
  Evaluator ev(dag, args, /*on_demand=*/true);
  int op = dag.OpIndex(dag.tensors()[arg_index].get());
  AS_ICHECK(op >= 0);
  std::vector<double> values;
  values.reserve(points.size());
  for (const std::vector<int64_t>& p : points) values.push_back(ev.ValueAt(op, p));
  return values;
}

}  // namespace autosched
