// CPrinter: prints the loop-nest IR (lower/stmt.h) as C-like source, the base
// of the source backends (OpenCL C in codegen/opencl/). It owns what every C
// dialect shares: identifiers (unique, sanitised, no keyword), fully
// parenthesised expressions, statements with indentation, and helper
// functions emitted once on demand. A dialect overrides the hooks: type names,
// element loads and stores, loops, allocations, intrinsics.
//
// Semantics kept here (those of ir/expr.h and the LLVM backend):
//  - integer division and remainder by 0 give 0, by -1 negate (wrapping);
//    floordiv / floormod round toward negative infinity (helpers);
//  - signed add / sub / mul of values wrap (computed on the unsigned type);
//    index arithmetic (load / store indices, loop bounds) is printed plainly;
//  - float max / min propagate NaN (helpers);
//  - vector expressions (Ramp, Broadcast, lanes > 1, from vectorize_loops):
//    a dialect may print a store of one in its vector types
//    (PrintVectorStore); otherwise the store becomes a loop over its lanes;
//  - Let expressions are inlined (they are pure).
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "lower/stmt.h"

namespace autosched {

class CPrinter {
 public:
  virtual ~CPrinter() = default;

  // The expression as C (no trailing newline).
  std::string PrintExpr(const Expr& e);
  // Appends the statement to the body text, indented. A dialect may
  // override it to act on some kinds first, calling this for the rest.
  virtual void PrintStmt(const Stmt& s);

 protected:
  // ---- dialect hooks ----
  // The C type a value of `t` is computed in (scalar; t.lanes ignored).
  virtual std::string TypeName(DataType t) = 0;
  // buffer[index] read as a value of the buffer's compute type.
  virtual std::string LoadElement(const BufferNode* buffer, const std::string& index) = 0;
  // The statement `buffer[index] = value;` (value in the compute type).
  virtual std::string StoreElement(const BufferNode* buffer, const std::string& index,
                                   const std::string& value, DataType value_type) = 0;
  virtual void PrintFor(const ForNode* n);
  virtual void PrintAllocate(const AllocateNode* n) = 0;
  // A call of a float intrinsic (not if_then_else) on printed arguments.
  virtual std::string PrintIntrinsic(const CallNode* n, const std::vector<std::string>& args);
  // x rounded to float16 and back (the compute type of float16 is wider).
  virtual std::string RoundToHalf(const std::string& x, DataType from) = 0;
  // A store of a vector value printed with the dialect's vector types; false
  // leaves it to the loop over its lanes.
  virtual bool PrintVectorStore(const BufferStoreNode* n) { return false; }

  // ---- shared pieces a dialect uses ----
  std::string VarName(const VarNode* v);
  std::string BufferName(const BufferNode* b);
  // A fresh identifier from a hint (sanitised, unique, not a keyword).
  std::string FreshName(const std::string& hint);
  // Adds a helper function's text once (keyed by name); Helpers() lists them.
  void NeedHelper(const std::string& name, const std::string& text);
  std::string Helpers() const;
  std::string PrintIndex(const Expr& index);  // in index context
  // max / min of floats that propagate NaN, through a helper named after the
  // type (`type` overrides TypeName(t), e.g. a vector type).
  std::string PrintFloatMinMax(BinOp op, DataType t, const std::string& a, const std::string& b,
                               const std::string& type = "");
  // a op b for an arithmetic or min / max operator on scalars of type t.
  std::string PrintArith(BinOp op, DataType t, const std::string& a, const std::string& b);
  // Declares a loop variable never negative (loops from a non-negative
  // minimum, GPU indices): floor division of such values by a positive
  // constant prints as C's / and %.
  void NoteNonNegative(const VarNode* v) { non_negative_.insert(v); }
  bool KnownNonNegative(const Expr& e) const;
  void Line(const std::string& text);    // one indented line
  void Open(const std::string& text);    // "text {", indent, and a new scope
  void Close();                          // "}", dedent, and the scope ends
  void Reopen(const std::string& text);  // "} text {": the scope ends and a sibling opens
  std::string TakeBody();                // the printed statements so far
  // Declares `name` in the innermost brace scope; false when it is declared
  // there already. The IR may allocate one buffer twice in a sequence (the
  // copies of a partitioned loop, once its extent-1 loops are removed), which
  // C allows only in separate scopes.
  bool Declare(const std::string& name) { return scopes_.back().insert(name).second; }
  bool DeclaredInScope(const std::string& name) const { return scopes_.back().count(name) > 0; }
  void ResetScopes() { scopes_.assign(1, {}); }  // a new function body

  std::ostringstream body_;
  int indent_ = 0;
  // Words the dialect reserves (types, qualifiers, builtins) besides C's.
  std::set<std::string> reserved_;

 private:
  std::string PrintBinary(const BinaryNode* n);
  std::string PrintIntDivision(BinOp op, DataType t, const std::string& a, const std::string& b);
  std::string PrintCast(DataType to, const Expr& value);
  std::string PrintImm(const Expr& e);
  std::string PrintLoad(const BufferLoadNode* n);
  void PrintStore(const BufferStoreNode* n);

  std::set<const VarNode*> non_negative_;
  std::map<const VarNode*, std::string> var_names_;
  std::map<const BufferNode*, std::string> buffer_names_;
  std::set<std::string> used_names_;
  std::vector<std::set<std::string>> scopes_{1};  // names declared per open brace scope, innermost last
  std::vector<std::pair<std::string, std::string>> helpers_;  // in order of first use
  std::string lane_;       // the lane variable while a vector store is printed
  bool in_index_ = false;  // printing index arithmetic
  int lane_counter_ = 0;
};

}  // namespace autosched
