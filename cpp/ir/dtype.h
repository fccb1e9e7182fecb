// DataType: the scalar (or vector) type of an expression or tensor element.
//
// Supported scalar types: bool, int8, int16, int32, int64, uint8, float16,
// float32, float64. `lanes` > 1 describes a SIMD vector of that scalar type and
// appears only in lowered code.
#pragma once

#include <cstdint>
#include <string>

namespace autosched {

enum class TypeCode : uint8_t { Bool, Int, UInt, Float };

struct DataType {
  TypeCode code = TypeCode::Float;
  int bits = 32;
  int lanes = 1;

  static DataType Bool(int lanes = 1) { return {TypeCode::Bool, 1, lanes}; }
  static DataType Int(int bits, int lanes = 1) { return {TypeCode::Int, bits, lanes}; }
  static DataType UInt(int bits, int lanes = 1) { return {TypeCode::UInt, bits, lanes}; }
  static DataType Float(int bits, int lanes = 1) { return {TypeCode::Float, bits, lanes}; }

  // Parses "float32", "int8", "bool", ...; throws TypeError naming the string
  // when it is not one of the supported types.
  static DataType Parse(const std::string& name);

  bool is_bool() const { return code == TypeCode::Bool; }
  bool is_int() const { return code == TypeCode::Int; }
  bool is_uint() const { return code == TypeCode::UInt; }
  bool is_float() const { return code == TypeCode::Float; }
  // Integer-like: int or uint (bool excluded).
  bool is_integer() const { return is_int() || is_uint(); }
  bool is_scalar() const { return lanes == 1; }
  // Size of one element (all lanes) in bytes; bool takes one byte.
  int bytes() const { return (code == TypeCode::Bool ? 1 : bits / 8) * lanes; }

  DataType element_of() const { return {code, bits, 1}; }
  DataType with_lanes(int n) const { return {code, bits, n}; }

  std::string str() const;  // "float32", "float32x16", "bool"

  bool operator==(const DataType& o) const { return code == o.code && bits == o.bits && lanes == o.lanes; }
  bool operator!=(const DataType& o) const { return !(*this == o); }
};

// True for the nine scalar types listed above.
bool IsSupportedScalar(DataType t);

}  // namespace autosched
