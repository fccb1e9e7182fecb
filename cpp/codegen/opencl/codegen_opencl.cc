#include "codegen/opencl/codegen_opencl.h"

#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_set>

#include "codegen/opencl/kernel_structure.h"
#include "codegen/opencl/tree_fold.h"
#include "codegen/source/c_printer.h"
#include "codegen/unroll_budget.h"
#include "ir/functor.h"
#include "lower/stmt_functor.h"
#include "support/error.h"

namespace autosched {
namespace {

using namespace opencl_kernels;  // NOLINT: the kernel structure helpers (kernel_structure.h)

enum class BufferKind : uint8_t { Param, Shared, Private };

// Words of OpenCL C no identifier of the generated code may take: qualifiers,
// types (the vector types among them), and the built-in functions and macros
// the printers call (a buffer named `exp` would hide the function exp).
std::set<std::string> OpenCLWords() {
  std::set<std::string> words = {"kernel",
                                 "global",
                                 "local",
                                 "constant",
                                 "private",
                                 "read_only",
                                 "write_only",
                                 "image2d_t",
                                 "event_t",
                                 "sampler_t",
                                 "size_t",
                                 "ptrdiff_t",
                                 "barrier",
                                 "get_group_id",
                                 "get_local_id",
                                 "vload_half",
                                 "vstore_half_rte",
                                 "exp",
                                 "log",
                                 "sqrt",
                                 "tanh",
                                 "erf",
                                 "pow",
                                 "fabs",
                                 "abs",
                                 "floor",
                                 "ceil",
                                 "round",
                                 "rint",
                                 "fmod",
                                 "fmax",
                                 "fmin",
                                 "isnan",
                                 "NAN",
                                 "INFINITY",
                                 "CLK_LOCAL_MEM_FENCE"};
  for (const char* base :
       {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "float", "double"}) {
    for (const char* n : {"2", "3", "4", "8", "16"}) words.insert(std::string(base) + n);
  }
  for (const char* n : {"2", "3", "4", "8", "16"}) {
    words.insert(std::string("vload") + n);
    words.insert(std::string("vstore") + n);
  }
  return words;
}

class OpenCLPrinter : public CPrinter {
 public:
  OpenCLPrinter(const std::vector<Buffer>& params, std::unordered_set<const ForNode*> unroll)
      : unroll_(std::move(unroll)) {
    reserved_ = OpenCLWords();
    for (const Buffer& b : params) kinds_[b.get()] = BufferKind::Param;
  }

  std::string PrintKernel(const std::string& name, const Stmt& body, const std::vector<int>& params,
                          const std::vector<Buffer>& buffers, const Launch& launch, int64_t* local_bytes);
  bool uses_fp64() const { return uses_fp64_; }
  std::string HelperText() const { return Helpers(); }

 protected:
  std::string TypeName(DataType t) override;
  std::string LoadElement(const BufferNode* b, const std::string& index) override;
  std::string StoreElement(const BufferNode* b, const std::string& index, const std::string& value,
                           DataType value_type) override;
  void PrintFor(const ForNode* n) override;
  void PrintAllocate(const AllocateNode* n) override;
  std::string RoundToHalf(const std::string& x, DataType from) override;
  bool PrintVectorStore(const BufferStoreNode* n) override;
  void PrintStmt(const Stmt& s) override;

 private:
  std::string StorageType(const BufferNode* b);
  // "cond" when only some work items may write `b` here ("" when all do).
  std::string WriterCondition(const BufferNode* b);
  // The float32 vector expression in OpenCL vector types, or nothing when a
  // part of it has no vector form here (it is then printed lane by lane).
  std::optional<std::string> VectorValue(const Expr& e, int lanes);
  std::optional<std::string> AlignedSharedVector(const BufferNode* b, const Expr& index, int lanes);
  bool UsesIdVar(const Expr& e) const;
  bool WritesShared(const Stmt& s) const;
  // Whether loop body `s` is a double-buffered fetch of private buffers (a
  // register tile's next values loaded during this iteration).
  bool PipelinesRegisters(const Stmt& s) const;
  void PrintDoubleBuffered(const std::vector<Stmt>& seq, bool barrier_after);
  // Floats one work item stores into shared memory in `s` (a fetch), or -1
  // when it stores elsewhere or a loop's extent is not constant.
  int64_t StagingFloats(const Stmt& s) const;
  bool Staged(const BufferNode* b) const {
    return staging_ != Staging::Off && kinds_.at(b) == BufferKind::Shared;
  }
  // "{ ...; <counter> += lanes; }": in the Load pass, `value` (`lanes`
  // lanes) into the staging array; in the Store pass, the staged value into
  // shared buffer `b` at the printed `index` (as the `aligned` vector when
  // given).
  std::string StagedStore(const BufferNode* b, const std::string& index, const std::string& value, int lanes,
                          const std::optional<std::string>& aligned = std::nullopt);
  void Barrier(const std::string& buffer_hint);
  // A cross-thread reduction's fold (tree_fold.h) printed as a tree over the
  // group's work items; false (nothing printed) where `n` is none or the
  // group does not allow it.
  bool PrintTreeFold(const ForNode* n);

  std::map<const BufferNode*, BufferKind> kinds_;
  std::unordered_set<const ForNode*> unroll_;  // unrolled loops the device compiler unrolls
  Launch launch_;
  // Nesting depth of the loops bound to each slot around the code printed
  // now, and per shared buffer the depth at its allocation: a store tells
  // the work items of a slot apart only under a binding made inside the
  // allocation.
  std::array<int, 6> bound_{};
  std::map<const BufferNode*, std::array<int, 6>> alloc_depth_;
  std::unordered_set<const VarNode*> id_vars_;  // values that differ between work items of a group
  int divergent_ = 0;                           // inside code only some work items of a group reach
  int prefetch_ = 0;                            // inside the fetch of a double-buffered tile: no barriers
  // Register staging of a double-buffered fetch (PrintDoubleBuffered): its
  // stores into shared memory go to the private array `staging_name_` in
  // the Load pass and come out of it into shared memory in the Store pass,
  // in the same order (the counter `staging_name_`_at).
  enum class Staging : uint8_t { Off, Load, Store };
  Staging staging_ = Staging::Off;
  std::string staging_name_;
  int staging_counter_ = 0;
  std::vector<std::string> local_decls_;
  std::unordered_set<const BufferNode*> shared_declared_;  // in local_decls_ (this kernel's)
  int64_t local_bytes_ = 0;
  bool uses_fp64_ = false;
  std::streamoff barrier_end_ = -1;
  Stmt kernel_body_;  // of the kernel being printed
};

std::string OpenCLPrinter::TypeName(DataType t) {
  switch (t.code) {
    case TypeCode::Bool: return "bool";
    case TypeCode::UInt:
      return t.bits == 8 ? "uchar" : t.bits == 16 ? "ushort" : t.bits == 32 ? "uint" : "ulong";
    case TypeCode::Int: return t.bits == 8 ? "char" : t.bits == 16 ? "short" : t.bits == 32 ? "int" : "long";
    case TypeCode::Float:
      if (t.bits == 64) uses_fp64_ = true;
      return t.bits == 64 ? "double" : "float";  // float16 computes in float
    case TypeCode::BFloat: break;                // refused by CheckNoBFloat16
  }
  return "?";
}

std::string OpenCLPrinter::StorageType(const BufferNode* b) {
  if (b->dtype.is_bool()) return "uchar";
  if (b->dtype.is_float16()) return kinds_.at(b) == BufferKind::Param ? "half" : "float";
  return TypeName(b->dtype);
}

std::string OpenCLPrinter::LoadElement(const BufferNode* b, const std::string& index) {
  const std::string name = BufferName(b);
  if (b->dtype.is_bool()) return "(" + name + "[" + index + "] != 0)";
  if (b->dtype.is_float16() && kinds_.at(b) == BufferKind::Param)
    return "vload_half(" + index + ", " + name + ")";
  return name + "[" + index + "]";
}

std::string OpenCLPrinter::StoreElement(const BufferNode* b, const std::string& index,
                                        const std::string& value, DataType value_type) {
  const std::string name = BufferName(b);
  const BufferKind kind = kinds_.at(b);
  std::string store;
  if (Staged(b)) {
    store = StagedStore(b, index, value, 1);
  } else if (b->dtype.is_float16()) {
    store = kind == BufferKind::Param
                ? "vstore_half_rte(" + value + ", " + index + ", " + name + ");"
                : name + "[" + index + "] = " + RoundToHalf(value, DataType::Float(32)) + ";";
  } else if (b->dtype.is_bool()) {
    store = name + "[" + index + "] = (uchar)(" + value + ");";
  } else {
    store = name + "[" + index + "] = " + value + ";";
  }
  const std::string cond = WriterCondition(b);
  return cond.empty() ? store : "if (" + cond + ") " + store;
}

std::string OpenCLPrinter::WriterCondition(const BufferNode* b) {
  const BufferKind kind = kinds_.at(b);
  if (kind == BufferKind::Private) return "";
  // Code outside the binding of a launched dimension runs in every work item
  // of it: one of them writes (__local buffers are per group, so only the
  // work items of a group are told apart).
  std::string cond;
  static const std::array<int, 6> kNone{};
  const auto depth = alloc_depth_.find(b);
  const std::array<int, 6>& at_alloc = depth == alloc_depth_.end() ? kNone : depth->second;
  for (int slot = kind == BufferKind::Shared ? 3 : 0; slot < 6; ++slot) {
    if (launch_.extent[slot] > 1 && bound_[slot] <= at_alloc[slot])
      cond += (cond.empty() ? "" : " && ") + IdCall(slot) + " == 0";
  }
  return cond;
}

namespace {

bool IsFloat32(DataType t) { return t.is_float() && t.bits == 32; }

// The first element of a unit-stride index vector (printed by `print`), or
// nothing for any other index.
template <typename PrintIndexFn>
std::optional<std::string> ContiguousStart(const Expr& index, PrintIndexFn print) {
  const auto* ramp = index.as<RampNode>();
  if (!ramp || ramp->stride != 1) return std::nullopt;
  return print(ramp->base);
}

// A positive number the integer index `e` is known to be a multiple of (1
// when nothing is known): constants, sums, differences, products and
// remainders by a constant keep one. Zero counts as a multiple of
// kAnyMultiple, a power of two larger than any vector.
constexpr int64_t kAnyMultiple = int64_t{1} << 20;
int64_t KnownMultiple(const Expr& e) {
  int64_t c = 0;
  if (GetConstInt(e, &c)) return c == 0 ? kAnyMultiple : std::gcd(c < 0 ? -c : c, kAnyMultiple);
  const auto* n = e.as<BinaryNode>();
  if (n == nullptr) return 1;
  switch (n->op) {
    case BinOp::Add:
    case BinOp::Sub:
    case BinOp::Mod:
    case BinOp::FloorMod: return std::gcd(KnownMultiple(n->a), KnownMultiple(n->b));
    case BinOp::Mul: return std::gcd(KnownMultiple(n->a) * KnownMultiple(n->b), kAnyMultiple);
    default: return 1;
  }
}

// Shared buffers are declared aligned to this many bytes, so a vector of up
// to this size at an element index that is a multiple of its lanes is
// aligned, and is accessed as one vector (ld.shared.v4 on NVIDIA) rather than
// with vloadN, which only assumes the alignment of one element.
constexpr int kSharedAlignBytes = 16;

}  // namespace

// "(*(__local floatN*)(name + start))" for an aligned vector of a shared
// float32 buffer at the Ramp `index`; nothing otherwise.
std::optional<std::string> OpenCLPrinter::AlignedSharedVector(const BufferNode* b, const Expr& index,
                                                              int lanes) {
  const auto* ramp = index.as<RampNode>();
  if (ramp == nullptr || ramp->stride != 1 || kinds_.at(b) != BufferKind::Shared || !IsFloat32(b->dtype) ||
      lanes * 4 > kSharedAlignBytes || KnownMultiple(ramp->base) % lanes != 0)
    return std::nullopt;
  return "(*(__local float" + std::to_string(lanes) + "*)(" + BufferName(b) + " + " + PrintIndex(ramp->base) +
         "))";
}

std::optional<std::string> OpenCLPrinter::VectorValue(const Expr& e, int lanes) {
  const DataType t = e.dtype();
  if (!IsFloat32(t) || t.lanes != lanes) return std::nullopt;
  const std::string vec = "float" + std::to_string(lanes);
  auto print_index = [this](const Expr& x) { return PrintIndex(x); };
  if (const auto* n = e.as<BroadcastNode>()) {
    if (n->value.dtype().lanes != 1) return std::nullopt;
    return "((" + vec + ")(" + PrintExpr(n->value) + "))";
  }
  if (const auto* n = e.as<BufferLoadNode>()) {
    // float32 buffers hold float in every memory space (no half, no uchar).
    if (n->indices.size() != 1 || !IsFloat32(n->buffer->dtype)) return std::nullopt;
    if (auto aligned = AlignedSharedVector(n->buffer.get(), n->indices[0], lanes)) return aligned;
    const std::optional<std::string> start = ContiguousStart(n->indices[0], print_index);
    if (!start) return std::nullopt;
    return "vload" + std::to_string(lanes) + "(0, " + BufferName(n->buffer.get()) + " + " + *start + ")";
  }
  if (const auto* n = e.as<BinaryNode>()) {
    static const std::map<BinOp, std::string> kSymbols = {
        {BinOp::Add, " + "}, {BinOp::Sub, " - "}, {BinOp::Mul, " * "}, {BinOp::Div, " / "}};
    const bool min_max = n->op == BinOp::Max || n->op == BinOp::Min;
    if (!min_max && !kSymbols.count(n->op)) return std::nullopt;
    const std::optional<std::string> a = VectorValue(n->a, lanes), b = VectorValue(n->b, lanes);
    if (!a || !b) return std::nullopt;
    // fmax / fmin and isnan work per component on vectors, so the scalar
    // helper's text serves for the vector type too.
    if (min_max) return PrintFloatMinMax(n->op, t.element_of(), *a, *b, vec);
    return "(" + *a + kSymbols.at(n->op) + *b + ")";
  }
  return std::nullopt;
}

bool OpenCLPrinter::PrintVectorStore(const BufferStoreNode* n) {
  const int lanes = n->value.dtype().lanes;
  const BufferNode* b = n->buffer.get();
  if (lanes != 2 && lanes != 3 && lanes != 4 && lanes != 8 && lanes != 16) return false;
  if (!IsFloat32(b->dtype)) return false;
  const std::optional<std::string> start =
      ContiguousStart(n->indices[0], [this](const Expr& x) { return PrintIndex(x); });
  if (!start) return false;
  const std::optional<std::string> value = VectorValue(n->value, lanes);
  if (!value) return false;
  const std::optional<std::string> aligned = AlignedSharedVector(b, n->indices[0], lanes);
  const std::string store = Staged(b) ? StagedStore(b, *start, *value, lanes, aligned)
                            : aligned ? *aligned + " = " + *value + ";"
                                      : "vstore" + std::to_string(lanes) + "(" + *value + ", 0, " +
                                            BufferName(b) + " + " + *start + ");";
  const std::string cond = WriterCondition(b);
  Line(cond.empty() ? store : "if (" + cond + ") " + store);
  return true;
}

std::string OpenCLPrinter::RoundToHalf(const std::string& x, DataType from) {
  if (from.is_float() && from.bits == 64) {
    NeedHelper("as_round_half_double",
               "float as_round_half_double(double x) {\n  ushort bits;\n"
               "  vstore_half_rte(x, 0, (__private half*)&bits);\n  return vload_half(0, (__private "
               "half*)&bits);\n}\n");
    return "as_round_half_double(" + x + ")";
  }
  NeedHelper("as_round_half",
             "float as_round_half(float x) {\n  ushort bits;\n"
             "  vstore_half_rte(x, 0, (__private half*)&bits);\n  return vload_half(0, (__private "
             "half*)&bits);\n}\n");
  return "as_round_half(" + (from.is_float() ? x : "(float)" + x) + ")";
}

bool OpenCLPrinter::UsesIdVar(const Expr& e) const {
  bool found = false;
  PostOrderVisit(e, [&](const Expr& x) {
    if (const auto* v = x.as<VarNode>(); v && id_vars_.count(v)) found = true;
  });
  return found;
}

bool OpenCLPrinter::WritesShared(const Stmt& s) const {
  bool found = false;
  PostOrderVisitStmt(s, [&](const Stmt& x) {
    const auto* st = x.as<BufferStoreNode>();
    if (st && kinds_.count(st->buffer.get()) && kinds_.at(st->buffer.get()) == BufferKind::Shared)
      found = true;
  });
  return found;
}

bool OpenCLPrinter::PipelinesRegisters(const Stmt& s) const {
  Stmt body = s;
  while (const auto* a = body.as<AllocateNode>()) body = a->body;
  const auto* p = body.as<PragmaNode>();
  if (p == nullptr || p->key != "double_buffer") return false;
  const auto* q = p->body.as<SeqNode>();
  return !WritesShared(q != nullptr && !q->seq.empty() ? q->seq[0] : p->body);
}

void OpenCLPrinter::Barrier(const std::string& where) {
  if (body_.tellp() == barrier_end_) return;  // one barrier is enough
  AS_CHECK(divergent_ == 0,
           "OpenCL code generation: the __local buffer written by "
               << where
               << " needs a barrier, but it would sit in code that only some work items of a "
                  "group reach (under a guarded threadIdx loop or a condition on the thread "
                  "index); bind the threads with extents that match");
  Line("barrier(CLK_LOCAL_MEM_FENCE);");
  barrier_end_ = body_.tellp();
}

// Most floats a work item stages in registers for one double-buffered fetch.
constexpr int64_t kMaxStagingFloats = 32;

int64_t OpenCLPrinter::StagingFloats(const Stmt& s) const {
  if (!s.defined()) return 0;
  if (const auto* n = s.as<ForNode>()) {
    const int64_t body = StagingFloats(n->body);
    if (body < 0 || BindingSlot(n->for_kind) >= 0) return body;  // a bound loop: once per work item
    int64_t extent = 0;
    return GetConstInt(n->extent, &extent) ? body * extent : -1;
  }
  if (const auto* n = s.as<BufferStoreNode>()) {
    const auto kind = kinds_.find(n->buffer.get());
    const bool shared = kind != kinds_.end() && kind->second == BufferKind::Shared;
    return shared && IsFloat32(n->buffer->dtype) ? n->value.dtype().lanes : -1;
  }
  if (const auto* n = s.as<IfThenElseNode>()) {
    const int64_t a = StagingFloats(n->then_case), b = StagingFloats(n->else_case);
    return a < 0 || b < 0 ? -1 : a + b;
  }
  if (const auto* n = s.as<SeqNode>()) {
    int64_t total = 0;
    for (const Stmt& x : n->seq) {
      const int64_t part = StagingFloats(x);
      if (part < 0) return -1;
      total += part;
    }
    return total;
  }
  if (const auto* n = s.as<LetStmtNode>()) return StagingFloats(n->body);
  return -1;
}

std::string OpenCLPrinter::StagedStore(const BufferNode* b, const std::string& index,
                                       const std::string& value, int lanes,
                                       const std::optional<std::string>& aligned) {
  const std::string at = staging_name_ + "_at", n = std::to_string(lanes);
  std::string store;
  if (staging_ == Staging::Load) {
    store = lanes == 1 ? staging_name_ + "[" + at + "] = " + value + ";"
                       : "vstore" + n + "(" + value + ", 0, " + staging_name_ + " + " + at + ");";
  } else {
    const std::string staged = "vload" + n + "(0, " + staging_name_ + " + " + at + ")";
    store = lanes == 1 ? BufferName(b) + "[" + index + "] = " + staging_name_ + "[" + at + "];"
            : aligned  ? *aligned + " = " + staged + ";"
                       : "vstore" + n + "(" + staged + ", 0, " + BufferName(b) + " + " + index + ");";
  }
  return "{ " + store + " " + at + " += " + n + "; }";
}

// Seq{fetch of the next tile into the other copy, the rest}: the fetch writes
// the copy read in the previous iteration, which the barrier at the end of
// that iteration protects, and this one's barrier makes it visible to the
// next. A fetch of at most kMaxStagingFloats per work item is staged in
// registers: its global loads are issued first and stay in flight while the
// rest computes from the current copy, and its stores into shared memory
// come after the rest (a store right after its load would wait out the
// load's latency before the compute could start).
void OpenCLPrinter::PrintDoubleBuffered(const std::vector<Stmt>& seq, bool barrier_after) {
  if (seq.empty()) return;
  const int64_t floats = StagingFloats(seq[0]);
  const bool staged = floats > 0 && floats <= kMaxStagingFloats && staging_ == Staging::Off;
  const std::string name = staged ? "prefetch" + std::to_string(staging_counter_++) : "";
  if (staged) {
    staging_name_ = name;
    Line("float " + name + "[" + std::to_string(floats) + "];");
    Line("int " + name + "_at = 0;");
    staging_ = Staging::Load;
  }
  ++prefetch_;
  PrintStmt(seq[0]);
  --prefetch_;
  if (staged) staging_ = Staging::Off;
  // Another double-buffered stage at the same loop (its pragma is the rest):
  // its stores come before this one's, and this one's barrier serves both.
  const auto* inner = seq.size() == 2 ? seq[1].as<PragmaNode>() : nullptr;
  if (inner != nullptr && inner->key == "double_buffer") {
    const auto* q = inner->body.as<SeqNode>();
    PrintDoubleBuffered(q ? q->seq : std::vector<Stmt>{inner->body}, /*barrier_after=*/false);
  } else {
    for (size_t k = 1; k < seq.size(); ++k) PrintStmt(seq[k]);
  }
  if (staged) {
    staging_name_ = name;  // a nested stage had its own
    Line(name + "_at = 0;");
    staging_ = Staging::Store;
    ++prefetch_;
    PrintStmt(seq[0]);
    --prefetch_;
    staging_ = Staging::Off;
  }
  if (barrier_after) Barrier("a double-buffered fetch");
}

void OpenCLPrinter::PrintStmt(const Stmt& s) {
  if (!s.defined()) return;
  if (const auto* p = s.as<PragmaNode>(); p && p->key == "double_buffer") {
    // A register tile's fetch needs neither staging nor a barrier: its
    // loads from shared memory are issued first and complete while the rest
    // computes from the other copy.
    if (PipelinesRegisters(s)) {
      PrintStmt(p->body);
      return;
    }
    const auto* q = p->body.as<SeqNode>();
    PrintDoubleBuffered(q ? q->seq : std::vector<Stmt>{p->body}, /*barrier_after=*/true);
    return;
  }
  if (const auto* q = s.as<SeqNode>()) {
    for (const Stmt& x : q->seq) {
      const bool shared = prefetch_ == 0 && WritesShared(x);
      if (shared) Barrier("a statement");  // readers of the previous round are done
      PrintStmt(x);
      if (shared) Barrier("a statement");  // the writes are visible to the group
    }
    return;
  }
  if (const auto* n = s.as<IfThenElseNode>()) {
    const int div = UsesIdVar(n->condition) ? 1 : 0;
    divergent_ += div;
    CPrinter::PrintStmt(s);
    divergent_ -= div;
    return;
  }
  if (const auto* n = s.as<LetStmtNode>(); n && UsesIdVar(n->value)) id_vars_.insert(n->var.as<VarNode>());
  CPrinter::PrintStmt(s);
}

bool OpenCLPrinter::PrintTreeFold(const ForNode* n) {
  // Every work item of a one-dimensional group reaches the fold.
  if (divergent_ > 0 || prefetch_ > 0 || staging_ != Staging::Off || bound_[3] + bound_[4] + bound_[5] > 0 ||
      launch_.extent[4] > 1 || launch_.extent[5] > 1)
    return false;
  const std::optional<TreeFold> fold = MatchTreeFold(n, kernel_body_);
  if (!fold || fold->count > launch_.extent[3]) return false;
  const BufferNode* p = fold->partials.get();
  const DataType t = fold->store->value.dtype();
  const bool plain_type = (t.is_float() || t.is_int()) && t.bits == 32 && p->dtype == t;
  if (kinds_.at(p) != BufferKind::Shared || !plain_type) return false;
  int64_t half = 1;  // the largest power of two below the count
  while (half * 2 < fold->count) half *= 2;
  const std::string name = BufferName(p), base = FreshName("tree_base"), item = FreshName("tree_item"),
                    width = FreshName("tree_width");
  auto fold_step = [&](const std::string& offset) {
    const std::string at = name + "[" + base + " + " + item + "]";
    const std::string other = name + "[" + base + " + " + item + " + " + offset + "]";
    return at + " = " + PrintArith(fold->op, t, at, other) + ";";
  };
  Barrier("the partial results of a reduction");
  Open("");
  Line("const int " + base + " = " + PrintIndex(fold->base) + ";");
  Line("const int " + item + " = (int)get_local_id(0);");
  Line("if (" + item + " < " + std::to_string(fold->count - half) + ") " + fold_step(std::to_string(half)));
  Barrier("a step of a reduction's tree");
  if (half > 1) {
    Open("for (int " + width + " = " + std::to_string(half / 2) + "; " + width + " > 0; " + width +
         " >>= 1)");
    Line("if (" + item + " < " + width + ") " + fold_step(width));
    Barrier("a step of a reduction's tree");
    Close();
  }
  Close();
  // X[i] = X[i] op P[b]: the loop's body at v = 0 (work item 0 writes).
  PrintStmt(SubstituteStmt(n->body, {{n->loop_var.as<VarNode>(), IntImmNode::make(n->loop_var.dtype(), 0)}}));
  return true;
}

void OpenCLPrinter::PrintFor(const ForNode* n) {
  const VarNode* var = n->loop_var.as<VarNode>();
  const int slot = BindingSlot(n->for_kind);
  if (slot < 0 && PrintTreeFold(n)) return;
  if (slot < 0) {  // serial (parallel, unrolled, vthread and unvectorized loops run serially too)
    const int div = UsesIdVar(n->min) || UsesIdVar(n->extent) ? 1 : 0;
    divergent_ += div;
    // Unrolled loops within the kernel's unroll budget (codegen/unroll_budget.h)
    // are unrolled by the device's compiler: a private array indexed by their
    // variables can then live in registers.
    int64_t extent = 0;
    const bool staged = staging_ != Staging::Off && GetConstInt(n->extent, &extent);
    // A virtual-thread loop (a few iterations, after injection innermost)
    // indexes its private copies: unrolled, they stay in registers.
    if ((n->for_kind == ForKind::Unrolled && unroll_.count(n)) || n->for_kind == ForKind::VThread || staged)
      Line("#pragma unroll");
    else if (PipelinesRegisters(n->body))  // by two: each copy of a register tile is indexed by a constant
      Line("#pragma unroll 2");
    CPrinter::PrintFor(n);
    divergent_ -= div;
    return;
  }
  int64_t extent = 0;
  GetConstInt(n->extent, &extent);
  const bool guarded = extent < launch_.extent[slot];
  Open("");
  int64_t min = 0;
  const std::string offset = GetConstInt(n->min, &min) && min == 0 ? "" : PrintIndex(n->min) + " + ";
  Line("const int " + VarName(var) + " = " + offset + "(int)" + IdCall(slot) + ";  // " +
       ForKindName(n->for_kind));
  if (guarded) Open("if (" + IdCall(slot) + " < " + std::to_string(extent) + ")");
  const int div = slot >= 3 && guarded ? 1 : 0;
  divergent_ += div;
  if (slot >= 3) id_vars_.insert(var);
  if (KnownNonNegative(n->min)) NoteNonNegative(var);
  ++bound_[slot];
  PrintStmt(n->body);
  --bound_[slot];
  divergent_ -= div;
  if (guarded) Close();
  Close();
}

void OpenCLPrinter::PrintAllocate(const AllocateNode* n) {
  const BufferNode* b = n->buffer.get();
  const int64_t bytes = BufferBytes(*b);
  const int64_t count = bytes / std::max(1, b->dtype.bytes());
  AS_CHECK(count > 0, "OpenCL code generation: buffer '" << b->name << "' has no elements");
  const bool shared = b->scope == MemScope::Shared;
  if (shared) {
    // Bound inference gives a shared stage inside threadIdx loops the region
    // of the whole group, so every work item sees the same buffer.
    alloc_depth_[b] = bound_;
  } else if (const ForNode* binding = BindingAroundStore(n->body, b)) {
    AS_CHECK(false,
             "OpenCL code generation: buffer '"
                 << b->name << "' (scope " << MemScopeName(b->scope) << ") is private to each work item, "
                 << "but it is written under loop '" << LoopName(binding) << "' bound to "
                 << ForKindName(binding->for_kind)
                 << ", so each work item would hold only its part; give it scope 'shared' or do not bind "
                    "its loops");
  }
  kinds_[b] = shared ? BufferKind::Shared : BufferKind::Private;
  const std::string name = BufferName(b);
  const std::string decl = StorageType(b) + " " + name + "[" + std::to_string(count) + "]";
  if (shared) {
    // Allocated again later in the kernel (in sequence, so never live twice):
    // the group's one __local array serves every allocation.
    if (shared_declared_.insert(b).second) {
      local_decls_.push_back("__local " + decl + " __attribute__((aligned(" +
                             std::to_string(kSharedAlignBytes) + ")));");
      local_bytes_ += count * (b->dtype.is_bool() ? 1 : b->dtype.bits == 16 ? 4 : b->dtype.bytes());
    }
    PrintStmt(n->body);
    return;
  }
  // A private buffer allocated again in the same C scope (the copies of a
  // partitioned loop whose extent-1 loops were removed) is declared in a
  // block of its own.
  const bool again = DeclaredInScope(name);
  if (again) Open("");
  Declare(name);
  Line(decl + ";");
  PrintStmt(n->body);
  if (again) Close();
}

std::string OpenCLPrinter::PrintKernel(const std::string& name, const Stmt& body,
                                       const std::vector<int>& params, const std::vector<Buffer>& buffers,
                                       const Launch& launch, int64_t* local_bytes) {
  launch_ = launch;
  local_decls_.clear();
  shared_declared_.clear();
  ResetScopes();
  local_bytes_ = 0;
  barrier_end_ = -1;
  kernel_body_ = body;
  TakeBody();
  indent_ = 1;
  PrintStmt(body);
  const std::string text = TakeBody();
  std::string head = "__kernel __attribute__((reqd_work_group_size(" + std::to_string(launch.extent[3]) +
                     ", " + std::to_string(launch.extent[4]) + ", " + std::to_string(launch.extent[5]) +
                     ")))\nvoid " + name + "(";
  for (size_t i = 0; i < params.size(); ++i) {
    const BufferNode* b = buffers[params[i]].get();
    head += (i ? ", " : "") + std::string("__global ") + (StoresTo(body, b) ? "" : "const ") +
            StorageType(b) + "* restrict " + BufferName(b);
  }
  head += ") {\n";
  for (const std::string& d : local_decls_) head += "  " + d + "\n";
  *local_bytes = local_bytes_;
  return head + text + "}\n";
}

}  // namespace

OpenCLProgramSpec GenerateOpenCL(const LoweredFunc& f) {
  OpenCLProgramSpec spec;
  spec.buffers = f.args;
  spec.num_args = f.args.size();
  std::vector<Stmt> nests;
  std::vector<Buffer> temps;
  Peel(f.body, &temps, &nests);
  spec.buffers.insert(spec.buffers.end(), temps.begin(), temps.end());
  CheckNoBFloat16(f, spec.buffers);
  std::map<const BufferNode*, int> index;
  for (size_t i = 0; i < spec.buffers.size(); ++i) index[spec.buffers[i].get()] = static_cast<int>(i);

  OpenCLPrinter printer(spec.buffers, LoopsToUnroll(f.body));
  std::string kernels;
  for (size_t k = 0; k < nests.size(); ++k) {
    OpenCLKernelSpec kernel;
    kernel.name = f.name + "_kernel" + std::to_string(k);
    std::array<const ForNode*, 6> bound{};
    Launch launch;
    AnalyzeLaunch(nests[k], &bound, &launch);
    for (int d = 0; d < 3; ++d) {
      kernel.num_groups[d] = launch.extent[d];
      kernel.group_size[d] = launch.extent[3 + d];
    }
    for (const BufferNode* b : UsedBuffers(nests[k])) {
      if (index.count(b)) kernel.buffers.push_back(index[b]);
    }
    kernels += "\n" + printer.PrintKernel(kernel.name, nests[k], kernel.buffers, spec.buffers, launch,
                                          &kernel.local_memory_bytes);
    spec.kernels.push_back(kernel);
  }
  spec.uses_fp64 = printer.uses_fp64();
  std::string head = "// OpenCL C generated by autosched for '" + f.name + "'\n";
  if (spec.uses_fp64) head += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  const std::string helpers = printer.HelperText();
  spec.source = head + (helpers.empty() ? "" : "\n" + helpers) + kernels;
  return spec;
}

}  // namespace autosched
