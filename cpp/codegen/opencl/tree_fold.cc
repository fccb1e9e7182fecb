#include "codegen/opencl/tree_fold.h"

#include "ir/functor.h"
#include "ir/structural.h"
#include "lower/stmt_functor.h"

namespace autosched {
namespace {

bool LoadsAt(const Expr& e, const BufferNode* buffer, const Expr& index) {
  const auto* load = e.as<BufferLoadNode>();
  return load != nullptr && load->buffer.get() == buffer && load->indices.size() == 1 &&
         StructuralEqual(load->indices[0], index);
}

// b where `index` is b + v, v + b or v (b free of v).
std::optional<Expr> BaseOf(const Expr& index, const VarNode* v) {
  if (index.as<VarNode>() == v) return Expr(IntImmNode::make(index.dtype(), 0));
  const auto* add = index.as<BinaryNode>();
  if (add == nullptr || add->op != BinOp::Add) return std::nullopt;
  if (add->b.as<VarNode>() == v && !UsesVar(add->a, v)) return add->a;
  if (add->a.as<VarNode>() == v && !UsesVar(add->b, v)) return add->b;
  return std::nullopt;
}

// Loads of `buffer` in `s`, except in the stores into it (a reduction's
// partial results read as they accumulate).
int CountLoads(const Stmt& s, const BufferNode* buffer) {
  int count = 0;
  auto count_in = [&](const Expr& e) {
    PostOrderVisit(e, [&](const Expr& x) {
      if (const auto* load = x.as<BufferLoadNode>(); load && load->buffer.get() == buffer) ++count;
    });
  };
  PostOrderVisitStmt(s, [&](const Stmt& x) {
    if (const auto* n = x.as<BufferStoreNode>()) {
      if (n->buffer.get() == buffer) return;
      count_in(n->value);
      for (const Expr& i : n->indices) count_in(i);
    } else if (const auto* n = x.as<IfThenElseNode>()) {
      count_in(n->condition);
    } else if (const auto* n = x.as<ForNode>()) {
      count_in(n->min);
      count_in(n->extent);
    } else if (const auto* n = x.as<LetStmtNode>()) {
      count_in(n->value);
    }
  });
  return count;
}

}  // namespace

std::optional<TreeFold> MatchTreeFold(const ForNode* loop, const Stmt& kernel) {
  int64_t min = -1, count = 0;
  if (!GetConstInt(loop->min, &min) || min != 0 || !GetConstInt(loop->extent, &count) || count < 2)
    return std::nullopt;
  const auto* v = loop->loop_var.as<VarNode>();
  const auto* store = loop->body.as<BufferStoreNode>();
  if (store == nullptr || store->indices.size() != 1 || store->value.dtype().lanes != 1 ||
      UsesVar(store->indices[0], v))
    return std::nullopt;
  const auto* value = store->value.as<BinaryNode>();
  if (value == nullptr || (value->op != BinOp::Add && value->op != BinOp::Mul && value->op != BinOp::Max &&
                           value->op != BinOp::Min))
    return std::nullopt;
  const BufferNode* x = store->buffer.get();
  const Expr& other = LoadsAt(value->a, x, store->indices[0])   ? value->b
                      : LoadsAt(value->b, x, store->indices[0]) ? value->a
                                                                : Expr();
  const auto* partial = other.defined() ? other.as<BufferLoadNode>() : nullptr;
  if (partial == nullptr || partial->buffer.get() == x || partial->indices.size() != 1) return std::nullopt;
  const std::optional<Expr> base = BaseOf(partial->indices[0], v);
  if (!base) return std::nullopt;
  const Stmt body = loop->body;
  if (CountLoads(kernel, partial->buffer.get()) != CountLoads(body, partial->buffer.get()))
    return std::nullopt;
  return TreeFold{store, value->op, partial->buffer, *base, count};
}

}  // namespace autosched
