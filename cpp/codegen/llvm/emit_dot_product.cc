// IREmitter: dot-product blocks (codegen/llvm/dot_product.h).
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <functional>

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
  bool contiguous = false, broadcast = false;
  llvm::Value* x_ptr = ElementPointers(d.broadcast->buffer, d.broadcast_index, &contiguous, &broadcast);
  llvm::Value* w_ptr = ElementPointers(d.vector->buffer, d.vector_base, &contiguous, &broadcast);
  // The vector operand: group x lanes contiguous elements from w, `count`
  // lanes from `first_lane` as one vector of 32-bit lanes.
  auto load_w = [&](int first_lane, int count) {
    return b_.CreateAlignedLoad(llvm::FixedVectorType::get(lane_type, count),
                                b_.CreateInBoundsGEP(lane_type, w_ptr, b_.getInt64(first_lane)),
                                llvm::Align(1));
  };
  // One step: the accumulator's lanes [first_lane, first_lane + chunk) plus
  // their products.
  std::function<llvm::Value*(llvm::Value*, int)> step;
  int chunk = DotProductInstructionLanes(target_, d.kind, d.lanes);
  if (chunk > 0) {
    llvm::Function* fn = llvm::Intrinsic::getDeclaration(module_, DotProductIntrinsic(d.kind, chunk));
    llvm::FunctionType* type = fn->getFunctionType();
    AS_CHECK(type->getNumParams() == 3, "code generation: unexpected dot-product intrinsic signature");
    // The broadcast operand: the group's elements a .. a + group - 1 as one
    // 32-bit value, repeated in every lane.
    llvm::Value* x = b_.CreateVectorSplat(chunk, b_.CreateAlignedLoad(lane_type, x_ptr, llvm::Align(1)));
    step = [&, fn, type, x](llvm::Value* part, int first_lane) -> llvm::Value* {
      llvm::Value *a = x, *b = load_w(first_lane, chunk);
      // vpdpbusd multiplies its first source's bytes as unsigned, its second's as signed.
      if (d.kind == DotProductKind::U8S8ToI32 && !d.broadcast_is_unsigned) std::swap(a, b);
      return b_.CreateCall(
          fn, {b_.CreateBitCast(part, type->getParamType(0)), b_.CreateBitCast(a, type->getParamType(1)),
               b_.CreateBitCast(b, type->getParamType(2))});
    };
  } else {
    chunk = WideningDotProductLanes(target_, d.kind, d.lanes);
    AS_CHECK(chunk > 0, "code generation: a dot-product block without its instruction");
    llvm::Function* madd = llvm::Intrinsic::getDeclaration(
        module_, chunk == 16 ? llvm::Intrinsic::x86_avx512_pmaddw_d_512 : llvm::Intrinsic::x86_avx2_pmadd_wd);
    llvm::Type* i16 = b_.getInt16Ty();
    auto widen = [this, i16](llvm::Value* bytes, bool is_unsigned) {
      auto* type = llvm::FixedVectorType::get(
          i16, llvm::cast<llvm::FixedVectorType>(bytes->getType())->getNumElements());
      return is_unsigned ? b_.CreateZExt(bytes, type) : b_.CreateSExt(bytes, type);
    };
    // The broadcast operand's 4 bytes as 16-bit values: the pair (x0, x1),
    // and the pair (x2, x3), each repeated in every 32-bit lane.
    llvm::Value* x4 =
        widen(b_.CreateAlignedLoad(llvm::FixedVectorType::get(b_.getInt8Ty(), 4), x_ptr, llvm::Align(1)),
              d.broadcast_is_unsigned);
    std::vector<int> first_pair(2 * chunk), second_pair(2 * chunk);
    for (int i = 0; i < 2 * chunk; ++i) first_pair[i] = i % 2, second_pair[i] = 2 + i % 2;
    llvm::Value* x01 = b_.CreateShuffleVector(x4, first_pair);
    llvm::Value* x23 = b_.CreateShuffleVector(x4, second_pair);
    step = [&, madd, x01, x23, widen](llvm::Value* part, int first_lane) -> llvm::Value* {
      // Each lane's bytes 0, 1 together and its bytes 2, 3 together, as
      // 16-bit pairs; vpmaddwd adds each pair's two products into the lane.
      llvm::Value* w =
          b_.CreateBitCast(load_w(first_lane, chunk), llvm::FixedVectorType::get(b_.getInt8Ty(), 4 * chunk));
      std::vector<int> low(2 * chunk), high(2 * chunk);
      for (int i = 0; i < 2 * chunk; ++i) low[i] = 4 * (i / 2) + i % 2, high[i] = low[i] + 2;
      llvm::Value* w01 = widen(b_.CreateShuffleVector(w, low), !d.broadcast_is_unsigned);
      llvm::Value* w23 = widen(b_.CreateShuffleVector(w, high), !d.broadcast_is_unsigned);
      llvm::Value* sum = b_.CreateAdd(b_.CreateCall(madd, {w01, x01}), b_.CreateCall(madd, {w23, x23}));
      return b_.CreateAdd(b_.CreateBitCast(part, sum->getType()), sum);
    };
  }

  llvm::Value* acc = Emit(d.accumulator);
  llvm::Type* acc_element = llvm::cast<llvm::VectorType>(acc->getType())->getElementType();
  llvm::Value* result = llvm::PoisonValue::get(acc->getType());
  for (int first_lane = 0; first_lane < d.lanes; first_lane += chunk) {
    std::vector<int> lanes(chunk);
    for (int i = 0; i < chunk; ++i) lanes[i] = first_lane + i;
    llvm::Value* part = step(chunk == d.lanes ? acc : b_.CreateShuffleVector(acc, lanes), first_lane);
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
