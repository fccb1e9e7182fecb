#include "ir/dtype.h"

#include <bit>

#include "support/error.h"

namespace autosched {

DataType DataType::Parse(const std::string& name) {
  static const struct {
    const char* name;
    DataType type;
  } kTypes[] = {
      {"bool", DataType::Bool()},         {"int8", DataType::Int(8)},       {"int16", DataType::Int(16)},
      {"int32", DataType::Int(32)},       {"int64", DataType::Int(64)},     {"uint8", DataType::UInt(8)},
      {"float16", DataType::Float(16)},   {"float32", DataType::Float(32)}, {"float64", DataType::Float(64)},
      {"bfloat16", DataType::BFloat16()},
  };
  for (const auto& entry : kTypes) {
    if (name == entry.name) return entry.type;
  }
  AS_TYPE_CHECK(false, "unsupported dtype '" << name
                                             << "': expected one of bool, int8, int16, int32, int64, "
                                                "uint8, float16, bfloat16, float32, float64");
  return {};
}

std::string DataType::str() const {
  std::string base;
  switch (code) {
    case TypeCode::Bool: base = "bool"; break;
    case TypeCode::Int: base = "int" + std::to_string(bits); break;
    case TypeCode::UInt: base = "uint" + std::to_string(bits); break;
    case TypeCode::Float: base = "float" + std::to_string(bits); break;
    case TypeCode::BFloat: base = "bfloat" + std::to_string(bits); break;
  }
  if (lanes != 1) base += "x" + std::to_string(lanes);
  return base;
}

bool IsSupportedScalar(DataType t) {
  if (t.lanes != 1) return false;
  switch (t.code) {
    case TypeCode::Bool: return t.bits == 1;
    case TypeCode::Int: return t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
    case TypeCode::UInt: return t.bits == 8;
    case TypeCode::Float: return t.bits == 16 || t.bits == 32 || t.bits == 64;
    case TypeCode::BFloat: return t.bits == 16;
  }
  return false;
}

uint16_t FloatToBFloat16Bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  // Adding 0x7fff, plus one where the kept part is odd, carries into bit 16
  // exactly when the dropped half is above the midpoint or at it from odd.
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float BFloat16BitsToFloat(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

bool FloatFitsIn(DataType from, DataType to) {
  return from.is_float() && to.is_float() && (from.element_of() == to.element_of() || to.bits > from.bits);
}

}  // namespace autosched
