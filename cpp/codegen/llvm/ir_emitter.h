// IREmitter: one LoweredFunc to LLVM IR (internal to the LLVM backend).
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "codegen/build.h"
#include "codegen/llvm/amx_tile.h"
#include "codegen/llvm/dot_product.h"
#include "codegen/prefetch_plan.h"
#include "lower/stmt.h"

namespace autosched {

class IREmitter {
 public:
  // Functions are compiled for target.cpu (target-cpu, target-features).
  IREmitter(llvm::Module* module, const Target& target);
  // Emits `int32_t <symbol>(void** args)` and the functions it calls.
  void EmitKernel(const LoweredFunc& f, const std::string& symbol);

 private:
  // ---- types (emit_expr.cc) ----
  llvm::Type* ComputeType(DataType t);  // float16, bfloat16 -> float, bool -> i1
  llvm::Type* StorageType(DataType t);  // float16 -> half, bfloat16 -> i16, bool -> i8
  llvm::Value* ToStorage(llvm::Value* v, DataType t);
  llvm::Value* FromStorage(llvm::Value* v, DataType t);
  llvm::Value* EmitFloatToBFloat16(llvm::Value* v, int lanes);

  // ---- expressions (emit_expr.cc) ----
  llvm::Value* Emit(const Expr& e);
  llvm::Value* EmitBinary(const BinaryNode* n);
  llvm::Value* EmitArith(BinOp op, DataType t, llvm::Value* a, llvm::Value* b);
  llvm::Value* EmitHalfMinMax(bool is_min, llvm::Value* a, llvm::Value* b);
  llvm::Value* EmitIntDivision(BinOp op, DataType t, llvm::Value* a, llvm::Value* b);
  llvm::Value* EmitCompare(BinOp op, DataType t, llvm::Value* a, llvm::Value* b);
  llvm::Value* EmitCast(DataType to, const Expr& value);
  llvm::Value* EmitCall(const CallNode* n);
  llvm::Value* EmitIfThenElseExpr(const CallNode* n);
  llvm::Value* EmitErfFloat32(DataType t, llvm::Value* x);
  llvm::Value* EmitExpFloat32(DataType t, llvm::Value* x);
  llvm::Value* EmitTanhFloat32(DataType t, llvm::Value* x);
  llvm::Value* EmitExp(DataType t, llvm::Value* x);
  llvm::Value* EmitLibmCall(const char* float_name, const char* double_name, DataType t, llvm::Value* x);
  llvm::Value* ScaleByPowerOfTwo(DataType t, llvm::Value* p, llvm::Value* n);
  llvm::Value* EmitIntrinsic(unsigned id, DataType t, std::vector<llvm::Value*> args);
  llvm::Value* EmitBufferLoad(const BufferLoadNode* n);
  llvm::Value* EmitStridedLoad(const BufferLoadNode* n);  // nullptr where the load is not one
  llvm::Value* EmitMaskedLoad(const Expr& branch, llvm::Value* mask, llvm::Value* otherwise);
  llvm::Value* LaneMask(int lanes) const;  // lane_mask_ for a vector store, nullptr elsewhere
  // Prefetches what this load reads in the next iteration of the loop being
  // prefetched (codegen/prefetch_plan.h), where there is one.
  void EmitPrefetchOfNextIteration(const BufferLoadNode* n);
  llvm::Value* ElementPointers(const Buffer& buffer, const Expr& index, bool* contiguous, bool* broadcast);
  llvm::Value* Index64(llvm::Value* index);

  // ---- statements (emit_stmt.cc) ----
  void EmitStmt(const Stmt& s);
  void EmitFor(const ForNode* n);
  void EmitSerialLoop(const ForNode* n, llvm::MDNode* loop_md);
  void EmitUnrolled(const ForNode* n, int64_t extent);
  void EmitParallel(const ForNode* n);
  void EmitStore(const BufferStoreNode* n);
  void EmitAllocate(const AllocateNode* n);
  void EmitIf(const IfThenElseNode* n);
  // ---- dot-product blocks (emit_dot_product.cc, codegen/llvm/dot_product.h) ----
  // The loop's body once, its variable at the loop's min, each store one
  // dot-product instruction.
  void EmitDotProductLoop(const ForNode* n, const DotProductLoop& block);
  void EmitDotProductStore(const BufferStoreNode* store, const DotProductStore& d);
  // emit_amx_tile.cc: a tile block; with zero_c, C starts as zero tiles
  // instead of being loaded. EmitZeroedTileLoop emits `next` so where it is a
  // tile block that `init` only zeroes C for (ZeroesTilesOfC), and says so.
  void EmitTileLoop(const TileLoop& tile, bool zero_c = false);
  bool EmitZeroedTileLoop(const Stmt& init, const Stmt& next);
  // A loop from `begin` (inclusive) to `end` (exclusive) of i64 counter
  // values; body(counter) emits one iteration.
  void EmitCountedLoop(llvm::Value* begin, llvm::Value* end, llvm::MDNode* loop_md,
                       const std::function<void(llvm::Value*)>& body);
  // Where cond (i1, or a vector of i1: any lane) holds, the function returns
  // `status` (a KernelStatus) after freeing its heap buffers.
  void FailIf(llvm::Value* cond, llvm::Value* status);
  // Starts emitting `f` (entry block) / ends it (the failure exit's code).
  void BeginFunction(llvm::Function* f);
  void EndFunction();
  llvm::AllocaInst* EntryAlloca(llvm::Type* type, llvm::Value* count, uint64_t align);
  llvm::Function* MakeFunction(const std::string& name, llvm::Type* ret, std::vector<llvm::Type*> params,
                               bool internal);

  // The function being emitted and its failure exit: a block that frees the
  // heap buffers (their pointers live in slots, null when not allocated) and
  // returns the status of the branch that came there.
  struct FunctionState {
    llvm::Function* function = nullptr;
    llvm::BasicBlock* fail_block = nullptr;
    llvm::PHINode* fail_status = nullptr;
    std::vector<llvm::AllocaInst*> heap_slots;
  };

  llvm::LLVMContext& ctx_;
  llvm::Module* module_;
  Target target_;
  llvm::IRBuilder<> b_;
  FunctionState fn_;
  std::unordered_map<const VarNode*, llvm::Value*> vars_;
  std::unordered_map<const BufferNode*, llvm::Value*> buffers_;
  std::string symbol_;
  std::string cpu_, features_;
  // While emitting a branch of an if_then_else evaluated without branching:
  // the condition (i1) under which its loads' values are used.
  llvm::Value* load_guard_ = nullptr;
  // While emitting the branch of an if with a vector condition: the lanes
  // (a vector of i1) its stores write.
  llvm::Value* lane_mask_ = nullptr;
  // While emitting a dot-product block: its stores.
  const DotProductLoop* dot_block_ = nullptr;
  bool in_index_ = false;  // emitting a buffer index: signed overflow cannot happen (nsw)
  int num_outlined_ = 0;
  std::unordered_set<const ForNode*> unroll_;  // unrolled loops to copy out (codegen/unroll_budget.h)
  PrefetchPlan prefetch_;
  Expr prefetch_loop_var_;  // of the prefetched loop being emitted (undefined: none)
  // Addresses prefetched since the current block of straight-line code began
  // (one per element: the copies of an unrolled loop load the same weights),
  // with the unrolled loops' copies as they stand (variable, its value).
  std::vector<std::pair<const BufferNode*, Expr>> prefetched_;
  std::vector<std::pair<const VarNode*, Expr>> unrolled_copy_;
  // The serial loops inside the prefetched one, outermost first.
  std::vector<const ForNode*> prefetch_inner_loops_;
  int64_t stack_bytes_ = 0;  // stack taken by buffers, over all functions of the kernel
};

}  // namespace autosched
