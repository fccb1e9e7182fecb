// Simplifier roadmap
//  - Simplifier (an ExprMutator) rewrites bottom-up; it keeps the ranges of
//    the variables in scope (the caller's, plus reduce axes and lets).
//  - Folding (FoldBinary, FoldCast) evaluates operations on immediates with
//    the IR's semantics: integers wrap, floordiv rounds down, float32 results
//    are rounded to float32; anything not exactly reproducible (float16,
//    division by zero, NaN in min/max) is left alone.
//  - Integer +, -, * are a ring modulo 2^bits, so they are brought to a
//    LinearForm (sum of coefficient * atom + constant, coefficients wrapped)
//    and rebuilt in a canonical order (atoms sorted by printed form). This is
//    exact for every value, wraparound included.
//  - Integer casts narrowing int64 (index) arithmetic move down to the
//    operands of +, -, *, where casts that widen and narrow back cancel.
//  - Rules that reason about magnitudes (div/mod of linear forms, min/max,
//    comparisons) first check that the linear form cannot wrap for any value
//    in the ranges: its exact bounds, from interval analysis of the atoms, must
//    lie inside the dtype. Only then does the wrapped value equal the math.
#include "ir/simplify.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <utility>

#include "ir/functor.h"
#include "ir/printer.h"
#include "support/error.h"

namespace autosched {

namespace {

using Wide = __int128;

// ---- Exact identity of expressions (variables by node, not by name) ----

bool SameExpr(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined() || a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  switch (a.kind()) {
    case ExprKind::IntImm: return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
    case ExprKind::FloatImm: {
      double x = a.as<FloatImmNode>()->value, y = b.as<FloatImmNode>()->value;
      return x == y && std::signbit(x) == std::signbit(y);
    }
    case ExprKind::Var: return false;  // distinct nodes are distinct variables
    case ExprKind::Binary:
      if (a.as<BinaryNode>()->op != b.as<BinaryNode>()->op) return false;
      break;
    case ExprKind::Call:
      if (a.as<CallNode>()->op != b.as<CallNode>()->op) return false;
      break;
    case ExprKind::TensorLoad:
      if (a.as<TensorLoadNode>()->tensor != b.as<TensorLoadNode>()->tensor) return false;
      break;
    case ExprKind::Reduce:
      if (a.as<ReduceNode>()->combiner != b.as<ReduceNode>()->combiner) return false;
      if (a.as<ReduceNode>()->acc_dtype != b.as<ReduceNode>()->acc_dtype) return false;
      break;
    case ExprKind::BufferLoad:
      if (a.as<BufferLoadNode>()->buffer != b.as<BufferLoadNode>()->buffer) return false;
      break;
    case ExprKind::Ramp:
      if (a.as<RampNode>()->stride != b.as<RampNode>()->stride) return false;
      break;
    default: break;  // Not, Select, Cast, Broadcast (lanes are in the dtype), Let
  }
  std::vector<Expr> ka = Children(a), kb = Children(b);
  if (ka.size() != kb.size()) return false;
  for (size_t i = 0; i < ka.size(); ++i) {
    if (!SameExpr(ka[i], kb[i])) return false;
  }
  if (const auto* ra = a.as<ReduceNode>()) {
    const auto* rb = b.as<ReduceNode>();
    for (size_t i = 0; i < ra->axis.size(); ++i) {
      if (ra->axis[i].min != rb->axis[i].min || ra->axis[i].extent != rb->axis[i].extent) return false;
    }
  }
  return true;
}

// ---- Linear forms ----

struct Bounds {
  Wide lo, hi;
};

Bounds TypeBounds(DataType t) {
  if (t.is_uint()) return {0, (Wide{1} << t.bits) - 1};
  return {-(Wide{1} << (t.bits - 1)), (Wide{1} << (t.bits - 1)) - 1};
}

// Signed representative of v modulo 2^bits (uint8 255 -> -1), the form coefficients are kept in.
Wide Norm(DataType t, Wide v) {
  return WrapToType(DataType::Int(t.bits), static_cast<int64_t>(static_cast<uint64_t>(v)));
}

struct Term {
  Expr atom;
  std::string key;  // printed form: sort key and fast inequality test
  Wide coeff;
};

struct LinearForm {
  DataType dtype;
  std::vector<Term> terms;
  Wide constant = 0;

  bool is_const() const { return terms.empty(); }

  // this += k * other; `wrap` keeps the ring modulo 2^bits, otherwise exact integers.
  void AddScaled(const LinearForm& other, Wide k, bool wrap) {
    auto fix = [&](Wide v) { return wrap ? Norm(dtype, v) : v; };
    constant = fix(constant + fix(k * other.constant));
    for (const Term& t : other.terms) {
      Wide c = fix(k * t.coeff);
      auto it = std::find_if(terms.begin(), terms.end(),
                             [&](const Term& x) { return x.key == t.key && SameExpr(x.atom, t.atom); });
      if (it == terms.end()) {
        terms.push_back({t.atom, t.key, c});
      } else {
        it->coeff = fix(it->coeff + c);
      }
    }
    std::erase_if(terms, [](const Term& t) { return t.coeff == 0; });
  }
};

// The printed forms of the atoms met during one Simplify call. A sum's linear
// form is taken again at each level of the sum as it is rebuilt bottom-up,
// and printing its atoms was most of that. Each entry holds its expression,
// so no node's address is reused while the entry lives; the entries go when
// the outermost Simplify call returns.
struct AtomKeys {
  std::unordered_map<const ExprNode*, std::pair<Expr, std::string>> keys;
  int depth = 0;  // Simplify calls running on this thread
};
thread_local AtomKeys atom_keys;

class AtomKeyScope {
 public:
  AtomKeyScope() { ++atom_keys.depth; }
  ~AtomKeyScope() {
    if (--atom_keys.depth == 0) atom_keys.keys.clear();
  }
  AtomKeyScope(const AtomKeyScope&) = delete;
  AtomKeyScope& operator=(const AtomKeyScope&) = delete;
};

std::string AtomKey(const Expr& e) {
  if (const auto* var = e.as<VarNode>()) return var->name;  // a variable prints as its name
  if (atom_keys.depth == 0) return ToString(e);
  auto [it, fresh] = atom_keys.keys.try_emplace(e.get());
  if (fresh) it->second = {e, ToString(e)};
  return it->second.second;
}

LinearForm ToLinear(const Expr& e) {
  LinearForm f{e.dtype(), {}, 0};
  if (const auto* imm = e.as<IntImmNode>()) {
    f.constant = Norm(e.dtype(), imm->value);
    return f;
  }
  if (const auto* n = e.as<BinaryNode>()) {
    if (n->op == BinOp::Add || n->op == BinOp::Sub) {
      f = ToLinear(n->a);
      f.AddScaled(ToLinear(n->b), n->op == BinOp::Add ? 1 : -1, true);
      return f;
    }
    if (n->op == BinOp::Mul) {
      LinearForm a = ToLinear(n->a), b = ToLinear(n->b);
      if (a.is_const()) std::swap(a, b);
      if (b.is_const()) {
        f.AddScaled(a, b.constant, true);
        return f;
      }
    }
  }
  f.terms.push_back({e, AtomKey(e), 1});
  return f;
}

Expr Imm(DataType t, Wide v) { return IntImmNode::make(t, static_cast<int64_t>(v)); }

Expr ScaledAtom(const Term& t, Wide coeff, DataType dtype) {
  return coeff == 1 ? t.atom : t.atom * Imm(dtype, coeff);
}

// Canonical expression of a linear form: positive terms, then negative terms
// subtracted, then the constant; terms sorted by printed form.
Expr FromLinear(LinearForm f) {
  DataType t = f.dtype;
  std::stable_sort(f.terms.begin(), f.terms.end(),
                   [](const Term& x, const Term& y) { return x.key < y.key; });
  // A coefficient is written as subtraction when its negation is representable.
  auto negated = [&](Wide c) { return c < 0 && Norm(t, -c) > 0; };
  Expr result;
  for (const Term& term : f.terms) {
    if (!negated(term.coeff))
      result = result.defined() ? result + ScaledAtom(term, term.coeff, t) : ScaledAtom(term, term.coeff, t);
  }
  for (const Term& term : f.terms) {
    if (!negated(term.coeff)) continue;
    if (result.defined()) {
      result = result - ScaledAtom(term, -term.coeff, t);
    } else if (f.constant > 0) {
      result = Imm(t, f.constant) - ScaledAtom(term, -term.coeff, t);
      f.constant = 0;
    } else {
      result = ScaledAtom(term, term.coeff, t);
    }
  }
  if (!result.defined()) return Imm(t, f.constant);
  if (f.constant == 0) return result;
  return negated(f.constant) ? result - Imm(t, -f.constant) : result + Imm(t, f.constant);
}

// ---- Folding of immediates ----

Wide FloorDivWide(Wide a, Wide b) {
  Wide q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

Expr FoldInt(BinOp op, DataType t, Wide a, Wide b) {
  auto wrap = [&](Wide v) { return Imm(t, Norm(t, v)); };
  auto boolean = [](bool v) { return IntImmNode::make(DataType::Bool(), v); };
  switch (op) {
    case BinOp::Add: return wrap(a + b);
    case BinOp::Sub: return wrap(a - b);
    case BinOp::Mul: return wrap(a * b);
    case BinOp::Div: return b == 0 ? Expr() : wrap(a / b);
    case BinOp::Mod: return b == 0 ? Expr() : wrap(a % b);
    case BinOp::FloorDiv: return b == 0 ? Expr() : wrap(FloorDivWide(a, b));
    case BinOp::FloorMod: return b == 0 ? Expr() : wrap(a - FloorDivWide(a, b) * b);
    case BinOp::Min: return Imm(t, std::min(a, b));
    case BinOp::Max: return Imm(t, std::max(a, b));
    case BinOp::EQ: return boolean(a == b);
    case BinOp::NE: return boolean(a != b);
    case BinOp::LT: return boolean(a < b);
    case BinOp::LE: return boolean(a <= b);
    case BinOp::GT: return boolean(a > b);
    case BinOp::GE: return boolean(a >= b);
    case BinOp::And: return boolean(a && b);
    case BinOp::Or: return boolean(a || b);
  }
  return Expr();
}

// Rounds a double result to the precision of float type t (float16: not folded).
std::optional<double> RoundTo(DataType t, double v) {
  if (t.bits == 64) return v;
  if (t.bits == 32) return static_cast<double>(static_cast<float>(v));
  return std::nullopt;
}

Expr FoldFloat(BinOp op, DataType t, double a, double b) {
  auto make = [&](double v) -> Expr {
    std::optional<double> r = RoundTo(t, v);
    return r ? FloatImmNode::make(t, *r) : Expr();
  };
  auto boolean = [](bool v) { return IntImmNode::make(DataType::Bool(), v); };
  bool nan = std::isnan(a) || std::isnan(b);
  switch (op) {
    case BinOp::Add: return make(a + b);
    case BinOp::Sub: return make(a - b);
    case BinOp::Mul: return make(a * b);
    case BinOp::Div: return make(a / b);
    case BinOp::Min: return nan ? Expr() : make(std::min(a, b));
    case BinOp::Max: return nan ? Expr() : make(std::max(a, b));
    case BinOp::EQ: return boolean(a == b);
    case BinOp::NE: return boolean(a != b);
    case BinOp::LT: return boolean(a < b);
    case BinOp::LE: return boolean(a <= b);
    case BinOp::GT: return boolean(a > b);
    case BinOp::GE: return boolean(a >= b);
    default: return Expr();  // mod / floordiv / floormod: rounding steps differ per backend
  }
}

Expr FoldBinary(BinOp op, const Expr& a, const Expr& b) {
  if (a.dtype().lanes != 1) return Expr();
  const auto *ia = a.as<IntImmNode>(), *ib = b.as<IntImmNode>();
  if (ia && ib) return FoldInt(op, a.dtype(), ia->value, ib->value);
  const auto *fa = a.as<FloatImmNode>(), *fb = b.as<FloatImmNode>();
  if (fa && fb) return FoldFloat(op, a.dtype(), fa->value, fb->value);
  return Expr();
}

Expr FoldCast(DataType t, const Expr& v) {
  if (t.lanes != 1) return Expr();
  if (const auto* imm = v.as<IntImmNode>()) {
    if (t.is_integer() || t.is_bool()) return IntImmNode::make(t, imm->value);
    std::optional<double> r = RoundTo(t, static_cast<double>(imm->value));
    return r ? FloatImmNode::make(t, *r) : Expr();
  }
  if (const auto* imm = v.as<FloatImmNode>()) {
    double x = imm->value;
    if (t.is_bool()) return IntImmNode::make(t, x != 0);
    if (t.is_float()) {
      std::optional<double> r = RoundTo(t, x);
      return r ? FloatImmNode::make(t, *r) : Expr();
    }
    // float -> int truncates; out of range (or NaN) has no defined result to fold to.
    double truncated = std::trunc(x);
    Bounds range = TypeBounds(t);
    if (!(truncated >= static_cast<double>(range.lo) && truncated <= static_cast<double>(range.hi))) {
      return Expr();
    }
    return IntImmNode::make(t, static_cast<int64_t>(truncated));
  }
  return Expr();
}

// ---- The mutator ----

class Simplifier : public ExprMutator {
 public:
  explicit Simplifier(const VarRanges& ranges) : ranges_(ranges) {}

 protected:
  Expr MutateVar(const Expr& e, const VarNode* v) override {
    auto it = ranges_.find(v);
    if (it != ranges_.end() && it->second.is_point() && e.dtype().is_integer()) {
      return IntImmNode::make(e.dtype(), it->second.min);
    }
    return e;
  }

  Expr MutateBinary(const Expr& e, const BinaryNode* n) override {
    Expr a = Mutate(n->a), b = Mutate(n->b);
    if (Expr folded = FoldBinary(n->op, a, b); folded.defined()) return folded;
    DataType t = a.dtype();
    if (t.lanes == 1 && t.is_integer()) {
      if (Expr r = SimplifyInteger(n->op, a, b); r.defined()) return r;
    }
    if (t.lanes == 1 && t.is_bool()) {
      if (Expr r = SimplifyLogical(n->op, a, b); r.defined()) return r;
    }
    if (a.same_as(n->a) && b.same_as(n->b)) return e;
    return BinaryNode::make(n->op, a, b);
  }

  Expr MutateNot(const Expr& e, const NotNode* n) override {
    Expr a = Mutate(n->a);
    if (const auto* imm = a.as<IntImmNode>()) return IntImmNode::make(DataType::Bool(), !imm->value);
    if (const auto* inner = a.as<NotNode>()) return inner->a;
    return a.same_as(n->a) ? e : NotNode::make(a);
  }

  Expr MutateSelect(const Expr& e, const SelectNode* n) override {
    Expr c = Mutate(n->condition);
    if (const auto* imm = c.as<IntImmNode>()) return Mutate(imm->value ? n->true_value : n->false_value);
    Expr t = Mutate(n->true_value), f = Mutate(n->false_value);
    if (SameExpr(t, f)) return t;
    if (c.same_as(n->condition) && t.same_as(n->true_value) && f.same_as(n->false_value)) return e;
    return SelectNode::make(c, t, f);
  }

  Expr MutateCast(const Expr& e, const CastNode* n) override {
    Expr v = Mutate(n->value);
    if (Expr folded = FoldCast(e.dtype(), v); folded.defined()) return folded;
    if (Expr narrowed = NarrowIntegerCast(e.dtype(), v); narrowed.defined()) return narrowed;
    return v.same_as(n->value) ? e : CastNode::make(e.dtype(), v);
  }

  // Integer casts, as int64 index arithmetic converted to int32 gives:
  // cast(t, cast(u, x)) is cast(t, x) when u holds every value of x; and a
  // cast to a type no wider commutes with +, -, * (all wrap modulo 2^bits),
  // so it moves down to the operands, where it may cancel.
  Expr NarrowIntegerCast(DataType t, const Expr& v) {
    const DataType u = v.dtype();
    if (t.lanes != 1 || u.lanes != 1 || !t.is_integer() || !u.is_integer()) return Expr();
    if (const auto* inner = v.as<CastNode>()) {
      const DataType x = inner->value.dtype();
      const bool exact =
          x.is_integer() && (x.is_uint() == u.is_uint() ? u.bits >= x.bits : x.is_uint() && u.bits > x.bits);
      if (exact) return x == t ? inner->value : CastNode::make(t, inner->value);
    }
    const auto* bin = v.as<BinaryNode>();
    if (!bin || t.bits > u.bits) return Expr();
    if (bin->op != BinOp::Add && bin->op != BinOp::Sub && bin->op != BinOp::Mul) return Expr();
    return Mutate(BinaryNode::make(bin->op, CastNode::make(t, bin->a), CastNode::make(t, bin->b)));
  }

  Expr MutateCall(const Expr& e, const CallNode* n) override {
    if (n->op == Intrinsic::IfThenElse) {
      Expr c = Mutate(n->args[0]);
      if (const auto* imm = c.as<IntImmNode>()) return Mutate(imm->value ? n->args[1] : n->args[2]);
    }
    return ExprMutator::MutateCall(e, n);
  }

  Expr MutateReduce(const Expr& e, const ReduceNode* n) override {
    VarRanges saved = ranges_;
    for (const IterVar& iv : n->axis) ranges_[iv.var_node()] = Interval::FromExtent(iv.min, iv.extent);
    Expr r = ExprMutator::MutateReduce(e, n);
    ranges_ = std::move(saved);
    return r;
  }

  Expr MutateLet(const Expr& e, const LetNode* n) override {
    Expr value = Mutate(n->value);
    VarRanges saved = ranges_;
    const VarNode* v = n->var.as<VarNode>();
    if (value.dtype().is_integer() && value.dtype().lanes == 1) {
      ranges_[v] = EvalInterval(value, ranges_);
    } else {
      ranges_.erase(v);
    }
    Expr body = Mutate(n->body);
    ranges_ = std::move(saved);
    if (value.same_as(n->value) && body.same_as(n->body)) return e;
    return LetNode::make(n->var, value, body);
  }

 private:
  // Exact bounds of a linear form (no wrap) from the bounds of its atoms; nullopt when unbounded.
  std::optional<Bounds> ExactBounds(const LinearForm& f) const {
    Bounds b{f.constant, f.constant};
    for (const Term& t : f.terms) {
      Interval i = EvalInterval(t.atom, ranges_);
      if (!i.bounded()) return std::nullopt;
      Wide x = t.coeff * Wide{i.min}, y = t.coeff * Wide{i.max};
      b.lo += std::min(x, y);
      b.hi += std::max(x, y);
    }
    return b;
  }

  // True when the form's value never wraps within the ranges, i.e. equals its exact value.
  bool NoWrap(const LinearForm& f) const {
    std::optional<Bounds> b = ExactBounds(f);
    Bounds range = TypeBounds(f.dtype);
    return b && b->lo >= range.lo && b->hi <= range.hi;
  }

  // Exact bounds of a - b, when both sides are free of wraparound.
  std::optional<Bounds> DiffBounds(const Expr& a, const Expr& b) const {
    LinearForm la = ToLinear(a), lb = ToLinear(b);
    if (!NoWrap(la) || !NoWrap(lb)) return std::nullopt;
    la.AddScaled(lb, -1, false);
    return ExactBounds(la);
  }

  Expr SimplifyInteger(BinOp op, const Expr& a, const Expr& b) {
    auto boolean = [](bool v) { return IntImmNode::make(DataType::Bool(), v); };
    switch (op) {
      case BinOp::Add:
      case BinOp::Sub:
      case BinOp::Mul: return FromLinear(ToLinear(BinaryNode::make(op, a, b)));
      case BinOp::Div:
      case BinOp::Mod:
      case BinOp::FloorDiv:
      case BinOp::FloorMod: return SimplifyDivMod(op, a, b);
      case BinOp::Min:
      case BinOp::Max: {
        if (SameExpr(a, b)) return a;
        std::optional<Bounds> d = DiffBounds(a, b);
        if (d && d->hi <= 0) return op == BinOp::Min ? a : b;
        if (d && d->lo >= 0) return op == BinOp::Min ? b : a;
        return Expr();
      }
      default: break;
    }
    if (!IsComparison(op)) return Expr();
    if (SameExpr(a, b)) return boolean(op == BinOp::EQ || op == BinOp::LE || op == BinOp::GE);
    std::optional<Bounds> d = DiffBounds(a, b);
    if (!d) return Expr();
    switch (op) {
      case BinOp::LT: return d->hi < 0 ? boolean(true) : d->lo >= 0 ? boolean(false) : Expr();
      case BinOp::LE: return d->hi <= 0 ? boolean(true) : d->lo > 0 ? boolean(false) : Expr();
      case BinOp::GT: return d->lo > 0 ? boolean(true) : d->hi <= 0 ? boolean(false) : Expr();
      case BinOp::GE: return d->lo >= 0 ? boolean(true) : d->hi < 0 ? boolean(false) : Expr();
      case BinOp::EQ:
        return (d->lo == 0 && d->hi == 0) ? boolean(true)
               : (d->lo > 0 || d->hi < 0) ? boolean(false)
                                          : Expr();
      case BinOp::NE:
        return (d->lo == 0 && d->hi == 0) ? boolean(false)
               : (d->lo > 0 || d->hi < 0) ? boolean(true)
                                          : Expr();
      default: return Expr();
    }
  }

  static Expr SimplifyLogical(BinOp op, const Expr& a, const Expr& b) {
    if (op != BinOp::And && op != BinOp::Or) return Expr();
    bool is_and = op == BinOp::And;
    for (int side = 0; side < 2; ++side) {
      const Expr& c = side == 0 ? a : b;
      const Expr& other = side == 0 ? b : a;
      if (const auto* imm = c.as<IntImmNode>()) {
        // true && x = x, false && x = false; false || x = x, true || x = true.
        return (imm->value != 0) == is_and ? other : c;
      }
    }
    return SameExpr(a, b) ? a : Expr();
  }

  // a = k*A + r with k dividing c and 0 <= r < k (the flattened index of a
  // reshape: 784*c + 28*h + w with 28*h + w < 784): floordiv(a, c) is
  // floordiv(A, c/k) and floormod(a, c) is floormod(A, c/k)*k + r. Tries the
  // periods k that the terms' coefficients share with c, largest first; an
  // undefined Expr when none splits `whole` so.
  Expr DivModByPeriod(BinOp op, const LinearForm& whole, int64_t c) {
    std::vector<Wide> periods;
    for (const Term& term : whole.terms) {
      Wide k = term.coeff < 0 ? -term.coeff : term.coeff, other = c;
      while (other != 0) k = std::exchange(other, k % other);
      if (k > 1 && k < c) periods.push_back(k);
    }
    std::sort(periods.rbegin(), periods.rend());
    periods.erase(std::unique(periods.begin(), periods.end()), periods.end());
    for (Wide k : periods) {
      LinearForm outer{whole.dtype, {}, 0}, inner{whole.dtype, {}, whole.constant};
      for (const Term& term : whole.terms) {
        if (term.coeff % k == 0) {
          outer.terms.push_back({term.atom, term.key, term.coeff / k});
        } else {
          inner.terms.push_back(term);
        }
      }
      // Only a low part that varies: dividing a common factor out of every
      // term changes nothing that interval analysis needs, and the guards of
      // GPU fetch loops are decided on the undivided form.
      if (inner.terms.empty()) continue;
      std::optional<Bounds> rb = ExactBounds(inner);
      if (!rb) continue;
      Wide shift = FloorDivWide(rb->lo, k);
      if (shift != FloorDivWide(rb->hi, k)) continue;  // r spans more than one period
      outer.constant += shift;
      inner.constant -= shift * k;
      DataType t = whole.dtype;
      Expr m = Imm(t, Wide{c} / k);
      Expr a_outer = FromLinear(outer);
      Expr div = SimplifyDivMod(BinOp::FloorDiv, a_outer, m);
      if (op == BinOp::FloorDiv) return div.defined() ? div : floordiv(a_outer, m);
      Expr mod = SimplifyDivMod(BinOp::FloorMod, a_outer, m);
      return (mod.defined() ? mod : floormod(a_outer, m)) * Imm(t, k) + FromLinear(inner);
    }
    return Expr();
  }

  Expr SimplifyDivMod(BinOp op, const Expr& a, const Expr& b) {
    int64_t c = 0;
    if (!GetConstInt(b, &c) || c <= 0) return Expr();
    DataType t = a.dtype();
    bool is_div = op == BinOp::Div || op == BinOp::FloorDiv;
    if (c == 1) return is_div ? a : Imm(t, 0);
    if (op == BinOp::Div || op == BinOp::Mod) {
      // Truncating and flooring division agree on a non-negative dividend.
      if (EvalInterval(a, ranges_).min < 0) return Expr();
      op = is_div ? BinOp::FloorDiv : BinOp::FloorMod;
    }
    if (op == BinOp::FloorDiv) {
      // floordiv(floordiv(x, c1), c2) = floordiv(x, c1*c2) for positive divisors.
      int64_t c1 = 0;
      const auto* inner = a.as<BinaryNode>();
      if (inner && inner->op == BinOp::FloorDiv && GetConstInt(inner->b, &c1) && c1 > 0 &&
          Wide{c1} * c <= TypeBounds(t).hi) {
        Expr divisor = Imm(t, Wide{c1} * c);
        Expr r = SimplifyDivMod(op, inner->a, divisor);
        return r.defined() ? r : floordiv(inner->a, divisor);
      }
    }
    LinearForm whole = ToLinear(a);
    if (!NoWrap(whole)) return Expr();
    // a = c * quotient + rest, exactly.
    LinearForm quotient{t, {}, 0}, rest{t, {}, 0};
    quotient.constant = FloorDivWide(whole.constant, c);
    rest.constant = whole.constant - quotient.constant * c;
    for (const Term& term : whole.terms) {
      if (term.coeff % c == 0) {
        quotient.terms.push_back({term.atom, term.key, term.coeff / c});
      } else {
        rest.terms.push_back(term);
      }
    }
    std::optional<Bounds> rb = ExactBounds(rest);
    Bounds range = TypeBounds(t);
    if (!rb || rb->lo < range.lo || rb->hi > range.hi) return Expr();
    Wide k = FloorDivWide(rb->lo, c);
    if (k == FloorDivWide(rb->hi, c)) {
      // The rest stays within one period: floordiv = quotient + k, floormod = rest - k*c.
      if (op == BinOp::FloorDiv) {
        quotient.constant += k;
        return FromLinear(quotient);
      }
      rest.constant -= k * c;
      return FromLinear(rest);
    }
    if (Expr inner = DivModByPeriod(op, whole, c); inner.defined()) return inner;
    if (quotient.is_const() && quotient.constant == 0) return Expr();
    if (op == BinOp::FloorMod) return floormod(FromLinear(rest), Imm(t, c));
    return FromLinear(quotient) + floordiv(FromLinear(rest), Imm(t, c));
  }

  VarRanges ranges_;
};

}  // namespace

Expr Simplify(const Expr& e, const VarRanges& ranges) {
  AS_CHECK(e.defined(), "Simplify of an undefined expression");
  AtomKeyScope scope;
  return Simplifier(ranges).Mutate(e);
}

bool CanProve(const Expr& cond, const VarRanges& ranges) {
  AS_TYPE_CHECK(cond.defined() && cond.dtype().is_bool(), "CanProve needs a bool expression");
  Expr s = Simplify(cond, ranges);
  if (const auto* imm = s.as<IntImmNode>()) return imm->value != 0;
  return EvalInterval(s, ranges).min >= 1;
}

}  // namespace autosched
