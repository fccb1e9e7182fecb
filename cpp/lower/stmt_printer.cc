#include "lower/stmt_printer.h"

#include <sstream>

#include "ir/printer.h"

namespace autosched {
namespace {

class StmtPrinter {
 public:
  explicit StmtPrinter(std::ostream& os) : os_(os) {}

  void Print(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::For: return PrintFor(s.as<ForNode>());
      case StmtKind::BufferStore: return PrintStore(s.as<BufferStoreNode>());
      case StmtKind::Allocate: return PrintAllocate(s.as<AllocateNode>());
      case StmtKind::IfThenElse: return PrintIf(s.as<IfThenElseNode>());
      case StmtKind::Seq:
        for (const Stmt& x : s.as<SeqNode>()->seq) Print(x);
        return;
      case StmtKind::LetStmt: {
        auto* n = s.as<LetStmtNode>();
        Indent() << "let " << n->var << " = " << n->value << "\n";
        return Print(n->body);
      }
      case StmtKind::Pragma: {
        auto* n = s.as<PragmaNode>();
        Indent() << "pragma " << n->key << " = " << n->value << " {\n";
        Nested(n->body);
        Indent() << "}\n";
        return;
      }
    }
  }

  void PrintFunc(const LoweredFunc& f) {
    os_ << "func " << f.name << "(";
    for (size_t i = 0; i < f.args.size(); ++i) {
      if (i) os_ << ", ";
      os_ << f.args[i]->name << ": " << BufferType(*f.args[i]);
    }
    os_ << ") {\n";
    Nested(f.body);
    os_ << "}\n";
  }

 private:
  std::ostream& Indent() {
    for (int i = 0; i < depth_; ++i) os_ << "  ";
    return os_;
  }
  void Nested(const Stmt& s) {
    ++depth_;
    Print(s);
    --depth_;
  }
  static std::string BufferType(const BufferNode& b) {
    std::ostringstream ss;
    ss << b.dtype.str() << "[";
    for (size_t i = 0; i < b.shape.size(); ++i) ss << (i ? ", " : "") << b.shape[i];
    ss << "]";
    if (!b.strides.empty()) {
      ss << " strides(";
      for (size_t i = 0; i < b.strides.size(); ++i) ss << (i ? ", " : "") << b.strides[i];
      ss << ")";
    }
    return ss.str();
  }
  void PrintIndices(const std::vector<Expr>& indices) {
    os_ << "[";
    for (size_t i = 0; i < indices.size(); ++i) os_ << (i ? ", " : "") << indices[i];
    os_ << "]";
  }
  void PrintFor(const ForNode* n) {
    Indent();
    if (n->for_kind != ForKind::Serial) os_ << ForKindName(n->for_kind) << " ";
    os_ << "for (" << n->loop_var << ", " << n->min << ", " << n->extent << ") {\n";
    Nested(n->body);
    Indent() << "}\n";
  }
  void PrintStore(const BufferStoreNode* n) {
    Indent() << n->buffer->name;
    PrintIndices(n->indices);
    os_ << " = " << n->value << "\n";
  }
  void PrintAllocate(const AllocateNode* n) {
    Indent() << "allocate " << n->buffer->name << ": " << BufferType(*n->buffer) << " "
             << MemScopeName(n->buffer->scope) << "\n";
    Print(n->body);
  }
  void PrintIf(const IfThenElseNode* n) {
    Indent() << "if (" << n->condition << ") {\n";
    Nested(n->then_case);
    if (n->else_case.defined()) {
      Indent() << "} else {\n";
      Nested(n->else_case);
    }
    Indent() << "}\n";
  }

  std::ostream& os_;
  int depth_ = 0;
};

}  // namespace

std::ostream& operator<<(std::ostream& os, const Stmt& s) {
  StmtPrinter(os).Print(s);
  return os;
}

std::ostream& operator<<(std::ostream& os, const LoweredFunc& f) {
  StmtPrinter(os).PrintFunc(f);
  return os;
}

std::string ToString(const Stmt& s) {
  std::ostringstream ss;
  ss << s;
  return ss.str();
}

std::string ToString(const LoweredFunc& f) {
  std::ostringstream ss;
  ss << f;
  return ss.str();
}

}  // namespace autosched
