// Expressions of the tensor-expression IR.
//
// Nodes are immutable plain structs shared through `Expr` handles; a node is
// created only through its `make` function, which checks operand types and
// throws autosched::Error / TypeError with a message naming the problem.
//
// Semantics
//  - Integer arithmetic wraps at the width of the dtype (two's complement).
//  - Div: true division for floats; for integers it truncates toward zero (C).
//    Mod: remainder of that truncating division (sign follows the dividend).
//  - FloorDiv: rounds toward negative infinity, for integers and floats
//    (floats: floor(a / b)). FloorMod: a - FloorDiv(a, b) * b, so its sign
//    follows the divisor. Index arithmetic in te uses FloorDiv / FloorMod.
//    Integer division by zero is an error (evaluator and generated code); by
//    -1 it negates, wrapping (INT_MIN / -1 == INT_MIN), remainder 0.
//  - Comparisons and And / Or / Not produce bool; And / Or take bool operands.
//  - Select(c, t, f) may evaluate both t and f; the intrinsic if_then_else
//    evaluates only the chosen branch (use it to guard out-of-bounds loads,
//    as padding does).
//  - Cast converts between any two supported types: float -> int truncates
//    toward zero; to bool means "!= 0".
//  - Reduce combines `source` over the reduction iteration space (all
//    reduce axes, in order, where `condition` holds), starting from the
//    combiner's identity: sum 0, prod 1, max lowest value (-inf for floats),
//    min highest value (+inf for floats). It accumulates in its accumulation
//    type `acc_dtype`: each source value is converted to it, the identity and
//    every partial result are of it, and the result is converted to the
//    node's dtype once at the end. By default float16 and bfloat16
//    accumulate in float32 and every other type in itself
//    (DefaultAccumulationType); a wider float, or the 16-bit type itself, can
//    be asked for explicitly.
//  - 16-bit floats (float16, bfloat16) compute in float32: a value is rounded
//    to its 16-bit type (to nearest even; NaN stays NaN) where it is stored,
//    cast to it, or accumulated in it. A cast to bfloat16 from float64 or an
//    integer goes through float32 first, as PyTorch's does. A float16
//    immediate is rounded to float16; a bfloat16 immediate keeps float32
//    precision until stored, as PyTorch keeps a Python number it multiplies
//    a bfloat16 tensor by (x * 0.7071 rounds once, the constant is not
//    rounded to 8 bits first).
//  - Depth: a leaf has depth 1, a node one more than its deepest child. No
//    node is deeper than kMaxNodeDepth (checked when it is made), so every
//    recursive pass over expressions has a bound; what users write is held
//    to kMaxExprDepth (see tensor.h and docs/ir.md).
//  - Intrinsics (Call): exp, log, sqrt, rsqrt, tanh, sigmoid, erf, pow, fabs,
//    floor, ceil, round (half away from zero), round_even (half to even, as
//    IEEE's default rounding, numpy.round and ONNX's quantization do) are
//    float-only; fabs also takes integers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace autosched {

enum class ExprKind : uint8_t {
  IntImm,
  FloatImm,
  Var,
  Binary,
  Not,
  Select,
  Cast,
  Call,
  TensorLoad,
  Reduce,
  // Lowered code only (see lower/stmt.h): loads from buffers, SIMD vectors,
  // and let-bindings.
  BufferLoad,
  Ramp,
  Broadcast,
  Let,
};

enum class BinOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  FloorDiv,
  FloorMod,
  Min,
  Max,
  EQ,
  NE,
  LT,
  LE,
  GT,
  GE,
  And,
  Or,
};

enum class Intrinsic : uint8_t {
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Tanh,
  Sigmoid,
  Erf,
  Pow,
  Fabs,
  Floor,
  Ceil,
  Round,
  IfThenElse,
  // Last, so that the numbers of the intrinsics before it (hashed into
  // workload keys) stay as they were.
  RoundEven,
};

// What the passes that weigh or place code need to know of an intrinsic (one
// table in expr.cc, beside its name).
struct IntrinsicFacts {
  // A transcendental or root: worth computing once rather than in every
  // consumer (compute_dag's inlining), counted as a math function by the
  // cost model's features.
  bool expensive = false;
  // No vector instruction: code generation calls the math library once per
  // lane, so unrolled copies weigh several units per lane.
  bool library_call_per_lane = false;
};
const IntrinsicFacts& FactsOf(Intrinsic op);

enum class Combiner : uint8_t { Sum, Prod, Max, Min };

// Names used in records, messages and Python (one table per enum in expr.cc);
// the parsers throw Error naming the text and the known names.
const char* ExprKindName(ExprKind k);     // "IntImm", "Binary", "Reduce", ...
const char* BinOpName(BinOp op);          // "add", "floordiv", "lt", ...
const char* IntrinsicName(Intrinsic op);  // "exp", "if_then_else", ...
const char* CombinerName(Combiner c);     // "sum", "prod", "max", "min"
BinOp ParseBinOp(const std::string& name);
Intrinsic ParseIntrinsic(const std::string& name);
Combiner ParseCombiner(const std::string& name);
bool IsComparison(BinOp op);  // EQ .. GE
bool IsLogical(BinOp op);     // And, Or

// The depth limit of the expressions users write and of every compute op's
// expression counted through the computed tensors it reads (tensor.h).
constexpr int kMaxExprDepth = 256;
// The depth limit of any node, lowered code included: room for what lowering
// adds (inlined producers, split and flattened indices) on top of
// kMaxExprDepth. Every recursive pass is sized to run at this depth on a
// thread with a small (1 MiB) stack.
constexpr int kMaxNodeDepth = 2 * kMaxExprDepth;

struct ExprNode {
  ExprKind kind;
  int depth;  // 1 for a leaf, else 1 + the deepest child's depth
  DataType dtype;
  // child_depth: the depth of the deepest child (0 for a leaf). Throws Error
  // past kMaxNodeDepth.
  ExprNode(ExprKind k, DataType t, int child_depth = 0);
  virtual ~ExprNode() = default;
};

// A shared handle to an immutable expression node. Copying is cheap.
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}
  // Convenience immediates: int32 and float32.
  Expr(int value);    // NOLINT(google-explicit-constructor)
  Expr(float value);  // NOLINT(google-explicit-constructor)

  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  ExprKind kind() const { return node_->kind; }
  DataType dtype() const { return node_->dtype; }
  // 0 for an undefined expression.
  int depth() const { return node_ ? node_->depth : 0; }
  const std::shared_ptr<const ExprNode>& ptr() const { return node_; }

  // Downcast to a node type; nullptr when the kind does not match.
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }
  // Identity (same node), not structural equality: see StructuralEqual.
  bool same_as(const Expr& o) const { return node_ == o.node_; }

 private:
  std::shared_ptr<const ExprNode> node_;
};

// The depth of the deepest expression in the list (0 when empty).
int MaxDepth(const std::vector<Expr>& list);

struct IntImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::IntImm;
  int64_t value;  // Already wrapped to the width of dtype. Also used for bool.
  IntImmNode(DataType t, int64_t v) : ExprNode(kKind, t), value(v) {}
  static Expr make(DataType t, int64_t value);
};

struct FloatImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::FloatImm;
  double value;
  FloatImmNode(DataType t, double v) : ExprNode(kKind, t), value(v) {}
  static Expr make(DataType t, double value);
};

// A variable. Two variables are the same only when they are the same node;
// the name is for printing.
struct VarNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Var;
  std::string name;
  VarNode(DataType t, std::string n) : ExprNode(kKind, t), name(std::move(n)) {}
  static Expr make(const std::string& name, DataType t = DataType::Int(32));
};

struct BinaryNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Binary;
  BinOp op;
  Expr a, b;
  BinaryNode(DataType t, BinOp o, Expr x, Expr y)
      : ExprNode(kKind, t, std::max(x.depth(), y.depth())), op(o), a(std::move(x)), b(std::move(y)) {}
  // Operands must have the same dtype (bool for And / Or).
  static Expr make(BinOp op, Expr a, Expr b);
};

// An integer division or remainder by anything but a nonzero constant: it
// can trap where its value is not used (speculated code, masked lanes).
bool MayTrapOnDivision(const BinaryNode* b);

struct NotNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Not;
  Expr a;
  NotNode(DataType t, Expr x) : ExprNode(kKind, t, x.depth()), a(std::move(x)) {}
  static Expr make(Expr a);
};

struct SelectNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Select;
  Expr condition, true_value, false_value;
  SelectNode(DataType t, Expr c, Expr x, Expr y)
      : ExprNode(kKind, t, std::max({c.depth(), x.depth(), y.depth()})),
        condition(std::move(c)),
        true_value(std::move(x)),
        false_value(std::move(y)) {}
  static Expr make(Expr condition, Expr true_value, Expr false_value);
};

struct CastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Cast;
  Expr value;
  CastNode(DataType t, Expr v) : ExprNode(kKind, t, v.depth()), value(std::move(v)) {}
  static Expr make(DataType t, Expr value);
};

struct CallNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Call;
  Intrinsic op;
  std::vector<Expr> args;
  CallNode(DataType t, Intrinsic o, std::vector<Expr> a)
      : ExprNode(kKind, t, MaxDepth(a)), op(o), args(std::move(a)) {}
  static Expr make(Intrinsic op, std::vector<Expr> args);
};

class Tensor;
struct TensorNode;

// Reads one element of a tensor. Built by Tensor::operator() which checks the
// number of indices against the tensor's rank. Indices may be of any integer
// type; each is converted to int32, the type of all index arithmetic (tensors
// hold fewer than 2^31 elements), so every pass combines indices of one type.
// An index outside the tensor is an error in the evaluator (one that does not
// fit in int32 included) and undefined in generated code.
struct TensorLoadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::TensorLoad;
  std::shared_ptr<const TensorNode> tensor;
  std::vector<Expr> indices;
  TensorLoadNode(DataType t, std::shared_ptr<const TensorNode> ten, std::vector<Expr> idx)
      : ExprNode(kKind, t, MaxDepth(idx)), tensor(std::move(ten)), indices(std::move(idx)) {}
  static Expr make(const Tensor& tensor, std::vector<Expr> indices);
};

enum class IterKind : uint8_t { Spatial, Reduce };
const char* IterKindName(IterKind k);  // "spatial", "reduce"
IterKind ParseIterKind(const std::string& name);

// An iteration variable over [min, min + extent).
struct IterVar {
  Expr var;  // a VarNode
  int64_t min = 0;
  int64_t extent = 1;
  IterKind kind = IterKind::Spatial;

  const VarNode* var_node() const { return var.as<VarNode>(); }
  const std::string& name() const { return var_node()->name; }
};

// Makes a reduction axis over [min, min + extent) with an int32 variable.
IterVar MakeReduceAxis(int64_t min, int64_t extent, const std::string& name);

// The type a reduction producing t accumulates in unless asked otherwise:
// float32 for float16 (as PyTorch and cuBLAS do), t itself for every other t.
DataType DefaultAccumulationType(DataType t);

// dtype is the result type; acc_dtype the accumulation type (see the
// semantics above).
struct ReduceNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Reduce;
  Combiner combiner;
  Expr source;
  std::vector<IterVar> axis;
  Expr condition;  // bool; undefined means "always"
  DataType acc_dtype;
  ReduceNode(DataType t, Combiner c, Expr s, std::vector<IterVar> ax, Expr cond, DataType acc)
      : ExprNode(kKind, t, std::max(s.depth(), cond.depth())),
        combiner(c),
        source(std::move(s)),
        axis(std::move(ax)),
        condition(std::move(cond)),
        acc_dtype(acc) {}
  // Checks that every axis is a reduce axis and that the source uses it. The
  // result has the source's dtype and accumulates in its default type.
  static Expr make(Combiner combiner, Expr source, std::vector<IterVar> axis, Expr condition = Expr());
  // With explicit types: acc_dtype is result_dtype or (floats) a wider float;
  // the source has the result type, or a type that converts exactly to the
  // accumulation type (itself, or a float no wider).
  static Expr make(Combiner combiner, Expr source, std::vector<IterVar> axis, Expr condition,
                   DataType acc_dtype, DataType result_dtype);
  // The combiner's identity in the accumulation type.
  Expr identity() const;
};

// ---- Nodes of lowered code ----

// Memory scope of a buffer: global (arguments and root allocations), shared
// (per GPU block) or local (per thread / register).
enum class MemScope : uint8_t { Global, Shared, Local };
const char* MemScopeName(MemScope s);  // "global", "shared", "local"
MemScope ParseMemScope(const std::string& name);

// A named region of memory with an element type and a (possibly
// multi-dimensional) shape. Storage flattening turns every access into a
// single flat index.
struct BufferNode {
  std::string name;
  DataType dtype;  // element type (lanes == 1)
  std::vector<int64_t> shape;
  MemScope scope = MemScope::Global;
  // Row strides in elements when padded by storage_align; empty = compact.
  std::vector<int64_t> strides;
};
using Buffer = std::shared_ptr<const BufferNode>;
Buffer MakeBuffer(const std::string& name, DataType dtype, std::vector<int64_t> shape,
                  MemScope scope = MemScope::Global, std::vector<int64_t> strides = {});

// Reads buffer[indices]. When the last index is a vector (Ramp), the result is
// a vector of that many lanes.
struct BufferLoadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::BufferLoad;
  Buffer buffer;
  std::vector<Expr> indices;
  BufferLoadNode(DataType t, Buffer b, std::vector<Expr> idx)
      : ExprNode(kKind, t, MaxDepth(idx)), buffer(std::move(b)), indices(std::move(idx)) {}
  static Expr make(Buffer buffer, std::vector<Expr> indices);
};

// The vector [base, base + stride, ..., base + (lanes-1) * stride].
struct RampNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Ramp;
  Expr base;
  int64_t stride;
  int lanes;
  RampNode(DataType t, Expr b, int64_t s, int l)
      : ExprNode(kKind, t, b.depth()), base(std::move(b)), stride(s), lanes(l) {}
  static Expr make(Expr base, int64_t stride, int lanes);
};

// A scalar repeated in every lane.
struct BroadcastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Broadcast;
  Expr value;
  int lanes;
  BroadcastNode(DataType t, Expr v, int l) : ExprNode(kKind, t, v.depth()), value(std::move(v)), lanes(l) {}
  static Expr make(Expr value, int lanes);
};

// `body` with `var` bound to `value`.
struct LetNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Let;
  Expr var;  // a VarNode
  Expr value, body;
  LetNode(DataType t, Expr x, Expr v, Expr b)
      : ExprNode(kKind, t, std::max({x.depth(), v.depth(), b.depth()})),
        var(std::move(x)),
        value(std::move(v)),
        body(std::move(b)) {}
  static Expr make(Expr var, Expr value, Expr body);
};

// The identity of a combiner in dtype t (see the semantics above).
Expr CombinerIdentity(Combiner c, DataType t);

// ---- Construction helpers (type-checked; used by C++ code and tests) ----
Expr make_const(DataType t, double value);  // IntImm or FloatImm by t
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr select(Expr c, Expr t, Expr f);
Expr if_then_else(Expr c, Expr t, Expr f);
Expr cast(DataType t, Expr v);

// If e is an integer/bool immediate, stores its value and returns true.
bool GetConstInt(const Expr& e, int64_t* value);
// Wraps v to the width and signedness of integer type t (bool: v != 0).
int64_t WrapToType(DataType t, int64_t v);

}  // namespace autosched
