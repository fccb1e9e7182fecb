// InjectVirtualThreads on hand-built loop nests: what runs once, which
// private buffers get a copy per virtual thread, and when the loop stays.
#include <gtest/gtest.h>

#include "lower/passes/inject_vthreads.h"
#include "lower/stmt_functor.h"
#include "lower/stmt_printer.h"

namespace autosched {
namespace {

DataType f32 = DataType::Float(32);

Stmt Loop(const Expr& v, int extent, ForKind kind, Stmt body) {
  return ForNode::make(v, 0, extent, kind, body);
}

// Number of VThread loops around each store to `buffer`, one entry per store.
std::vector<int> VThreadDepths(const Stmt& s, const BufferNode* buffer) {
  std::vector<int> depths;
  std::function<void(const Stmt&, int)> walk = [&](const Stmt& x, int depth) {
    if (!x.defined()) return;
    if (const auto* f = x.as<ForNode>()) return walk(f->body, depth + (f->for_kind == ForKind::VThread));
    if (const auto* st = x.as<BufferStoreNode>()) {
      if (st->buffer.get() == buffer) depths.push_back(depth);
      return;
    }
    if (const auto* a = x.as<AllocateNode>()) return walk(a->body, depth);
    if (const auto* q = x.as<SeqNode>()) {
      for (const Stmt& y : q->seq) walk(y, depth);
      return;
    }
    if (const auto* c = x.as<IfThenElseNode>()) {
      walk(c->then_case, depth);
      return walk(c->else_case, depth);
    }
    if (const auto* l = x.as<LetStmtNode>()) return walk(l->body, depth);
    if (const auto* p = x.as<PragmaNode>()) return walk(p->body, depth);
  };
  walk(s, 0);
  return depths;
}

const BufferNode* AllocatedNamed(const Stmt& s, const std::string& name) {
  const BufferNode* found = nullptr;
  PostOrderVisitStmt(s, [&](const Stmt& x) {
    if (const auto* a = x.as<AllocateNode>(); a && a->buffer->name == name) found = a->buffer.get();
  });
  return found;
}

// for vt (vthread 2): shared S <- A once per k; private row <- S (the same
// for every vt); private acc[2] += row * B[vt]; C[vt] <- acc.
struct Nest {
  Buffer a = MakeBuffer("A", f32, {8}), b = MakeBuffer("B", f32, {2, 2}), c = MakeBuffer("C", f32, {2, 2});
  Buffer shared = MakeBuffer("S", f32, {1}, MemScope::Shared),
         row = MakeBuffer("row", f32, {1}, MemScope::Local),
         acc = MakeBuffer("acc", f32, {2}, MemScope::Local);
  Expr vt = VarNode::make("vt"), k = VarNode::make("k"), j = VarNode::make("j"), j2 = VarNode::make("j2"),
       j3 = VarNode::make("j3");

  Stmt Build(const Expr& shared_index) const {
    Stmt fetch = BufferStoreNode::make(shared, BufferLoadNode::make(a, {k}), {shared_index});
    Stmt load_row = BufferStoreNode::make(row, BufferLoadNode::make(shared, {shared_index}), {0});
    Stmt update =
        Loop(j, 2, ForKind::Unrolled,
             BufferStoreNode::make(acc,
                                   BufferLoadNode::make(acc, {j}) +
                                       BufferLoadNode::make(row, {0}) * BufferLoadNode::make(b, {vt, j}),
                                   {j}));
    Stmt body = SeqNode::make({
        Loop(j2, 2, ForKind::Unrolled, BufferStoreNode::make(acc, Expr(0.0f), {j2})),
        Loop(k, 8, ForKind::Serial,
             AllocateNode::make(
                 shared, SeqNode::make({fetch, AllocateNode::make(row, SeqNode::make({load_row, update}))}))),
        Loop(j3, 2, ForKind::Unrolled, BufferStoreNode::make(c, BufferLoadNode::make(acc, {j3}), {vt, j3})),
    });
    return Loop(vt, 2, ForKind::VThread, AllocateNode::make(acc, body));
  }
};

TEST(InjectVThreadsTest, SharedFetchAndCommonRowRunOnceAccumulatorsGetACopyEach) {
  Nest n;
  Stmt injected = InjectVirtualThreads(n.Build(Expr(0)));
  const std::string text = ToString(injected);
  EXPECT_EQ(VThreadDepths(injected, n.shared.get()), std::vector<int>({0})) << text;
  EXPECT_EQ(VThreadDepths(injected, n.row.get()), std::vector<int>({0})) << text;
  const BufferNode* acc = AllocatedNamed(injected, "acc");
  ASSERT_NE(acc, nullptr) << text;
  EXPECT_EQ(acc->shape, std::vector<int64_t>({2, 2})) << text;
  // init, update and the final store each run per virtual thread, innermost.
  EXPECT_EQ(VThreadDepths(injected, acc), std::vector<int>({1, 1})) << text;
  EXPECT_EQ(VThreadDepths(injected, n.c.get()), std::vector<int>({1})) << text;
  PostOrderVisitStmt(injected, [&](const Stmt& x) {
    const auto* f = x.as<ForNode>();
    if (f && f->for_kind == ForKind::VThread) EXPECT_TRUE(f->body.as<BufferStoreNode>()) << text;
  });
}

TEST(InjectVThreadsTest, SharedBufferWrittenPerVirtualThreadKeepsTheLoopOutside) {
  Nest n;
  Stmt nest = n.Build(n.vt);  // each virtual thread writes its own element of S
  Stmt injected = InjectVirtualThreads(nest);
  EXPECT_TRUE(injected.same_as(nest)) << ToString(injected);
}

}  // namespace
}  // namespace autosched
