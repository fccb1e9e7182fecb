// DataType: the scalar (or vector) type of an expression or tensor element.
//
// Supported scalar types: bool, int8, int16, int32, int64, uint8, float16,
// bfloat16, float32, float64. `lanes` > 1 describes a SIMD vector of that
// scalar type and appears only in lowered code.
//
// bfloat16 is a float32 with the low 16 bits of its significand dropped (8
// exponent bits, 7 stored significand bits): TypeCode::BFloat, 16 bits. Both
// 16-bit floats (float16 and bfloat16) compute in float32: a value becomes one
// of the 16-bit type, rounded to nearest even, where it is stored, cast, or
// accumulated in that type (docs/ir.md).
#pragma once

#include <cstdint>
#include <string>

namespace autosched {

enum class TypeCode : uint8_t { Bool, Int, UInt, Float, BFloat };

struct DataType {
  TypeCode code = TypeCode::Float;
  int bits = 32;
  int lanes = 1;

  static DataType Bool(int lanes = 1) { return {TypeCode::Bool, 1, lanes}; }
  static DataType Int(int bits, int lanes = 1) { return {TypeCode::Int, bits, lanes}; }
  static DataType UInt(int bits, int lanes = 1) { return {TypeCode::UInt, bits, lanes}; }
  static DataType Float(int bits, int lanes = 1) { return {TypeCode::Float, bits, lanes}; }
  static DataType BFloat16(int lanes = 1) { return {TypeCode::BFloat, 16, lanes}; }

  // Parses "float32", "int8", "bool", ...; throws TypeError naming the string
  // when it is not one of the supported types.
  static DataType Parse(const std::string& name);

  bool is_bool() const { return code == TypeCode::Bool; }
  bool is_int() const { return code == TypeCode::Int; }
  bool is_uint() const { return code == TypeCode::UInt; }
  // Any float type, bfloat16 included.
  bool is_float() const { return code == TypeCode::Float || code == TypeCode::BFloat; }
  bool is_float16() const { return code == TypeCode::Float && bits == 16; }
  bool is_bfloat16() const { return code == TypeCode::BFloat; }
  // float16 or bfloat16: computed in float32, rounded where stored or cast.
  bool is_16bit_float() const { return is_float() && bits == 16; }
  // Integer-like: int or uint (bool excluded).
  bool is_integer() const { return is_int() || is_uint(); }
  bool is_scalar() const { return lanes == 1; }
  // Size of one element (all lanes) in bytes; bool takes one byte.
  int bytes() const { return (code == TypeCode::Bool ? 1 : bits / 8) * lanes; }

  DataType element_of() const { return {code, bits, 1}; }
  DataType with_lanes(int n) const { return {code, bits, n}; }

  std::string str() const;  // "float32", "float32x16", "bool", "bfloat16"

  bool operator==(const DataType& o) const { return code == o.code && bits == o.bits && lanes == o.lanes; }
  bool operator!=(const DataType& o) const { return !(*this == o); }
};

// True for the ten scalar types listed above.
bool IsSupportedScalar(DataType t);

// Whether every value of float type `from` is exactly a value of float type
// `to` (same type, or wider: float16 and bfloat16 both fit in float32, neither
// fits in the other).
bool FloatFitsIn(DataType from, DataType to);

// bfloat16 <-> float32, bit for bit as generated code converts
// (codegen/llvm/emit_expr.cc) and as PyTorch rounds: to nearest, ties to even,
// on the integer bits, so subnormals round like any other value and what
// overflows becomes inf. A NaN becomes the quiet NaN of its sign and top
// payload bits ((bits >> 16) | 0x40); PyTorch's own NaN bits differ between
// its scalar and vector paths.
uint16_t FloatToBFloat16Bits(float value);
float BFloat16BitsToFloat(uint16_t bits);

}  // namespace autosched
