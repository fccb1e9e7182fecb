// IREmitter: statements, functions and parallel outlining.
#include <set>

#include "codegen/llvm/ir_emitter.h"
#include "codegen/unroll_budget.h"
#include "ir/functor.h"
#include "ir/structural.h"
#include "lower/stmt_functor.h"
#include "runtime/module.h"
#include "support/error.h"

namespace autosched {
namespace {

// Buffers live on the stack while the buffers of the whole kernel (its
// outlined parallel bodies included: the calling thread runs one chunk of
// each on top of the kernel's frame) take at most this much; the others are
// on the heap. Far below the smallest thread stack a kernel is likely to run
// on (8 MiB for Linux threads, 512 KiB for secondary threads on macOS).
constexpr int64_t kStackBudgetBytes = 256 * 1024;

int64_t ElementsToReserve(const BufferNode& b) {
  if (b.strides.empty()) {
    int64_t n = 1;
    for (int64_t d : b.shape) n *= d;
    return n;
  }
  int64_t last = 0;
  for (size_t d = 0; d < b.shape.size(); ++d) last += (b.shape[d] - 1) * b.strides[d];
  return last + 1;
}

}  // namespace

llvm::Function* IREmitter::MakeFunction(const std::string& name, llvm::Type* ret,
                                        std::vector<llvm::Type*> params, bool internal) {
  auto* type = llvm::FunctionType::get(ret, params, false);
  auto linkage = internal ? llvm::Function::InternalLinkage : llvm::Function::ExternalLinkage;
  llvm::Function* f = llvm::Function::Create(type, linkage, name, module_);
  f->addFnAttr("target-cpu", cpu_);
  if (!features_.empty()) f->addFnAttr("target-features", features_);
  // Full-width vectors: without these, CPUs tuned to prefer 256 bits split
  // 512-bit vector code in two.
  f->addFnAttr("prefer-vector-width", "512");
  f->addFnAttr("min-legal-vector-width", "512");
  f->addFnAttr(llvm::Attribute::NoUnwind);
  if (target_.fast_math) {
    f->addFnAttr("unsafe-fp-math", "true");
    f->addFnAttr("no-signed-zeros-fp-math", "true");
  }
  return f;
}

void IREmitter::BeginFunction(llvm::Function* f) {
  fn_ = FunctionState();
  fn_.function = f;
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
}

void IREmitter::FailIf(llvm::Value* cond, llvm::Value* status) {
  if (cond->getType()->isVectorTy()) cond = b_.CreateOrReduce(cond);
  if (!fn_.fail_block) {
    llvm::IRBuilderBase::InsertPointGuard guard(b_);
    fn_.fail_block = llvm::BasicBlock::Create(ctx_, "fail", fn_.function);
    b_.SetInsertPoint(fn_.fail_block);
    fn_.fail_status = b_.CreatePHI(b_.getInt32Ty(), 2, "status");
  }
  llvm::BasicBlock* ok = llvm::BasicBlock::Create(ctx_, "ok", fn_.function);
  fn_.fail_status->addIncoming(status, b_.GetInsertBlock());
  b_.CreateCondBr(cond, fn_.fail_block, ok);
  b_.SetInsertPoint(ok);
}

void IREmitter::EndFunction() {
  if (!fn_.fail_block) return;
  llvm::IRBuilderBase::InsertPointGuard guard(b_);
  b_.SetInsertPoint(fn_.fail_block);
  llvm::Type* ptr = b_.getPtrTy();
  llvm::FunctionCallee release = module_->getOrInsertFunction("autosched_free", b_.getVoidTy(), ptr);
  for (llvm::AllocaInst* slot : fn_.heap_slots) b_.CreateCall(release, {b_.CreateLoad(ptr, slot)});
  b_.CreateRet(fn_.fail_status);
}

llvm::AllocaInst* IREmitter::EntryAlloca(llvm::Type* type, llvm::Value* count, uint64_t align) {
  llvm::IRBuilderBase::InsertPointGuard guard(b_);
  llvm::BasicBlock& entry = fn_.function->getEntryBlock();
  b_.SetInsertPoint(&entry, entry.getFirstInsertionPt());
  llvm::AllocaInst* a = b_.CreateAlloca(type, count);
  a->setAlignment(llvm::Align(align));
  return a;
}

void IREmitter::EmitKernel(const LoweredFunc& f, const std::string& symbol) {
  symbol_ = symbol;
  llvm::Type* ptr = b_.getPtrTy();
  // The body takes the buffers as noalias pointers; the exported kernel
  // unpacks the argument array and calls it (inlined by the optimiser).
  llvm::Function* body =
      MakeFunction(symbol + "_body", b_.getInt32Ty(), std::vector<llvm::Type*>(f.args.size(), ptr), true);
  body->addFnAttr(llvm::Attribute::AlwaysInline);
  unroll_ = LoopsToUnroll(f.body);
  if (target_.prefetch) prefetch_ = PlanPrefetches(f);
  BeginFunction(body);
  for (size_t i = 0; i < f.args.size(); ++i) {
    body->addParamAttr(i, llvm::Attribute::NoAlias);
    body->getArg(i)->setName(f.args[i]->name);
    buffers_[f.args[i].get()] = body->getArg(i);
  }
  EmitStmt(f.body);
  b_.CreateRet(b_.getInt32(kKernelOk));
  EndFunction();

  llvm::Function* kernel = MakeFunction(symbol, b_.getInt32Ty(), {ptr}, false);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", kernel));
  std::vector<llvm::Value*> args;
  for (size_t i = 0; i < f.args.size(); ++i) {
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptr, kernel->getArg(0), i);
    args.push_back(b_.CreateAlignedLoad(ptr, slot, llvm::Align(8), f.args[i]->name + "_ptr"));
  }
  b_.CreateRet(b_.CreateCall(body, args));
}

void IREmitter::EmitStmt(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::For: return EmitFor(s.as<ForNode>());
    case StmtKind::BufferStore: return EmitStore(s.as<BufferStoreNode>());
    case StmtKind::Allocate: return EmitAllocate(s.as<AllocateNode>());
    case StmtKind::IfThenElse: return EmitIf(s.as<IfThenElseNode>());
    case StmtKind::Seq: {
      const auto& seq = s.as<SeqNode>()->seq;
      for (size_t i = 0; i < seq.size(); ++i) {
        // A tile block after the loop that zeroes its accumulators starts them as zero tiles.
        if (i + 1 < seq.size() && EmitZeroedTileLoop(seq[i], seq[i + 1])) {
          ++i;
          continue;
        }
        EmitStmt(seq[i]);
      }
      return;
    }
    case StmtKind::LetStmt: {
      auto* n = s.as<LetStmtNode>();
      const VarNode* var = n->var.as<VarNode>();
      vars_[var] = Emit(n->value);
      EmitStmt(n->body);
      vars_.erase(var);
      return;
    }
    case StmtKind::Pragma: return EmitStmt(s.as<PragmaNode>()->body);
  }
}

void IREmitter::EmitCountedLoop(llvm::Value* begin, llvm::Value* end, llvm::MDNode* loop_md,
                                const std::function<void(llvm::Value*)>& body) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, "loop_header", fn_.function);
  llvm::BasicBlock* body_bb = llvm::BasicBlock::Create(ctx_, "loop_body", fn_.function);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "loop_exit", fn_.function);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* counter = b_.CreatePHI(begin->getType(), 2, "i");
  counter->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(counter, end), body_bb, exit);
  b_.SetInsertPoint(body_bb);
  prefetched_.clear();
  body(counter);
  prefetched_.clear();
  llvm::Value* next = b_.CreateAdd(counter, llvm::ConstantInt::get(begin->getType(), 1), "", true, true);
  llvm::BranchInst* latch = b_.CreateBr(header);
  if (loop_md) latch->setMetadata(llvm::LLVMContext::MD_loop, loop_md);
  counter->addIncoming(next, b_.GetInsertBlock());
  b_.SetInsertPoint(exit);
}

namespace {
// Loop metadata asking the optimiser for one transformation, e.g.
// "llvm.loop.unroll.full" or "llvm.loop.vectorize.enable".
llvm::MDNode* LoopHint(llvm::LLVMContext& ctx, const char* name, bool with_true) {
  std::vector<llvm::Metadata*> hint = {llvm::MDString::get(ctx, name)};
  if (with_true) {
    hint.push_back(llvm::ConstantAsMetadata::get(llvm::ConstantInt::getTrue(ctx)));
  }
  llvm::MDNode* temp = llvm::MDNode::getTemporary(ctx, {}).release();
  llvm::MDNode* md = llvm::MDNode::get(ctx, {temp, llvm::MDNode::get(ctx, hint)});
  md->replaceOperandWith(0, md);  // loop ids refer to themselves
  llvm::MDNode::deleteTemporary(temp);
  return md;
}
}  // namespace

void IREmitter::EmitFor(const ForNode* n) {
  AS_CHECK(!IsGpuBinding(n->for_kind),
           "code generation: loop '"
               << n->loop_var.as<VarNode>()->name << "' is bound to " << ForKindName(n->for_kind)
               << ", which the llvm (CPU) backend cannot run; GPU bindings need a GPU target");
  int64_t extent = 0;
  bool const_extent = GetConstInt(n->extent, &extent);
  if (lane_mask_ == nullptr && load_guard_ == nullptr && dot_block_ == nullptr) {
    if (auto tile = MatchTileLoop(n, target_)) return EmitTileLoop(*tile);
    if (auto block = MatchDotProductLoop(n, target_)) return EmitDotProductLoop(n, *block);
  }
  switch (n->for_kind) {
    case ForKind::Parallel: return EmitParallel(n);
    case ForKind::Unrolled:
      // Past the kernel's unroll budget the loop stays a loop.
      if (const_extent && unroll_.count(n)) return EmitUnrolled(n, extent);
      return EmitSerialLoop(n, nullptr);
    case ForKind::Vectorized:
      // Not legalised into vector code: let LLVM's loop vectorizer try.
      return EmitSerialLoop(n, LoopHint(ctx_, "llvm.loop.vectorize.enable", true));
    default: return EmitSerialLoop(n, nullptr);
  }
}

void IREmitter::EmitSerialLoop(const ForNode* n, llvm::MDNode* loop_md) {
  // The counter has the loop variable's own type, so that index arithmetic
  // on it stays in one induction variable (LLVM widens it to 64 bits).
  const VarNode* var = n->loop_var.as<VarNode>();
  llvm::Type* var_type = ComputeType(var->dtype);
  llvm::Value* min = b_.CreateSExtOrTrunc(Emit(n->min), var_type);
  llvm::Value* end = b_.CreateAdd(min, b_.CreateSExtOrTrunc(Emit(n->extent), var_type), "", false, true);
  const Expr outer_prefetch_loop_var = prefetch_loop_var_;
  const bool inner = prefetch_loop_var_.defined();
  if (inner) prefetch_inner_loops_.push_back(n);
  if (prefetch_.loops.count(n)) prefetch_loop_var_ = n->loop_var;
  EmitCountedLoop(min, end, loop_md, [&](llvm::Value* counter) {
    counter->setName(var->name);
    vars_[var] = counter;
    EmitStmt(n->body);
  });
  vars_.erase(var);
  prefetch_loop_var_ = outer_prefetch_loop_var;
  if (inner) prefetch_inner_loops_.pop_back();
}

namespace {

// The store of `s` when it is B[idx] = B[idx] op L(v), op associative (add,
// min, max), idx free of v and L(v) a load from another buffer: an unrolled
// loop over v of it finishes a reduction (the lane sum of a factored one).
const BufferStoreNode* LaneReduction(const Stmt& s, const VarNode* v) {
  const auto* store = s.as<BufferStoreNode>();
  const auto* bin = store == nullptr ? nullptr : store->value.as<BinaryNode>();
  if (bin == nullptr || (bin->op != BinOp::Add && bin->op != BinOp::Min && bin->op != BinOp::Max))
    return nullptr;
  const auto* acc = bin->a.as<BufferLoadNode>();
  const auto* lane = bin->b.as<BufferLoadNode>();
  if (acc == nullptr || lane == nullptr || acc->buffer != store->buffer || lane->buffer == store->buffer ||
      acc->indices.size() != store->indices.size())
    return nullptr;
  for (size_t i = 0; i < acc->indices.size(); ++i) {
    if (!StructuralEqual(acc->indices[i], store->indices[i]) || UsesVar(store->indices[i], v)) return nullptr;
  }
  return store;
}

}  // namespace

void IREmitter::EmitUnrolled(const ForNode* n, int64_t extent) {
  const VarNode* var = n->loop_var.as<VarNode>();
  if (extent <= 0) return;
  llvm::Value* min = Emit(n->min);
  if (const BufferStoreNode* store = extent > 2 ? LaneReduction(n->body, var) : nullptr) {
    // The lanes combined as a balanced tree, then once into the element:
    // log2(extent) dependent operations where the loop's order has extent.
    const auto* bin = store->value.as<BinaryNode>();
    const DataType t = store->value.dtype();
    std::vector<llvm::Value*> lanes;
    for (int64_t i = 0; i < extent; ++i) {
      vars_[var] = b_.CreateAdd(min, llvm::ConstantInt::get(min->getType(), i), var->name, false, true);
      unrolled_copy_.emplace_back(var, n->min + make_const(var->dtype, static_cast<double>(i)));
      lanes.push_back(Emit(bin->b));
      unrolled_copy_.pop_back();
    }
    vars_.erase(var);
    // Halving: lane i meets lane i + n/2, so that the lanes of a vector
    // reduce as its upper half onto its lower half (pairs of neighbours
    // would need deinterleaving shuffles at every level).
    for (size_t n = lanes.size(); n > 1;) {
      const size_t half = n / 2;
      for (size_t i = 0; i < half; ++i) lanes[i] = EmitArith(bin->op, t, lanes[i], lanes[i + n - half]);
      n -= half;
    }
    const Expr tree = VarNode::make(var->name + ".tree", t);
    vars_[tree.as<VarNode>()] = lanes[0];
    EmitStore(BufferStoreNode::make(store->buffer, BinaryNode::make(bin->op, bin->a, tree), store->indices)
                  .as<BufferStoreNode>());
    vars_.erase(tree.as<VarNode>());
    return;
  }
  for (int64_t i = 0; i < extent; ++i) {
    vars_[var] = b_.CreateAdd(min, llvm::ConstantInt::get(min->getType(), i), var->name, false, true);
    unrolled_copy_.emplace_back(var, n->min + make_const(var->dtype, static_cast<double>(i)));
    EmitStmt(n->body);
    unrolled_copy_.pop_back();
  }
  vars_.erase(var);
}

// Outlines the loop body into `int32 f(begin, end, closure)` and hands it to
// the runtime thread pool. The closure is an array of 8-byte slots holding
// the loop's min, then every variable and buffer the body uses from outside.
void IREmitter::EmitParallel(const ForNode* n) {
  std::vector<const VarNode*> vars;
  std::vector<const BufferNode*> bufs;
  std::set<const void*> seen;
  auto note_buffer = [&](const Buffer& b) {
    if (buffers_.count(b.get()) && seen.insert(b.get()).second) bufs.push_back(b.get());
  };
  Stmt body = n->body;
  VisitStmtExprs(body, [&](const Expr& e) {
    PostOrderVisit(e, [&](const Expr& x) {
      if (const auto* v = x.as<VarNode>(); v && vars_.count(v) && seen.insert(v).second) vars.push_back(v);
      if (const auto* load = x.as<BufferLoadNode>()) note_buffer(load->buffer);
    });
  });
  PostOrderVisitStmt(body, [&](const Stmt& s) {
    if (const auto* store = s.as<BufferStoreNode>()) note_buffer(store->buffer);
  });

  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Type* ptr = b_.getPtrTy();
  llvm::Value* min = b_.CreateSExtOrTrunc(Emit(n->min), i64);
  llvm::Value* extent = b_.CreateSExtOrTrunc(Emit(n->extent), i64);
  size_t num_slots = 1 + vars.size() + bufs.size();
  llvm::Value* closure = EntryAlloca(i64, b_.getInt64(num_slots), 8);
  std::vector<llvm::Value*> captured = {min};
  for (const VarNode* v : vars) captured.push_back(vars_[v]);
  for (const BufferNode* b : bufs) captured.push_back(buffers_[b]);
  for (size_t i = 0; i < captured.size(); ++i) {
    AS_CHECK(captured[i]->getType()->getPrimitiveSizeInBits().getFixedValue() <= 64,
             "code generation: parallel loop '" << n->loop_var.as<VarNode>()->name
                                                << "' uses a vector value bound outside it");
    b_.CreateAlignedStore(captured[i], b_.CreateConstInBoundsGEP1_64(i64, closure, i), llvm::Align(8));
  }

  // The inner function takes the captures as parameters (buffers noalias).
  std::string name = symbol_ + "_parallel" + std::to_string(num_outlined_++);
  std::vector<llvm::Type*> params = {i64, i64};
  for (llvm::Value* v : captured) params.push_back(v->getType());
  llvm::Function* inner = MakeFunction(name + "_body", b_.getInt32Ty(), params, true);
  inner->addFnAttr(llvm::Attribute::AlwaysInline);
  llvm::Function* wrapper = MakeFunction(name, b_.getInt32Ty(), {i64, i64, ptr}, true);
  {
    llvm::IRBuilderBase::InsertPointGuard guard(b_);
    auto saved_vars = vars_;
    auto saved_buffers = buffers_;
    FunctionState saved_fn = fn_;
    // A parallel loop inside a prefetched one (it runs serially) prefetches
    // nothing: the outer loops' variables are not in its function.
    const Expr saved_prefetch_loop_var = prefetch_loop_var_;
    auto saved_prefetch_inner_loops = std::move(prefetch_inner_loops_);
    prefetch_loop_var_ = Expr();
    prefetch_inner_loops_.clear();

    // Wrapper: unpack the closure, call the inner function.
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", wrapper));
    std::vector<llvm::Value*> args = {wrapper->getArg(0), wrapper->getArg(1)};
    for (size_t i = 0; i < captured.size(); ++i) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(i64, wrapper->getArg(2), i);
      args.push_back(b_.CreateAlignedLoad(captured[i]->getType(), slot, llvm::Align(8)));
    }
    b_.CreateRet(b_.CreateCall(inner, args));

    // Inner: the loop over [begin, end) of this chunk.
    BeginFunction(inner);
    vars_.clear();
    buffers_.clear();
    for (size_t i = 0; i < vars.size(); ++i) vars_[vars[i]] = inner->getArg(3 + i);
    for (size_t i = 0; i < bufs.size(); ++i) {
      unsigned arg = 3 + vars.size() + i;
      inner->addParamAttr(arg, llvm::Attribute::NoAlias);
      buffers_[bufs[i]] = inner->getArg(arg);
    }
    const VarNode* var = n->loop_var.as<VarNode>();
    llvm::Value* chunk_min = inner->getArg(2);
    EmitCountedLoop(inner->getArg(0), inner->getArg(1), nullptr, [&](llvm::Value* counter) {
      vars_[var] = b_.CreateTrunc(b_.CreateAdd(chunk_min, counter), ComputeType(var->dtype), var->name);
      EmitStmt(body);
    });
    b_.CreateRet(b_.getInt32(kKernelOk));
    EndFunction();

    vars_ = std::move(saved_vars);
    buffers_ = std::move(saved_buffers);
    fn_ = std::move(saved_fn);
    prefetch_loop_var_ = saved_prefetch_loop_var;
    prefetch_inner_loops_ = std::move(saved_prefetch_inner_loops);
  }

  llvm::FunctionCallee parallel_for =
      module_->getOrInsertFunction("autosched_parallel_for", b_.getInt32Ty(), i64, b_.getInt32Ty(), ptr, ptr);
  llvm::Value* status =
      b_.CreateCall(parallel_for, {extent, b_.getInt32(target_.num_cores), wrapper, closure});
  FailIf(b_.CreateICmpNE(status, b_.getInt32(kKernelOk)), status);
}

void IREmitter::EmitStore(const BufferStoreNode* n) {
  AS_CHECK(n->indices.size() == 1,
           "code generation: store to '" << n->buffer->name << "' is not flattened to one index");
  if (dot_block_) {
    auto it = dot_block_->stores.find(n);
    if (it != dot_block_->stores.end()) return EmitDotProductStore(n, it->second);
  }
  DataType t = n->value.dtype();
  llvm::Value* value = ToStorage(Emit(n->value), t);
  bool contiguous = false, broadcast = false;
  llvm::Value* ptr = ElementPointers(n->buffer, n->indices[0], &contiguous, &broadcast);
  llvm::Align align(n->buffer->dtype.bytes());
  llvm::Value* mask = LaneMask(t.lanes);
  if (t.lanes == 1 || contiguous) {
    AS_CHECK(n->indices[0].dtype().lanes == t.lanes,
             "code generation: store to '" << n->buffer->name << "' mixes index and value lanes");
    if (mask) {
      b_.CreateMaskedStore(value, ptr, align, mask);
    } else {
      b_.CreateAlignedStore(value, ptr, align);
    }
    return;
  }
  AS_CHECK(!broadcast, "code generation: vector store to a single element of '" << n->buffer->name << "'");
  b_.CreateMaskedScatter(value, ptr, align, mask);
}

void IREmitter::EmitAllocate(const AllocateNode* n) {
  const BufferNode& buf = *n->buffer;
  llvm::Type* elem = StorageType(buf.dtype);
  int64_t count = ElementsToReserve(buf);
  AS_CHECK(count > 0, "code generation: buffer '" << buf.name << "' has no elements");
  int64_t bytes = count * buf.dtype.bytes();
  if (bytes <= kStackBudgetBytes - stack_bytes_) {
    stack_bytes_ += bytes;
    buffers_[&buf] = EntryAlloca(elem, b_.getInt64(count), 64);
    EmitStmt(n->body);
    buffers_.erase(&buf);
    return;
  }
  // On the heap; the slot holds the pointer while it is live, so that the
  // failure exit frees it too.
  llvm::Type* ptr = b_.getPtrTy();
  llvm::AllocaInst* slot = EntryAlloca(ptr, nullptr, 8);
  {
    llvm::IRBuilderBase::InsertPointGuard guard(b_);
    b_.SetInsertPoint(slot->getParent(), std::next(slot->getIterator()));
    b_.CreateStore(llvm::ConstantPointerNull::get(b_.getPtrTy()), slot);
  }
  fn_.heap_slots.push_back(slot);
  llvm::FunctionCallee alloc = module_->getOrInsertFunction("autosched_alloc", ptr, b_.getInt64Ty());
  // Fresh memory, like malloc's: alias analysis may then keep values of this
  // buffer in registers across loads and stores of the kernel's arguments.
  if (auto* decl = llvm::dyn_cast<llvm::Function>(alloc.getCallee())) {
    decl->addRetAttr(llvm::Attribute::NoAlias);
    decl->addFnAttr(llvm::Attribute::NoUnwind);
  }
  llvm::FunctionCallee release = module_->getOrInsertFunction("autosched_free", b_.getVoidTy(), ptr);
  llvm::Value* mem = b_.CreateCall(alloc, {b_.getInt64(bytes)}, buf.name);
  FailIf(b_.CreateIsNull(mem), b_.getInt32(kKernelOutOfMemory));
  b_.CreateStore(mem, slot);
  buffers_[&buf] = mem;
  EmitStmt(n->body);
  buffers_.erase(&buf);
  b_.CreateCall(release, {mem});
  b_.CreateStore(llvm::ConstantPointerNull::get(b_.getPtrTy()), slot);
}

void IREmitter::EmitIf(const IfThenElseNode* n) {
  llvm::Value* cond = Emit(n->condition);
  if (n->condition.dtype().lanes > 1) {  // predicated lanes: masked accesses, no branch
    AS_CHECK(!n->else_case.defined() && lane_mask_ == nullptr,
             "code generation: a vector condition has an else branch or another inside");
    lane_mask_ = cond;
    EmitStmt(n->then_case);
    lane_mask_ = nullptr;
    return;
  }
  llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_.function);
  llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "endif", fn_.function);
  llvm::BasicBlock* else_bb =
      n->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "else", fn_.function) : join;
  b_.CreateCondBr(cond, then_bb, else_bb);
  const auto prefetched_before = prefetched_;  // what a branch prefetches, the other does not
  b_.SetInsertPoint(then_bb);
  EmitStmt(n->then_case);
  b_.CreateBr(join);
  if (n->else_case.defined()) {
    prefetched_ = prefetched_before;
    b_.SetInsertPoint(else_bb);
    EmitStmt(n->else_case);
    b_.CreateBr(join);
  }
  prefetched_ = prefetched_before;
  b_.SetInsertPoint(join);
}

}  // namespace autosched
