// IREmitter: types and expressions.
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/PatternMatch.h>
#include <llvm/Support/MathExtras.h>

#include <iterator>

#include "codegen/llvm/ir_emitter.h"
#include "ir/functor.h"
#include "ir/simplify.h"
#include "ir/structural.h"
#include "ir/tensor.h"
#include "runtime/module.h"
#include "support/error.h"

namespace autosched {

IREmitter::IREmitter(llvm::Module* module, const Target& target)
    : ctx_(module->getContext()),
      module_(module),
      target_(target),
      b_(module->getContext()),
      cpu_(target.cpu.name),
      features_(target.cpu.llvm_features) {
  llvm::FastMathFlags fmf;
  if (target.fast_math) {
    fmf.setFast();
  } else if (target.fp_contract) {
    // Lets the backend fuse a multiply feeding an add into one FMA.
    fmf.setAllowContract(true);
  }
  b_.setFastMathFlags(fmf);
}

llvm::Type* IREmitter::ComputeType(DataType t) {
  llvm::Type* scalar = nullptr;
  if (t.is_bool()) {
    scalar = b_.getInt1Ty();
  } else if (t.is_float()) {
    scalar = t.bits == 64 ? b_.getDoubleTy() : b_.getFloatTy();
  } else {
    scalar = b_.getIntNTy(t.bits);
  }
  return t.lanes > 1 ? llvm::FixedVectorType::get(scalar, t.lanes) : scalar;
}

llvm::Type* IREmitter::StorageType(DataType t) {
  llvm::Type* scalar = nullptr;
  if (t.is_bool()) {
    scalar = b_.getInt8Ty();
  } else if (t.is_bfloat16()) {
    scalar = b_.getInt16Ty();
  } else if (t.is_float16()) {
    scalar = b_.getHalfTy();
  } else {
    return ComputeType(t);
  }
  return t.lanes > 1 ? llvm::FixedVectorType::get(scalar, t.lanes) : scalar;
}

llvm::Value* IREmitter::ToStorage(llvm::Value* v, DataType t) {
  if (t.is_bool()) return b_.CreateZExt(v, StorageType(t));
  if (t.is_bfloat16()) return EmitFloatToBFloat16(v, t.lanes);
  if (t.is_float16()) return b_.CreateFPTrunc(v, StorageType(t));
  return v;
}

llvm::Value* IREmitter::FromStorage(llvm::Value* v, DataType t) {
  if (t.is_bool()) return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  if (t.is_bfloat16()) {
    // The bits are the high half of a float32.
    llvm::Type* i32 = ComputeType(DataType::Int(32, t.lanes));
    return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(v, i32), llvm::ConstantInt::get(i32, 16)),
                            ComputeType(t));
  }
  if (t.is_float16()) return b_.CreateFPExt(v, ComputeType(t));
  return v;
}

// float32 (any lanes) to bfloat16 bits (i16 lanes), rounded to nearest even
// on the integer bits exactly as FloatToBFloat16Bits (ir/dtype.h) and PyTorch
// round. Integer operations only: they vectorize on every x86 vector ISA and
// need no library call (LLVM's fptrunc to bfloat calls __truncsfbf2 without
// AVX512-BF16, and vcvtneps2bf16 flushes subnormals to zero). The NaN test is
// on the bits too, so -fast-math cannot fold it away.
llvm::Value* IREmitter::EmitFloatToBFloat16(llvm::Value* v, int lanes) {
  // A value widened from bfloat16 bits (FromStorage) narrows back to them:
  // copies and casts store the bits without rounding them again (a
  // signalling NaN among them stays signalling).
  llvm::Value* bits16 = nullptr;
  using namespace llvm::PatternMatch;
  if (match(v, m_BitCast(m_Shl(m_ZExt(m_Value(bits16)), m_SpecificInt(16)))) &&
      bits16->getType() == StorageType(DataType::BFloat16(lanes))) {
    return bits16;
  }
  llvm::Type* i32 = ComputeType(DataType::Int(32, lanes));
  auto constant = [&](uint32_t c) { return llvm::ConstantInt::get(i32, c); };
  llvm::Value* bits = b_.CreateBitCast(v, i32);
  llvm::Value* high = b_.CreateLShr(bits, constant(16));
  llvm::Value* rounding = b_.CreateAdd(b_.CreateAnd(high, constant(1)), constant(0x7fff));
  llvm::Value* rounded = b_.CreateLShr(b_.CreateAdd(bits, rounding), constant(16));
  llvm::Value* is_nan = b_.CreateICmpUGT(b_.CreateAnd(bits, constant(0x7fffffff)), constant(0x7f800000));
  llvm::Value* quiet_nan = b_.CreateOr(high, constant(0x40));
  return b_.CreateTrunc(b_.CreateSelect(is_nan, quiet_nan, rounded), StorageType(DataType::BFloat16(lanes)));
}

llvm::Value* IREmitter::Emit(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::IntImm: {
      int64_t v = e.as<IntImmNode>()->value;
      return llvm::ConstantInt::get(ComputeType(e.dtype()), static_cast<uint64_t>(v), e.dtype().is_int());
    }
    case ExprKind::FloatImm: {
      double v = e.as<FloatImmNode>()->value;
      // A bfloat16 immediate is a float32 value until stored (ir/expr.h).
      if (e.dtype().is_bfloat16()) return llvm::ConstantFP::get(b_.getFloatTy(), static_cast<float>(v));
      if (e.dtype().bits == 16) {
        // Round to half, computed in float.
        return b_.CreateFPExt(llvm::ConstantFP::get(b_.getHalfTy(), v), b_.getFloatTy());
      }
      return llvm::ConstantFP::get(ComputeType(e.dtype()), v);
    }
    case ExprKind::Var: {
      auto it = vars_.find(e.as<VarNode>());
      AS_CHECK(it != vars_.end(),
               "code generation: variable '" << e.as<VarNode>()->name << "' is used outside its loop or let");
      return it->second;
    }
    case ExprKind::Binary: return EmitBinary(e.as<BinaryNode>());
    case ExprKind::Not: return b_.CreateNot(Emit(e.as<NotNode>()->a));
    case ExprKind::Select: {
      auto* n = e.as<SelectNode>();
      return b_.CreateSelect(Emit(n->condition), Emit(n->true_value), Emit(n->false_value));
    }
    case ExprKind::Cast: return EmitCast(e.dtype(), e.as<CastNode>()->value);
    case ExprKind::Call: return EmitCall(e.as<CallNode>());
    case ExprKind::TensorLoad:
      AS_CHECK(false, "code generation: load of tensor '" << e.as<TensorLoadNode>()->tensor->name
                                                          << "' was not lowered to a buffer load");
      return nullptr;
    case ExprKind::Reduce: AS_CHECK(false, "code generation: a reduction was not lowered"); return nullptr;
    case ExprKind::BufferLoad: return EmitBufferLoad(e.as<BufferLoadNode>());
    case ExprKind::Ramp: {
      auto* n = e.as<RampNode>();
      llvm::Value* base = b_.CreateVectorSplat(n->lanes, Emit(n->base));
      std::vector<llvm::Constant*> offsets;
      for (int i = 0; i < n->lanes; ++i) {
        offsets.push_back(llvm::ConstantInt::get(ComputeType(n->base.dtype()), i * n->stride, true));
      }
      return b_.CreateAdd(base, llvm::ConstantVector::get(offsets), "", false, in_index_);
    }
    case ExprKind::Broadcast: {
      auto* n = e.as<BroadcastNode>();
      return b_.CreateVectorSplat(n->lanes, Emit(n->value));
    }
    case ExprKind::Let: {
      auto* n = e.as<LetNode>();
      const VarNode* var = n->var.as<VarNode>();
      vars_[var] = Emit(n->value);
      llvm::Value* body = Emit(n->body);
      vars_.erase(var);
      return body;
    }
  }
  AS_ICHECK(false);
  return nullptr;
}

llvm::Value* IREmitter::EmitBinary(const BinaryNode* n) {
  llvm::Value* a = Emit(n->a);
  llvm::Value* b = Emit(n->b);
  DataType t = n->a.dtype();
  if (IsComparison(n->op)) return EmitCompare(n->op, t, a, b);
  if (n->op == BinOp::And) return b_.CreateAnd(a, b);
  if (n->op == BinOp::Or) return b_.CreateOr(a, b);
  return EmitArith(n->op, t, a, b);
}

// float16 values are computed in float (widened from half): LLVM 19 narrows
// llvm.minimum / llvm.maximum of widened halves back to half, and its x86
// lowering of that loses a NaN against a zero of the sign it prefers
// (minimum(-0.0, NaN) gave -0.0). Spelled out with compares, NaN propagates.
llvm::Value* IREmitter::EmitHalfMinMax(bool is_min, llvm::Value* a, llvm::Value* b) {
  llvm::Value* a_first = is_min ? b_.CreateFCmpOLT(a, b) : b_.CreateFCmpOGT(a, b);
  llvm::Value* chosen = b_.CreateSelect(a_first, a, b);
  // Unordered: either is NaN; a + b is then NaN.
  return b_.CreateSelect(b_.CreateFCmpUNO(a, b), b_.CreateFAdd(a, b), chosen);
}

llvm::Value* IREmitter::EmitArith(BinOp op, DataType t, llvm::Value* a, llvm::Value* b) {
  if (t.is_float()) {
    switch (op) {
      case BinOp::Add: return b_.CreateFAdd(a, b);
      case BinOp::Sub: return b_.CreateFSub(a, b);
      case BinOp::Mul: return b_.CreateFMul(a, b);
      case BinOp::Div: return b_.CreateFDiv(a, b);
      case BinOp::Mod: return b_.CreateFRem(a, b);
      case BinOp::FloorDiv: return EmitIntrinsic(llvm::Intrinsic::floor, t, {b_.CreateFDiv(a, b)});
      case BinOp::FloorMod: {
        llvm::Value* q = EmitIntrinsic(llvm::Intrinsic::floor, t, {b_.CreateFDiv(a, b)});
        // Rounded as the reference rounds it: a fused a - q * b could leave [0, b).
        llvm::FastMathFlags exact = b_.getFastMathFlags();
        exact.setAllowContract(target_.fast_math);
        llvm::IRBuilderBase::FastMathFlagGuard guard(b_);
        b_.setFastMathFlags(exact);
        return b_.CreateFSub(a, b_.CreateFMul(q, b));
      }
      // NaN in either operand gives NaN (as numpy.minimum / maximum do).
      case BinOp::Min:
      case BinOp::Max: {
        if (t.is_float16()) return EmitHalfMinMax(op == BinOp::Min, a, b);
        return EmitIntrinsic(op == BinOp::Min ? llvm::Intrinsic::minimum : llvm::Intrinsic::maximum, t,
                             {a, b});
      }
      default: break;
    }
  } else {
    bool is_signed = t.is_int();
    switch (op) {
      // Index arithmetic never overflows in a valid program; saying so lets
      // LLVM fold it into addressing.
      case BinOp::Add: return b_.CreateAdd(a, b, "", false, in_index_ && is_signed);
      case BinOp::Sub: return b_.CreateSub(a, b, "", false, in_index_ && is_signed);
      case BinOp::Mul: return b_.CreateMul(a, b, "", false, in_index_ && is_signed);
      case BinOp::Div:
      case BinOp::Mod:
      case BinOp::FloorDiv:
      case BinOp::FloorMod: return EmitIntDivision(op, t, a, b);
      case BinOp::Min:
        return EmitIntrinsic(is_signed ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, t, {a, b});
      case BinOp::Max:
        return EmitIntrinsic(is_signed ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, t, {a, b});
      default: break;
    }
  }
  AS_CHECK(false, "code generation: operator " << BinOpName(op) << " on " << t.str());
  return nullptr;
}

namespace {
// Whether some lane of the integer constant c satisfies pred (true for a
// lane that is not a known integer).
bool SomeLane(llvm::Constant* c, bool (*pred)(const llvm::APInt&)) {
  if (auto* ci = llvm::dyn_cast<llvm::ConstantInt>(c)) return pred(ci->getValue());
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(c->getType());
  if (!vt) return true;
  for (unsigned i = 0; i < vt->getNumElements(); ++i) {
    auto* lane = llvm::dyn_cast_or_null<llvm::ConstantInt>(c->getAggregateElement(i));
    if (!lane || pred(lane->getValue())) return true;
  }
  return false;
}
}  // namespace

// Integer division and remainder with the reference evaluator's results
// where hardware traps (and LLVM's are undefined): a zero divisor gives 0
// (quotient and remainder, docs/ir.md); a divisor of -1 gives the negated
// dividend (wrapping, so INT_MIN / -1 == INT_MIN) and a remainder of 0. The
// checks are left out for constant divisors that need them not.
llvm::Value* IREmitter::EmitIntDivision(BinOp op, DataType t, llvm::Value* a, llvm::Value* b) {
  bool is_signed = t.is_int();
  auto* constant = llvm::dyn_cast<llvm::Constant>(b);
  bool may_be_zero = !constant || SomeLane(constant, [](const llvm::APInt& v) { return v.isZero(); });
  bool may_be_minus_one =
      is_signed && (!constant || SomeLane(constant, [](const llvm::APInt& v) { return v.isAllOnes(); }));
  llvm::Value* zero = llvm::Constant::getNullValue(b->getType());
  llvm::Value* by_zero = nullptr;
  if (may_be_zero) {  // divide by 1 instead, the result is replaced by 0 below
    by_zero = b_.CreateICmpEQ(b, zero);
    b = b_.CreateSelect(by_zero, llvm::ConstantInt::get(b->getType(), 1), b);
  }
  llvm::Value* minus_one = nullptr;
  if (may_be_minus_one) {
    // Divide by 1 instead: the remainder is then 0 already, the quotient is negated below.
    minus_one = b_.CreateICmpEQ(b, llvm::Constant::getAllOnesValue(b->getType()));
    b = b_.CreateSelect(minus_one, llvm::ConstantInt::get(b->getType(), 1), b);
  }
  llvm::Value* r = nullptr;
  if (!is_signed) {
    r = op == BinOp::Div || op == BinOp::FloorDiv ? b_.CreateUDiv(a, b) : b_.CreateURem(a, b);
  } else if (op == BinOp::Div || op == BinOp::Mod) {
    r = op == BinOp::Div ? b_.CreateSDiv(a, b) : b_.CreateSRem(a, b);
  } else {
    // Truncating division, corrected by one where the remainder is non-zero
    // and its sign differs from the divisor's.
    llvm::Value* q = b_.CreateSDiv(a, b);
    llvm::Value* rem = b_.CreateSRem(a, b);
    llvm::Value* adjust =
        b_.CreateAnd(b_.CreateICmpNE(rem, zero), b_.CreateICmpSLT(b_.CreateXor(rem, b), zero));
    r = op == BinOp::FloorDiv ? b_.CreateSub(q, b_.CreateZExt(adjust, a->getType()))
                              : b_.CreateSelect(adjust, b_.CreateAdd(rem, b), rem);
  }
  if (minus_one && (op == BinOp::Div || op == BinOp::FloorDiv))
    r = b_.CreateSelect(minus_one, b_.CreateNeg(a), r);
  if (by_zero) r = b_.CreateSelect(by_zero, zero, r);
  return r;
}

llvm::Value* IREmitter::EmitCompare(BinOp op, DataType t, llvm::Value* a, llvm::Value* b) {
  using P = llvm::CmpInst::Predicate;
  if (t.is_float()) {
    P p = op == BinOp::EQ   ? P::FCMP_OEQ
          : op == BinOp::NE ? P::FCMP_UNE
          : op == BinOp::LT ? P::FCMP_OLT
          : op == BinOp::LE ? P::FCMP_OLE
          : op == BinOp::GT ? P::FCMP_OGT
                            : P::FCMP_OGE;
    return b_.CreateFCmp(p, a, b);
  }
  bool s = t.is_int();
  P p = op == BinOp::EQ   ? P::ICMP_EQ
        : op == BinOp::NE ? P::ICMP_NE
        : op == BinOp::LT ? (s ? P::ICMP_SLT : P::ICMP_ULT)
        : op == BinOp::LE ? (s ? P::ICMP_SLE : P::ICMP_ULE)
        : op == BinOp::GT ? (s ? P::ICMP_SGT : P::ICMP_UGT)
                          : (s ? P::ICMP_SGE : P::ICMP_UGE);
  return b_.CreateICmp(p, a, b);
}

llvm::Value* IREmitter::EmitCast(DataType to, const Expr& value) {
  DataType from = value.dtype();
  llvm::Value* v = Emit(value);
  llvm::Type* ty = ComputeType(to);
  if (from == to) return v;
  if (to.is_bool()) {
    if (from.is_float()) return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (to.is_float()) {
    llvm::Value* r = nullptr;
    if (to.is_bfloat16()) {
      // Through float32, as PyTorch converts: round the float32 value to bfloat16 and back.
      llvm::Type* float32 = ComputeType(DataType::Float(32, to.lanes));
      llvm::Value* f = from.is_float() ? b_.CreateFPCast(v, float32)
                       : from.is_int() ? b_.CreateSIToFP(v, float32)
                                       : b_.CreateUIToFP(v, float32);
      return FromStorage(ToStorage(f, to), to);
    }
    if (to.is_float16()) {
      // Round to half once (from the widest source), then compute in float.
      llvm::Type* half = StorageType(to);
      llvm::Value* h = from.is_float() ? b_.CreateFPTrunc(v, half)
                       : from.is_int() ? b_.CreateSIToFP(v, half)
                                       : b_.CreateUIToFP(v, half);
      return b_.CreateFPExt(h, ty);
    }
    if (from.is_float()) {
      r = b_.CreateFPCast(v, ty);
    } else {
      r = from.is_int() ? b_.CreateSIToFP(v, ty) : b_.CreateUIToFP(v, ty);
    }
    return r;
  }
  // To an integer.
  if (from.is_float()) return to.is_int() ? b_.CreateFPToSI(v, ty) : b_.CreateFPToUI(v, ty);
  return b_.CreateIntCast(v, ty, from.is_int());
}

llvm::Value* IREmitter::EmitIntrinsic(unsigned id, DataType t, std::vector<llvm::Value*> args) {
  llvm::Function* f = llvm::Intrinsic::getDeclaration(module_, id, {ComputeType(t)});
  return b_.CreateCall(f, args);
}

llvm::Value* IREmitter::EmitLibmCall(const char* float_name, const char* double_name, DataType t,
                                     llvm::Value* x) {
  llvm::Type* scalar = t.bits == 64 ? b_.getDoubleTy() : b_.getFloatTy();
  llvm::FunctionCallee fn =
      module_->getOrInsertFunction(t.bits == 64 ? double_name : float_name, scalar, scalar);
  if (t.lanes == 1) return b_.CreateCall(fn, {x});
  // No vector form in libm: call it per lane.
  llvm::Value* r = llvm::PoisonValue::get(x->getType());
  for (int i = 0; i < t.lanes; ++i) {
    llvm::Value* lane = b_.CreateCall(fn, {b_.CreateExtractElement(x, i)});
    r = b_.CreateInsertElement(r, lane, i);
  }
  return r;
}

llvm::Value* IREmitter::EmitCall(const CallNode* n) {
  if (n->op == Intrinsic::IfThenElse) return EmitIfThenElseExpr(n);
  DataType t = n->dtype;
  std::vector<llvm::Value*> args;
  for (const Expr& a : n->args) args.push_back(Emit(a));
  llvm::Value* x = args[0];
  auto one = [&] { return llvm::ConstantFP::get(ComputeType(t), 1.0); };
  switch (n->op) {
    case Intrinsic::Exp: return EmitExp(t, x);
    case Intrinsic::Log: return EmitIntrinsic(llvm::Intrinsic::log, t, {x});
    case Intrinsic::Sqrt: return EmitIntrinsic(llvm::Intrinsic::sqrt, t, {x});
    case Intrinsic::Rsqrt: return b_.CreateFDiv(one(), EmitIntrinsic(llvm::Intrinsic::sqrt, t, {x}));
    case Intrinsic::Tanh:
      if (t.is_float() && (t.bits == 32 || t.is_bfloat16())) return EmitTanhFloat32(t, x);
      return EmitLibmCall("tanhf", "tanh", t, x);
    case Intrinsic::Erf:
      if (t.is_float() && (t.bits == 32 || t.is_bfloat16())) return EmitErfFloat32(t, x);
      return EmitLibmCall("erff", "erf", t, x);
    case Intrinsic::Sigmoid: {
      llvm::Value* e = EmitExp(t, b_.CreateFNeg(x));
      return b_.CreateFDiv(one(), b_.CreateFAdd(one(), e));
    }
    case Intrinsic::Pow: return EmitIntrinsic(llvm::Intrinsic::pow, t, {x, args[1]});
    case Intrinsic::Fabs:
      if (t.is_float()) return EmitIntrinsic(llvm::Intrinsic::fabs, t, {x});
      if (t.is_uint()) return x;
      return EmitIntrinsic(llvm::Intrinsic::abs, t, {x, b_.getFalse()});
    case Intrinsic::Floor: return EmitIntrinsic(llvm::Intrinsic::floor, t, {x});
    case Intrinsic::Ceil: return EmitIntrinsic(llvm::Intrinsic::ceil, t, {x});
    case Intrinsic::Round: return EmitIntrinsic(llvm::Intrinsic::round, t, {x});
    case Intrinsic::RoundEven: return EmitIntrinsic(llvm::Intrinsic::roundeven, t, {x});
    case Intrinsic::IfThenElse: break;
  }
  AS_CHECK(false, "code generation: intrinsic " << IntrinsicName(n->op) << " is not supported");
  return nullptr;
}

namespace {

// Whether `e` can be evaluated where its value is not used: nothing in it can
// trap but its buffer loads (integer division by a variable could), and each
// load, pointed at the buffer's first element, stays inside the buffer.
bool SpeculatableWithGuardedLoads(const Expr& e) {
  bool ok = true;
  PostOrderVisit(e, [&](const Expr& x) {
    if (const auto* bin = x.as<BinaryNode>()) {
      if (MayTrapOnDivision(bin)) ok = false;
    } else if (const auto* load = x.as<BufferLoadNode>()) {
      int64_t elements = 1;
      for (int64_t d : load->buffer->shape) elements *= d;
      if (load->dtype.lanes > elements) ok = false;
    }
  });
  return ok;
}

}  // namespace

// Evaluates only the chosen branch (it may hold a load that is out of bounds
// on the other side). Where both branches can be evaluated safely once their
// loads are redirected (see SpeculatableWithGuardedLoads), both are and a
// select picks: no branch in the loop, so a padded convolution's window
// stays straight-line code LLVM can keep in registers and vectorize. A vector
// condition falls back to a select.
llvm::Value* IREmitter::EmitIfThenElseExpr(const CallNode* n) {
  llvm::Value* cond = Emit(n->args[0]);
  if (n->args[0].dtype().lanes > 1) {
    llvm::Value* otherwise = Emit(n->args[2]);
    if (llvm::Value* loaded = EmitMaskedLoad(n->args[1], cond, otherwise)) return loaded;
    return b_.CreateSelect(cond, Emit(n->args[1]), otherwise);
  }
  if (SpeculatableWithGuardedLoads(n->args[1]) && SpeculatableWithGuardedLoads(n->args[2])) {
    llvm::Value* outer = load_guard_;
    auto guarded = [&](llvm::Value* holds, const Expr& branch) {
      load_guard_ = outer ? b_.CreateAnd(outer, holds) : holds;
      llvm::Value* v = Emit(branch);
      load_guard_ = outer;
      return v;
    };
    llvm::Value* t = guarded(cond, n->args[1]);
    llvm::Value* f = guarded(b_.CreateNot(cond), n->args[2]);
    return b_.CreateSelect(cond, t, f);
  }
  llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "if_then", fn_.function);
  llvm::BasicBlock* else_bb = llvm::BasicBlock::Create(ctx_, "if_else", fn_.function);
  llvm::BasicBlock* join_bb = llvm::BasicBlock::Create(ctx_, "if_join", fn_.function);
  b_.CreateCondBr(cond, then_bb, else_bb);
  const auto prefetched_before = prefetched_;  // what a branch prefetches, the other does not
  b_.SetInsertPoint(then_bb);
  llvm::Value* t = Emit(n->args[1]);
  llvm::BasicBlock* then_end = b_.GetInsertBlock();
  b_.CreateBr(join_bb);
  prefetched_ = prefetched_before;
  b_.SetInsertPoint(else_bb);
  llvm::Value* f = Emit(n->args[2]);
  llvm::BasicBlock* else_end = b_.GetInsertBlock();
  b_.CreateBr(join_bb);
  prefetched_ = prefetched_before;
  b_.SetInsertPoint(join_bb);
  llvm::PHINode* phi = b_.CreatePHI(t->getType(), 2);
  phi->addIncoming(t, then_end);
  phi->addIncoming(f, else_end);
  return phi;
}

llvm::Value* IREmitter::Index64(llvm::Value* index) {  // index already emitted
  llvm::Type* i64 = b_.getInt64Ty();
  if (auto* vt = llvm::dyn_cast<llvm::VectorType>(index->getType())) {
    return b_.CreateSExt(index, llvm::VectorType::get(i64, vt->getElementCount()));
  }
  return b_.CreateSExtOrTrunc(index, i64);
}

// Address(es) of buffer[index]: one pointer for a scalar index, a contiguous
// ramp (*contiguous) or a broadcast (*broadcast); a vector of pointers else.
llvm::Value* IREmitter::ElementPointers(const Buffer& buffer, const Expr& index, bool* contiguous,
                                        bool* broadcast) {
  auto it = buffers_.find(buffer.get());
  AS_CHECK(it != buffers_.end(),
           "code generation: buffer '" << buffer->name << "' is neither an argument nor allocated");
  llvm::Type* elem = StorageType(buffer->dtype);
  *contiguous = *broadcast = false;
  struct IndexScope {
    bool& flag;
    bool saved;
    explicit IndexScope(bool& f) : flag(f), saved(f) { flag = true; }
    ~IndexScope() { flag = saved; }
  } scope(in_index_);
  if (const auto* ramp = index.as<RampNode>(); ramp && ramp->stride == 1) {
    *contiguous = true;
    return b_.CreateInBoundsGEP(elem, it->second, Index64(Emit(ramp->base)));
  }
  if (const auto* bc = index.as<BroadcastNode>()) {
    *broadcast = true;
    return b_.CreateInBoundsGEP(elem, it->second, Index64(Emit(bc->value)));
  }
  return b_.CreateInBoundsGEP(elem, it->second, Index64(Emit(index)));
}

namespace {
// Most elements between two lanes of a strided load read as one span and
// picked apart (EmitStridedLoad); wider strides gather.
constexpr int64_t kMaxSpanStride = 4;
}  // namespace

// A vector load of lanes `stride` elements apart (a stride-2 convolution's
// input along its output columns): the span from the first lane's element to
// the last one's, read as one masked load (no element past the last lane's is
// touched) and its lanes picked by a shuffle, which x86 does in one or two
// permutes, where a gather would insert the lanes one by one. Nullptr where
// the load is not such a load.
llvm::Value* IREmitter::EmitStridedLoad(const BufferLoadNode* n) {
  const DataType t = n->dtype;
  const auto* ramp = n->indices[0].as<RampNode>();
  if (ramp == nullptr || load_guard_ != nullptr || t.lanes < 2 || t.bits < 8 || ramp->stride < 2 ||
      ramp->stride > kMaxSpanStride)
    return nullptr;
  bool contiguous = false, broadcast = false;  // the first lane's address: a scalar index
  llvm::Value* first = ElementPointers(n->buffer, ramp->base, &contiguous, &broadcast);
  // A power-of-two width of whole registers: LLVM splits an odd one into pieces of two lanes.
  const int64_t width = ramp->stride * static_cast<int64_t>(llvm::PowerOf2Ceil(t.lanes));
  const int64_t span = ramp->stride * (t.lanes - 1) + 1;
  auto* wide_type = llvm::FixedVectorType::get(StorageType(t.element_of()), static_cast<unsigned>(width));
  std::vector<llvm::Constant*> in_span;
  for (int64_t i = 0; i < width; ++i) in_span.push_back(b_.getInt1(i < span));
  llvm::Value* wide = b_.CreateMaskedLoad(wide_type, first, llvm::Align(n->buffer->dtype.bytes()),
                                          llvm::ConstantVector::get(in_span));
  std::vector<int> lanes;
  for (int i = 0; i < t.lanes; ++i) lanes.push_back(static_cast<int>(i * ramp->stride));
  return FromStorage(b_.CreateShuffleVector(wide, lanes), t);
}

llvm::Value* IREmitter::EmitBufferLoad(const BufferLoadNode* n) {
  AS_CHECK(n->indices.size() == 1,
           "code generation: load from '" << n->buffer->name << "' is not flattened to one index");
  DataType t = n->dtype;
  if (llvm::Value* strided = EmitStridedLoad(n)) {
    EmitPrefetchOfNextIteration(n);
    return strided;
  }
  bool contiguous = false, broadcast = false;
  llvm::Value* ptr = ElementPointers(n->buffer, n->indices[0], &contiguous, &broadcast);
  EmitPrefetchOfNextIteration(n);
  if (load_guard_) {
    // Where the guard does not hold the value is not used: read the buffer's
    // first element(s) instead, which exist whatever the index.
    llvm::Value* first = buffers_.at(n->buffer.get());
    if (ptr->getType()->isVectorTy()) {
      first = b_.CreateVectorSplat(llvm::cast<llvm::VectorType>(ptr->getType())->getElementCount(), first);
    }
    ptr = b_.CreateSelect(load_guard_, ptr, first);
  }
  llvm::Align align(n->buffer->dtype.bytes());
  if (t.lanes == 1) return FromStorage(b_.CreateAlignedLoad(StorageType(t), ptr, align), t);
  if (contiguous) return FromStorage(b_.CreateAlignedLoad(StorageType(t), ptr, align), t);
  if (broadcast) {
    llvm::Value* scalar = b_.CreateAlignedLoad(StorageType(t.element_of()), ptr, align);
    return FromStorage(b_.CreateVectorSplat(t.lanes, scalar), t);
  }
  return FromStorage(b_.CreateMaskedGather(StorageType(t), ptr, align), t);
}

llvm::Value* IREmitter::LaneMask(int lanes) const {
  if (!lane_mask_ || lanes == 1) return nullptr;
  AS_CHECK(llvm::cast<llvm::FixedVectorType>(lane_mask_->getType())->getNumElements() == unsigned(lanes),
           "code generation: a vector store of " << lanes << " lanes under a mask of another width");
  return lane_mask_;
}

// if_then_else(mask, load, otherwise) with a vector mask: the load reads only
// the lanes the mask holds (a masked load or gather); a broadcast element is
// read if any lane holds (each such lane would read it), else the buffer's
// first element is. Nullptr when the branch is not a load.
llvm::Value* IREmitter::EmitMaskedLoad(const Expr& branch, llvm::Value* mask, llvm::Value* otherwise) {
  const auto* bc = branch.as<BroadcastNode>();
  const auto* n = bc ? bc->value.as<BufferLoadNode>() : branch.as<BufferLoadNode>();
  if (!n || n->indices.size() != 1) return nullptr;
  DataType t = branch.dtype();
  bool contiguous = false, broadcast = false;
  llvm::Value* ptr = ElementPointers(n->buffer, n->indices[0], &contiguous, &broadcast);
  llvm::Align align(n->buffer->dtype.bytes());
  if (bc || broadcast) {
    llvm::Value* safe = b_.CreateSelect(b_.CreateOrReduce(mask), ptr, buffers_.at(n->buffer.get()));
    llvm::Value* scalar =
        FromStorage(b_.CreateAlignedLoad(StorageType(t.element_of()), safe, align), t.element_of());
    return b_.CreateSelect(mask, b_.CreateVectorSplat(t.lanes, scalar), otherwise);
  }
  llvm::Type* type = StorageType(t);
  llvm::Value* passthru = ToStorage(otherwise, t);
  llvm::Value* loaded = contiguous ? b_.CreateMaskedLoad(type, ptr, align, mask, passthru)
                                   : b_.CreateMaskedGather(type, ptr, align, mask, passthru);
  return FromStorage(loaded, t);
}

void IREmitter::EmitPrefetchOfNextIteration(const BufferLoadNode* n) {
  if (!prefetch_loop_var_.defined() || load_guard_ != nullptr || !prefetch_.loads.count(n)) return;
  const VarNode* var = prefetch_loop_var_.as<VarNode>();
  const Expr first = n->indices[0].as<RampNode>()->base;
  VarMap next_iteration{{var, prefetch_loop_var_ + make_const(var->dtype, 1)}};
  Expr next = Substitute(first, next_iteration);
  // Once per element: the copies of an unrolled loop often load the same one.
  VarMap this_copy(unrolled_copy_.begin(), unrolled_copy_.end());
  Expr address_key = Simplify(Substitute(next, this_copy));
  for (const auto& [buffer, index] : prefetched_) {
    if (buffer == n->buffer.get() && StructuralEqual(index, address_key)) return;
  }
  prefetched_.emplace_back(n->buffer.get(), address_key);
  // Not inbounds: after the last iteration the address may lie past the
  // buffer, which a prefetch may touch (it never faults).
  llvm::Value* address =
      b_.CreateGEP(StorageType(n->buffer->dtype), buffers_.at(n->buffer.get()), Index64(Emit(next)));
  llvm::Function* prefetch =
      llvm::Intrinsic::getDeclaration(module_, llvm::Intrinsic::prefetch, {address->getType()});
  // Loops inside the prefetched one that this load does not move along read
  // the same elements again: prefetch in their first iteration only.
  llvm::Value* first_pass = nullptr;
  for (const ForNode* loop : prefetch_inner_loops_) {
    const VarNode* v = loop->loop_var.as<VarNode>();
    if (UsesVar(first, v)) continue;
    llvm::Value* at_min = b_.CreateICmpEQ(vars_.at(v), Emit(loop->min));
    first_pass = first_pass ? b_.CreateAnd(first_pass, at_min) : at_min;
  }
  llvm::BasicBlock* join = nullptr;
  if (first_pass) {
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "prefetch", fn_.function);
    join = llvm::BasicBlock::Create(ctx_, "prefetch_done", fn_.function);
    b_.CreateCondBr(first_pass, then_bb, join);
    b_.SetInsertPoint(then_bb);
  }
  // read, locality 2 (L2: prefetcht1), data cache
  llvm::CallInst* call = b_.CreateCall(prefetch, {address, b_.getInt32(0), b_.getInt32(2), b_.getInt32(1)});
  // A prefetch changes no value in memory. Said so, alias analysis keeps the
  // accumulators in registers across it (the intrinsic's own declaration lets
  // it write the memory it points at).
  call->setMemoryEffects(llvm::MemoryEffects::inaccessibleMemOnly());
  if (join) {
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
  }
}

}  // namespace autosched
