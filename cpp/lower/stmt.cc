#include "lower/stmt.h"

#include "support/error.h"

namespace autosched {

const char* ForKindName(ForKind k) {
  switch (k) {
    case ForKind::Serial: return "serial";
    case ForKind::Parallel: return "parallel";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Unrolled: return "unrolled";
    case ForKind::VThread: return "vthread";
    case ForKind::BlockIdxX: return "blockIdx.x";
    case ForKind::BlockIdxY: return "blockIdx.y";
    case ForKind::BlockIdxZ: return "blockIdx.z";
    case ForKind::ThreadIdxX: return "threadIdx.x";
    case ForKind::ThreadIdxY: return "threadIdx.y";
    case ForKind::ThreadIdxZ: return "threadIdx.z";
  }
  return "?";
}

bool IsGpuBinding(ForKind k) { return k >= ForKind::BlockIdxX; }

Stmt ForNode::make(Expr loop_var, Expr min, Expr extent, ForKind kind, Stmt body) {
  AS_CHECK(loop_var.as<VarNode>() != nullptr, "for loop over a non-variable");
  AS_CHECK(min.defined() && extent.defined(),
           "for loop '" << loop_var.as<VarNode>()->name << "' without bounds");
  AS_CHECK(body.defined(), "for loop '" << loop_var.as<VarNode>()->name << "' without body");
  return Stmt(std::make_shared<ForNode>(std::move(loop_var), std::move(min), std::move(extent), kind,
                                        std::move(body)));
}

Stmt BufferStoreNode::make(Buffer buffer, Expr value, std::vector<Expr> indices) {
  AS_CHECK(buffer != nullptr, "store to an undefined buffer");
  AS_CHECK(!indices.empty(), "store to buffer '" << buffer->name << "' without indices");
  AS_TYPE_CHECK(value.dtype().element_of() == buffer->dtype, "store of " << value.dtype().str() << " into "
                                                                         << buffer->dtype.str() << " buffer '"
                                                                         << buffer->name << "'");
  return Stmt(std::make_shared<BufferStoreNode>(std::move(buffer), std::move(value), std::move(indices)));
}

Stmt AllocateNode::make(Buffer buffer, Stmt body) {
  AS_CHECK(buffer != nullptr && body.defined(), "incomplete allocation");
  return Stmt(std::make_shared<AllocateNode>(std::move(buffer), std::move(body)));
}

Stmt IfThenElseNode::make(Expr condition, Stmt then_case, Stmt else_case) {
  AS_TYPE_CHECK(condition.defined() && condition.dtype().with_lanes(1) == DataType::Bool(),
                "if condition must be a bool (or a vector of bools predicating lanes)");
  AS_CHECK(then_case.defined(), "if without a then branch");
  return Stmt(
      std::make_shared<IfThenElseNode>(std::move(condition), std::move(then_case), std::move(else_case)));
}

Stmt SeqNode::make(std::vector<Stmt> seq) {
  std::vector<Stmt> flat;
  for (Stmt& s : seq) {
    if (!s.defined()) continue;
    if (const auto* inner = s.as<SeqNode>()) {
      flat.insert(flat.end(), inner->seq.begin(), inner->seq.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.size() == 1) return flat[0];
  return Stmt(std::make_shared<SeqNode>(std::move(flat)));
}

Stmt LetStmtNode::make(Expr var, Expr value, Stmt body) {
  AS_CHECK(var.as<VarNode>() != nullptr, "let binds a non-variable");
  AS_TYPE_CHECK(var.dtype() == value.dtype(),
                "let binds a " << var.dtype().str() << " variable to a " << value.dtype().str() << " value");
  return Stmt(std::make_shared<LetStmtNode>(std::move(var), std::move(value), std::move(body)));
}

Stmt PragmaNode::make(std::string key, int64_t value, Stmt body) {
  return Stmt(std::make_shared<PragmaNode>(std::move(key), value, std::move(body)));
}

}  // namespace autosched
