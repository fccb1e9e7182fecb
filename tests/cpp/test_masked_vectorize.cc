// Vectorizing a guarded loop under a lane mask: stores to memory are
// predicated, register tiles keep their old lanes through a select, loads
// that could leave their buffer read only the lanes the mask holds, and GPU
// kernels keep their guards scalar.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <numeric>

#include "codegen/build.h"
#include "lower/lower.h"
#include "lower/passes/flatten_storage.h"
#include "lower/passes/vectorize_loops.h"
#include "lower/stmt_functor.h"
#include "lower/stmt_printer.h"

namespace autosched {
namespace {

DataType f32 = DataType::Float(32);

Stmt Loop(const Expr& v, int min, int extent, ForKind kind, Stmt body) {
  return ForNode::make(v, min, extent, kind, body);
}

int CountVectorIfs(const Stmt& s) {
  int n = 0;
  PostOrderVisitStmt(s, [&](const Stmt& x) {
    const auto* branch = x.as<IfThenElseNode>();
    n += branch && branch->condition.dtype().lanes > 1;
  });
  return n;
}

int CountGuardedLoads(const Stmt& s) {
  int n = 0;
  VisitStmtExprs(s, [&](const Expr& e) {
    PostOrderVisit(e, [&](const Expr& x) {
      const auto* call = x.as<CallNode>();
      n += call && call->op == Intrinsic::IfThenElse && call->args[0].dtype().lanes > 1;
    });
  });
  return n;
}

// C[j] = A[j] * 2 for j < n, over tiles of 16: j = j.0*16 + j.1.
struct GuardedRow {
  int n;
  Buffer a, c;
  Expr jo = VarNode::make("j.0"), ji = VarNode::make("j.1");
  explicit GuardedRow(int n_) : n(n_), a(MakeBuffer("A", f32, {n_})), c(MakeBuffer("C", f32, {n_})) {}

  Stmt Make() const {
    Expr j = jo * 16 + ji;
    Stmt store = BufferStoreNode::make(c, BufferLoadNode::make(a, {j}) * 2.0f, {j});
    return Loop(jo, 0, (n + 15) / 16, ForKind::Serial,
                Loop(ji, 0, 16, ForKind::Vectorized, IfThenElseNode::make(j < n, store)));
  }
};

TEST(MaskedVectorizeTest, GuardedStoreIsPredicatedAndItsLoadMasked) {
  GuardedRow row(41);
  Stmt v = VectorizeLoops(FlattenStorage(row.Make()));
  EXPECT_EQ(CountVectorIfs(v), 1) << v;     // C's store writes only lanes j < 41
  EXPECT_EQ(CountGuardedLoads(v), 1) << v;  // A's load could pass its end
}

// A float array of n elements that ends where a page the process may not
// touch begins: a read or write past its end faults.
class FencedArray {
 public:
  explicit FencedArray(int n) {
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t bytes = n * sizeof(float);
    size_t pages = (bytes + page - 1) / page;
    size_ = (pages + 1) * page;
    base_ =
        static_cast<char*>(mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(base_, MAP_FAILED);
    EXPECT_EQ(mprotect(base_ + pages * page, page, PROT_NONE), 0);
    data_ = reinterpret_cast<float*>(base_ + pages * page - bytes);
  }
  ~FencedArray() { munmap(base_, size_); }
  float* data() { return data_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
  float* data_ = nullptr;
};

TEST(MaskedVectorizeTest, MaskedLanesTouchNothingPastTheBuffers) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "no LLVM backend in this build";
  for (int n : {41, 17, 3, 1, 64}) {
    GuardedRow row(n);
    LoweredFunc lowered = RunLoweringPasses({"row", {row.a, row.c}, row.Make()});
    FencedArray a(n), c(n);
    std::iota(a.data(), a.data() + n, 1.0f);
    std::fill(c.data(), c.data() + n, -1.0f);
    Module m = Build(lowered, Target::Parse("llvm"));
    m.Call({CallArg{a.data(), f32, {n}, true}, CallArg{c.data(), f32, {n}, true}});
    for (int x = 0; x < n; ++x) ASSERT_FLOAT_EQ(c.data()[x], a.data()[x] * 2.0f) << "n " << n << " at " << x;
  }
}

// A register tile: T[j.1] (local, 16 wide) accumulates A[k, j] over k, then
// C[j] = T[j.1], all under the guard j < n.
struct GuardedTile {
  int n, k = 5;
  Buffer a, c, tile;
  Expr jo = VarNode::make("j.0"), ji = VarNode::make("j.1"), ki = VarNode::make("k"),
       jw = VarNode::make("j.w");

  explicit GuardedTile(int n_)
      : n(n_),
        a(MakeBuffer("A", f32, {5, n_})),
        c(MakeBuffer("C", f32, {n_})),
        tile(MakeBuffer("T", f32, {16}, MemScope::Local)) {}

  Stmt Make() const {
    Expr j = jo * 16 + ji, jb = jo * 16 + jw;
    Stmt init = Loop(ji, 0, 16, ForKind::Vectorized,
                     IfThenElseNode::make(j < n, BufferStoreNode::make(tile, Expr(0.0f), {ji})));
    Stmt update = BufferStoreNode::make(
        tile, BufferLoadNode::make(tile, {ji}) + BufferLoadNode::make(a, {ki, j}), {ji});
    Stmt reduce = Loop(ki, 0, k, ForKind::Serial,
                       Loop(ji, 0, 16, ForKind::Vectorized, IfThenElseNode::make(j < n, update)));
    Stmt write =
        Loop(jw, 0, 16, ForKind::Vectorized,
             IfThenElseNode::make(jb < n, BufferStoreNode::make(c, BufferLoadNode::make(tile, {jw}), {jb})));
    return Loop(jo, 0, (n + 15) / 16, ForKind::Serial,
                AllocateNode::make(tile, SeqNode::make({init, reduce, write})));
  }
};

TEST(MaskedVectorizeTest, RegisterTileKeepsItsLanesThroughASelect) {
  GuardedTile nest(41);
  Stmt v = VectorizeLoops(FlattenStorage(nest.Make()));
  // Only the store to C is predicated; T's stores select, its loads are plain.
  EXPECT_EQ(CountVectorIfs(v), 1) << v;
  int selects = 0;
  VisitStmtExprs(v, [&](const Expr& e) {
    PostOrderVisit(e, [&](const Expr& x) { selects += x.as<SelectNode>() != nullptr; });
  });
  EXPECT_EQ(selects, 2) << v;               // the init and the update
  EXPECT_EQ(CountGuardedLoads(v), 1) << v;  // A's, which could pass its end
  if (!HasLLVMBackend()) return;
  for (int n : {41, 16, 7}) {
    GuardedTile tile(n);
    LoweredFunc lowered = RunLoweringPasses({"tile", {tile.a, tile.c}, tile.Make()});
    FencedArray a(5 * n), c(n);
    std::iota(a.data(), a.data() + 5 * n, 1.0f);
    Module m = Build(lowered, Target::Parse("llvm"));
    m.Call({CallArg{a.data(), f32, {5, n}, true}, CallArg{c.data(), f32, {n}, true}});
    for (int x = 0; x < n; ++x) {
      float want = 0;
      for (int r = 0; r < 5; ++r) want += a.data()[r * n + x];
      ASSERT_FLOAT_EQ(c.data()[x], want) << "n " << n << " at " << x;
    }
  }
}

TEST(MaskedVectorizeTest, GpuKernelKeepsItsGuardsScalar) {
  // OpenCL C has no masked vector store: a function with work-item loops
  // leaves a guarded vector loop to the scalar fallback.
  GuardedRow row(41);
  Expr tx = VarNode::make("threadIdx.x");
  Stmt kernel = Loop(tx, 0, 4, ForKind::ThreadIdxX, row.Make());
  Stmt v = VectorizeLoops(FlattenStorage(kernel));
  EXPECT_EQ(CountVectorIfs(v), 0) << v;
  EXPECT_EQ(CountGuardedLoads(v), 0) << v;
}

}  // namespace
}  // namespace autosched
