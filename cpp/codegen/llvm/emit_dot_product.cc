// IREmitter: dot-product blocks (codegen/llvm/dot_product.h).
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include "codegen/llvm/ir_emitter.h"
#include "support/error.h"

namespace autosched {
namespace {

llvm::Intrinsic::ID DotProductIntrinsic(DotProductKind kind, int lanes) {
  switch (kind) {
    case DotProductKind::U8S8ToI32:
      return lanes == 16  ? llvm::Intrinsic::x86_avx512_vpdpbusd_512
             : lanes == 8 ? llvm::Intrinsic::x86_avx512_vpdpbusd_256
                          : llvm::Intrinsic::x86_avx512_vpdpbusd_128;
    case DotProductKind::BF16ToF32:
      return lanes == 16  ? llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512
             : lanes == 8 ? llvm::Intrinsic::x86_avx512bf16_dpbf16ps_256
                          : llvm::Intrinsic::x86_avx512bf16_dpbf16ps_128;
  }
  return llvm::Intrinsic::not_intrinsic;
}

}  // namespace

void IREmitter::EmitDotProductLoop(const ForNode* n, const DotProductLoop& block) {
  const auto* var = n->loop_var.as<VarNode>();
  vars_[var] = b_.CreateSExtOrTrunc(Emit(n->min), ComputeType(var->dtype));
  unrolled_copy_.emplace_back(var, n->min);
  dot_block_ = &block;
  EmitStmt(n->body);
  dot_block_ = nullptr;
  unrolled_copy_.pop_back();
  vars_.erase(var);
}

void IREmitter::EmitDotProductStore(const BufferStoreNode* store, const DotProductStore& d) {
  // Both kinds: a lane's group of narrow elements is 32 bits.
  llvm::Type* lane_type = b_.getInt32Ty();
  const int chunk = DotProductInstructionLanes(target_, d.kind, d.lanes);
  AS_CHECK(chunk > 0, "code generation: a dot-product block without its instruction");
  llvm::Function* fn = llvm::Intrinsic::getDeclaration(module_, DotProductIntrinsic(d.kind, chunk));
  llvm::FunctionType* type = fn->getFunctionType();
  AS_CHECK(type->getNumParams() == 3, "code generation: unexpected dot-product intrinsic signature");
  llvm::Type* chunk_type = llvm::FixedVectorType::get(lane_type, chunk);

  llvm::Value* acc = Emit(d.accumulator);
  llvm::Type* acc_element = llvm::cast<llvm::VectorType>(acc->getType())->getElementType();
  bool contiguous = false, broadcast = false;
  // The broadcast operand: the group's elements a .. a + group - 1 as one
  // 32-bit value, repeated in every lane.
  llvm::Value* x_ptr = ElementPointers(d.broadcast->buffer, d.broadcast_index, &contiguous, &broadcast);
  llvm::Value* x = b_.CreateVectorSplat(chunk, b_.CreateAlignedLoad(lane_type, x_ptr, llvm::Align(1)));
  // The vector operand: group x lanes contiguous elements from w, one chunk
  // of lanes (one register) at a time.
  llvm::Value* w_ptr = ElementPointers(d.vector->buffer, d.vector_base, &contiguous, &broadcast);
  llvm::Value* result = llvm::PoisonValue::get(acc->getType());
  for (int first_lane = 0; first_lane < d.lanes; first_lane += chunk) {
    llvm::Value* w = b_.CreateAlignedLoad(
        chunk_type, b_.CreateInBoundsGEP(lane_type, w_ptr, b_.getInt64(first_lane)), llvm::Align(1));
    std::vector<int> lanes(chunk);
    for (int i = 0; i < chunk; ++i) lanes[i] = first_lane + i;
    llvm::Value* part = chunk == d.lanes ? acc : b_.CreateShuffleVector(acc, lanes);
    llvm::Value* a = x;
    llvm::Value* b = w;
    // vpdpbusd multiplies its first source's bytes as unsigned, its second's
    // as signed.
    if (d.kind == DotProductKind::U8S8ToI32 && !d.broadcast_is_unsigned) std::swap(a, b);
    part = b_.CreateCall(
        fn, {b_.CreateBitCast(part, type->getParamType(0)), b_.CreateBitCast(a, type->getParamType(1)),
             b_.CreateBitCast(b, type->getParamType(2))});
    part = b_.CreateBitCast(part, llvm::FixedVectorType::get(acc_element, chunk));
    if (chunk == d.lanes) {
      result = part;
      break;
    }
    // Widen the part to the accumulator's lanes and put it in place.
    std::vector<int> widen(d.lanes, -1), merge(d.lanes);
    for (int i = 0; i < chunk; ++i) widen[first_lane + i] = i;
    llvm::Value* wide = b_.CreateShuffleVector(part, widen);
    for (int i = 0; i < d.lanes; ++i) merge[i] = i >= first_lane && i < first_lane + chunk ? d.lanes + i : i;
    result = b_.CreateShuffleVector(result, wide, merge);
  }
  llvm::Value* ptr = ElementPointers(store->buffer, store->indices[0], &contiguous, &broadcast);
  b_.CreateAlignedStore(ToStorage(result, store->value.dtype()), ptr,
                        llvm::Align(store->buffer->dtype.bytes()));
}

}  // namespace autosched
