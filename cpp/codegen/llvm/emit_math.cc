// IREmitter: float32 math without libm calls (erf, exp, tanh), so that a
// vectorized loop stays vectorized.
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include "codegen/llvm/ir_emitter.h"

namespace autosched {

// erf of float32 (any lanes) without a libm call, so that a vector stays a
// vector: x * P(x^2) / Q(x^2) on x clamped to [-3.9, 3.9] (erf(3.9) rounds to
// 1 in float32; NaN stays NaN). The coefficients are a weighted least-squares rational fit
// of erf(x) / x made for this code; the error stays below 4e-7 (about 7 units
// in the last place near 1, 2 near 0).
llvm::Value* IREmitter::EmitErfFloat32(DataType t, llvm::Value* x) {
  static constexpr double kP[] = {1.1283791679622386,     0.18509554995076266,   0.053999092943979497,
                                  0.0038059640369582396,  0.0003662388512919194, 4.3271455464934105e-06,
                                  -1.1321183657209133e-08};
  static constexpr double kQ[] = {1.0,
                                  0.49737002899830601,
                                  0.11364519685768298,
                                  0.015327951482307143,
                                  0.0012807705645596741,
                                  5.9735847127007427e-05};
  llvm::Type* ty = ComputeType(t);
  auto constant = [&](double c) { return llvm::ConstantFP::get(ty, c); };
  llvm::Value* clamped = EmitIntrinsic(llvm::Intrinsic::maxnum, t, {x, constant(-3.9)});
  clamped = EmitIntrinsic(llvm::Intrinsic::minnum, t, {clamped, constant(3.9)});
  llvm::Value* u = b_.CreateFMul(clamped, clamped);
  auto horner = [&](const double* coefficients, int count) {
    llvm::Value* acc = constant(coefficients[count - 1]);
    for (int i = count - 2; i >= 0; --i) {
      acc = EmitIntrinsic(llvm::Intrinsic::fmuladd, t, {acc, u, constant(coefficients[i])});
    }
    return acc;
  };
  llvm::Value* ratio = b_.CreateFDiv(horner(kP, 7), horner(kQ, 6));
  // Beyond the clamp erf is +-1 exactly in float32; maxnum drops a NaN, and
  // erf(NaN) is NaN.
  llvm::Value* tail = b_.CreateFCmpOGE(EmitIntrinsic(llvm::Intrinsic::fabs, t, {x}), constant(3.9));
  llvm::Value* r = b_.CreateSelect(tail, EmitIntrinsic(llvm::Intrinsic::copysign, t, {constant(1.0), x}),
                                   b_.CreateFMul(clamped, ratio));
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, r);
}

// p * 2^n for float32 vectors of 4, 8 or 16 lanes (n integral) by AVX-512's
// scalef: one instruction, rounded once where the result is subnormal,
// inf or 0 beyond the range. nullptr where the CPU or the lanes have none.
llvm::Value* IREmitter::ScaleByPowerOfTwo(DataType t, llvm::Value* p, llvm::Value* n) {
  if (t.bits != 32 || !target_.cpu.Has("avx512f")) return nullptr;
  llvm::Intrinsic::ID id = llvm::Intrinsic::not_intrinsic;
  if (t.lanes == 16) {
    id = llvm::Intrinsic::x86_avx512_mask_scalef_ps_512;
  } else if (t.lanes == 8 && target_.cpu.Has("avx512vl")) {
    id = llvm::Intrinsic::x86_avx512_mask_scalef_ps_256;
  } else if (t.lanes == 4 && target_.cpu.Has("avx512vl")) {
    id = llvm::Intrinsic::x86_avx512_mask_scalef_ps_128;
  } else {
    return nullptr;
  }
  llvm::Function* scalef = llvm::Intrinsic::getDeclaration(module_, id);
  std::vector<llvm::Value*> args = {
      p, n, llvm::UndefValue::get(p->getType()),
      llvm::ConstantInt::get(b_.getIntNTy(t.lanes < 8 ? 8 : t.lanes), -1, true)};
  if (t.lanes == 16) args.push_back(b_.getInt32(4));  // the current rounding mode
  return b_.CreateCall(scalef, args);
}

// exp of float32 (any lanes) without a libm call, so that a vector stays a
// vector (llvm.exp of a vector becomes one expf call per lane): x = n ln2 + r
// with |r| <= ln2 / 2 (ln2 in two parts, the first exact times any n in range),
// exp(r) by its Taylor polynomial of degree 7 (truncation below 1e-8
// relative), and 2^n applied by AVX-512's scalef where the CPU and lanes have
// it (1.31x the speed of the whole exp on a Zen 4), else as two exact
// power-of-two factors, so that n in [-150, 128] needs no special case: results that overflow become inf,
// those below the smallest subnormal 0, and subnormal results keep their bits up to one extra rounding. NaN
// stays NaN. The error stays below 2 units in the last place on normal results.
llvm::Value* IREmitter::EmitExpFloat32(DataType t, llvm::Value* x) {
  llvm::Type* ty = ComputeType(t);
  llvm::Type* int_ty = ComputeType(DataType::Int(32, t.lanes));
  auto constant = [&](double c) { return llvm::ConstantFP::get(ty, c); };
  auto int_constant = [&](int64_t c) { return llvm::ConstantInt::get(int_ty, c); };
  // Beyond [-104, 89] the result is 0 or inf in float32 whatever the input.
  llvm::Value* clamped = EmitIntrinsic(llvm::Intrinsic::maxnum, t, {x, constant(-104.0)});
  clamped = EmitIntrinsic(llvm::Intrinsic::minnum, t, {clamped, constant(89.0)});
  llvm::Value* n =
      EmitIntrinsic(llvm::Intrinsic::rint, t, {b_.CreateFMul(clamped, constant(1.4426950408889634))});
  constexpr double kLn2High = 0.693359375;  // 9 significant bits: n * kLn2High is exact
  constexpr double kLn2Low = -2.1219444005469058e-4;
  llvm::Value* r = b_.CreateFSub(clamped, b_.CreateFMul(n, constant(kLn2High)));
  r = EmitIntrinsic(llvm::Intrinsic::fmuladd, t, {n, constant(-kLn2Low), r});  // r = x - n ln2
  double inverse_factorial[8] = {1.0};
  for (int k = 1; k < 8; ++k) inverse_factorial[k] = inverse_factorial[k - 1] / k;
  llvm::Value* p = constant(inverse_factorial[7]);
  for (int k = 6; k >= 0; --k)
    p = EmitIntrinsic(llvm::Intrinsic::fmuladd, t, {p, r, constant(inverse_factorial[k])});
  if (llvm::Value* scaled = ScaleByPowerOfTwo(t, p, n))
    return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, scaled);
  // 2^n = 2^half * 2^(n - half), each factor a normal float32.
  llvm::Value* whole = b_.CreateFPToSI(n, int_ty);
  llvm::Value* half = b_.CreateAShr(whole, int_constant(1));
  llvm::Value* rest = b_.CreateSub(whole, half);
  auto power_of_two = [&](llvm::Value* exponent) {
    return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(exponent, int_constant(127)), int_constant(23)), ty);
  };
  llvm::Value* result = b_.CreateFMul(b_.CreateFMul(p, power_of_two(half)), power_of_two(rest));
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, result);
}

// tanh of float32 (any lanes) without a libm call (one tanhf call per lane
// made GPT-2's GELU, 0.5 x (1 + tanh(...)), cost twice its dense layer):
// below |x| = 0.625 its odd Taylor polynomial to x^19 (the next term is under
// 1e-8 of the result there); above, 1 - 2 / (exp(2|x|) + 1) with the sign of
// x (EmitExpFloat32: exp(2|x|) clamps to a finite value, so large |x| give
// +-1). -0 stays -0 and NaN stays NaN. The error stays within a few units in
// the last place.
llvm::Value* IREmitter::EmitTanhFloat32(DataType t, llvm::Value* x) {
  llvm::Type* ty = ComputeType(t);
  auto constant = [&](double c) { return llvm::ConstantFP::get(ty, c); };
  // The coefficients of x^3, x^5, ..., x^19 (tanh's series: 2^2n (2^2n - 1) B_2n / (2n)!).
  constexpr double kOdd[] = {-1.0 / 3,
                             2.0 / 15,
                             -17.0 / 315,
                             62.0 / 2835,
                             -1382.0 / 155925,
                             21844.0 / 6081075,
                             -929569.0 / 638512875,
                             6404582.0 / 10854718875,
                             -443861162.0 / 1856156927625};
  constexpr int kTerms = static_cast<int>(std::size(kOdd));
  llvm::Value* square = b_.CreateFMul(x, x);
  llvm::Value* q = constant(kOdd[kTerms - 1]);
  for (int k = kTerms - 2; k >= 0; --k)
    q = EmitIntrinsic(llvm::Intrinsic::fmuladd, t, {q, square, constant(kOdd[k])});
  llvm::Value* small = EmitIntrinsic(llvm::Intrinsic::fmuladd, t, {b_.CreateFMul(x, square), q, x});
  llvm::Value* magnitude = EmitIntrinsic(llvm::Intrinsic::fabs, t, {x});
  llvm::Value* e = EmitExpFloat32(t, b_.CreateFMul(magnitude, constant(2.0)));
  llvm::Value* large =
      b_.CreateFSub(constant(1.0), b_.CreateFDiv(constant(2.0), b_.CreateFAdd(e, constant(1.0))));
  // The sign of x on both (the polynomial gives +0 for -0).
  llvm::Value* result = b_.CreateSelect(b_.CreateFCmpOLT(magnitude, constant(0.625)), small, large);
  return EmitIntrinsic(llvm::Intrinsic::copysign, t, {result, x});
}

// exp: inline for float32 and bfloat16 (EmitExpFloat32), llvm.exp (libm) otherwise.
llvm::Value* IREmitter::EmitExp(DataType t, llvm::Value* x) {
  if (t.is_float() && (t.bits == 32 || t.is_bfloat16())) return EmitExpFloat32(t, x);
  return EmitIntrinsic(llvm::Intrinsic::exp, t, {x});
}

}  // namespace autosched
