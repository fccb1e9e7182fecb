// Interval analysis. Bounds are computed in 128-bit arithmetic where an
// unknown side is +-kInf; a node whose exact bounds leave its dtype's range
// (so the real value may wrap) gets the whole range of its dtype.
#include "ir/interval.h"

#include <algorithm>
#include <limits>

#include "support/error.h"

namespace autosched {

namespace {

using Wide = __int128;
constexpr Wide kInf = static_cast<Wide>(1) << 100;

struct Bounds {
  Wide lo, hi;
};

Wide Clamp(Wide v) { return std::clamp(v, -kInf, kInf); }

Bounds FromInterval(const Interval& i) {
  return {i.has_lower() ? Wide{i.min} : -kInf, i.has_upper() ? Wide{i.max} : kInf};
}

Bounds TypeRange(DataType t) {
  if (t.is_bool()) return {0, 1};
  if (!t.is_integer()) return {-kInf, kInf};
  if (t.bits >= 64) return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  if (t.is_uint()) return {0, (Wide{1} << t.bits) - 1};
  return {-(Wide{1} << (t.bits - 1)), (Wide{1} << (t.bits - 1)) - 1};
}

// Products where one factor is infinite: 0 * inf = 0 (inf stands for "unbounded", never attained).
Wide Mul(Wide a, Wide b) {
  if (a == 0 || b == 0) return 0;
  if (a == kInf || a == -kInf || b == kInf || b == -kInf) return (a > 0) == (b > 0) ? kInf : -kInf;
  return Clamp(a * b);
}

bool IsInf(Wide v) { return v == kInf || v == -kInf; }

// Division of interval corners; b != 0. Infinite operands give the limit.
Wide Divide(Wide a, Wide b, bool floor) {
  if (IsInf(a)) return (a > 0) == (b > 0) ? kInf : -kInf;
  if (IsInf(b)) {
    // a / (+-huge): 0, or -1 when flooring a quotient that is negative.
    bool negative = a != 0 && ((a > 0) != (b > 0));
    return floor && negative ? -1 : 0;
  }
  Wide q = a / b;
  if (floor && (a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}

Bounds Hull(std::initializer_list<Wide> values) { return {std::min(values), std::max(values)}; }

Bounds DivBounds(Bounds a, Bounds b, bool floor, DataType t) {
  if (b.lo <= 0 && b.hi >= 0) return TypeRange(t);  // may divide by zero
  return Hull({Divide(a.lo, b.lo, floor), Divide(a.lo, b.hi, floor), Divide(a.hi, b.lo, floor),
               Divide(a.hi, b.hi, floor)});
}

Bounds FloorModBounds(Bounds a, Bounds b, DataType t) {
  if (b.lo <= 0 && b.hi >= 0) return TypeRange(t);
  if (b.lo > 0) {
    // Within one period of a constant divisor the result is a shifted copy of a.
    if (b.lo == b.hi && !IsInf(a.lo) && !IsInf(a.hi) &&
        Divide(a.lo, b.lo, true) == Divide(a.hi, b.lo, true)) {
      Wide shift = Divide(a.lo, b.lo, true) * b.lo;
      return {a.lo - shift, a.hi - shift};
    }
    if (a.lo >= 0 && a.hi < b.lo) return a;
    return {0, b.hi == kInf ? kInf : b.hi - 1};
  }
  return {b.lo == -kInf ? -kInf : b.lo + 1, 0};
}

Bounds TruncModBounds(Bounds a, Bounds b, DataType t) {
  if (b.lo <= 0 && b.hi >= 0) return TypeRange(t);
  Wide m = std::max(b.hi < 0 ? -b.lo : b.hi, b.lo > 0 ? b.lo : -b.hi);  // largest |b|
  Wide bound = IsInf(m) ? kInf : m - 1;
  if (a.lo >= 0) return {0, std::min(a.hi, bound)};
  if (a.hi <= 0) return {std::max(a.lo, -bound), 0};
  return {std::max(a.lo, -bound), std::min(a.hi, bound)};
}

Interval ToInterval(Bounds b) {
  Interval r;
  if (b.lo > std::numeric_limits<int64_t>::min() && b.lo <= std::numeric_limits<int64_t>::max()) {
    r.min = static_cast<int64_t>(b.lo);
  }
  if (b.hi < std::numeric_limits<int64_t>::max() && b.hi >= std::numeric_limits<int64_t>::min()) {
    r.max = static_cast<int64_t>(b.hi);
  }
  return r;
}

class IntervalEval {
 public:
  explicit IntervalEval(const VarRanges& ranges) : ranges_(ranges) {}

  Bounds Eval(const Expr& e) {
    DataType t = e.dtype();
    if (t.is_float()) return {-kInf, kInf};
    Bounds r = EvalNode(e);
    Bounds range = TypeRange(t);
    if (r.lo < range.lo || r.hi > range.hi) return range;  // may wrap around
    return r;
  }

 private:
  Bounds EvalNode(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::IntImm: {
        Wide v = e.as<IntImmNode>()->value;
        return {v, v};
      }
      case ExprKind::Var: {
        auto it = ranges_.find(e.as<VarNode>());
        return it == ranges_.end() ? TypeRange(e.dtype()) : FromInterval(it->second);
      }
      case ExprKind::Binary: return EvalBinary(e.as<BinaryNode>());
      case ExprKind::Not: {
        Bounds a = Eval(e.as<NotNode>()->a);
        return {1 - a.hi, 1 - a.lo};
      }
      case ExprKind::Select: {
        const auto* n = e.as<SelectNode>();
        return Choose(Eval(n->condition), n->true_value, n->false_value);
      }
      case ExprKind::Cast: {
        const Expr& v = e.as<CastNode>()->value;
        if (e.dtype().is_bool()) {
          Bounds a = Eval(v);
          if (v.dtype().is_float()) return {0, 1};
          if (a.lo > 0 || a.hi < 0) return {1, 1};
          return a.lo == 0 && a.hi == 0 ? Bounds{0, 0} : Bounds{0, 1};
        }
        if (v.dtype().is_float()) return TypeRange(e.dtype());
        return Eval(v);  // out of range -> the caller widens to the type's range
      }
      case ExprKind::Call: {
        const auto* n = e.as<CallNode>();
        if (n->op == Intrinsic::IfThenElse) return Choose(Eval(n->args[0]), n->args[1], n->args[2]);
        if (n->op == Intrinsic::Fabs) {
          Bounds a = Eval(n->args[0]);
          if (a.lo >= 0) return a;
          if (a.hi <= 0) return {-a.hi, -a.lo};
          return {0, std::max(-a.lo, a.hi)};
        }
        return TypeRange(e.dtype());
      }
      case ExprKind::Ramp: {
        const auto* n = e.as<RampNode>();
        Bounds base = Eval(n->base);
        Wide span = Wide{n->stride} * (n->lanes - 1);
        return {base.lo + std::min<Wide>(span, 0), base.hi + std::max<Wide>(span, 0)};
      }
      case ExprKind::Broadcast: return Eval(e.as<BroadcastNode>()->value);
      case ExprKind::Let: {
        const auto* n = e.as<LetNode>();
        Bounds v = Eval(n->value);
        VarRanges inner = ranges_;
        inner[n->var.as<VarNode>()] = ToInterval(v);
        return IntervalEval(inner).Eval(n->body);
      }
      default: return TypeRange(e.dtype());  // loads, reductions: unknown values
    }
  }

  Bounds Choose(Bounds cond, const Expr& t, const Expr& f) {
    if (cond.lo >= 1) return Eval(t);
    if (cond.hi <= 0) return Eval(f);
    Bounds a = Eval(t), b = Eval(f);
    return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
  }

  Bounds EvalBinary(const BinaryNode* n) {
    if (IsComparison(n->op) && n->a.dtype().is_float()) return {0, 1};
    Bounds a = Eval(n->a), b = Eval(n->b);
    DataType t = n->dtype;
    switch (n->op) {
      case BinOp::Add: return {Clamp(a.lo + b.lo), Clamp(a.hi + b.hi)};
      case BinOp::Sub: return {Clamp(a.lo - b.hi), Clamp(a.hi - b.lo)};
      case BinOp::Mul: return Hull({Mul(a.lo, b.lo), Mul(a.lo, b.hi), Mul(a.hi, b.lo), Mul(a.hi, b.hi)});
      case BinOp::Div: return DivBounds(a, b, false, t);
      case BinOp::FloorDiv: return DivBounds(a, b, true, t);
      case BinOp::Mod: return TruncModBounds(a, b, t);
      case BinOp::FloorMod: return FloorModBounds(a, b, t);
      case BinOp::Min: return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
      case BinOp::Max: return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
      case BinOp::LT: return Decide(a.hi < b.lo, a.lo >= b.hi);
      case BinOp::LE: return Decide(a.hi <= b.lo, a.lo > b.hi);
      case BinOp::GT: return Decide(a.lo > b.hi, a.hi <= b.lo);
      case BinOp::GE: return Decide(a.lo >= b.hi, a.hi < b.lo);
      case BinOp::EQ: return Decide(a.lo == a.hi && b.lo == b.hi && a.lo == b.lo, a.hi < b.lo || b.hi < a.lo);
      case BinOp::NE: return Decide(a.hi < b.lo || b.hi < a.lo, a.lo == a.hi && b.lo == b.hi && a.lo == b.lo);
      case BinOp::And: return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
      case BinOp::Or: return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    return TypeRange(t);
  }

  static Bounds Decide(bool always, bool never) {
    return always ? Bounds{1, 1} : never ? Bounds{0, 0} : Bounds{0, 1};
  }

  const VarRanges& ranges_;
};

}  // namespace

Interval EvalInterval(const Expr& e, const VarRanges& ranges) {
  AS_CHECK(e.defined(), "EvalInterval of an undefined expression");
  return ToInterval(IntervalEval(ranges).Eval(e));
}

}  // namespace autosched
