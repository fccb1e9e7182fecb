// Options structs from one field list.
//
// An options struct lists its fields once, as an X-macro of
//   X(type, name, default, range, doc)
// and declares them with AUTOSCHED_OPTIONS_FIELDS(Struct, LIST): the members
// with their defaults, operator==, and
//   Struct::VisitFields(self, visit)  // visit(name, member, range, doc) per field
// Everything else walks that one list: CheckFields (each field's range, an
// Error naming the struct and the field), FieldsToJson / FieldsFromJson, and
// the Python bindings (bindings/bind_options.h: keyword construction with the
// defaults, setters that check, repr, pickling). A struct may add a check
// across fields as a member `void CheckTogether() const`.
//
//   #define AUTOSCHED_BUILDER_OPTIONS_FIELDS(X) (a backslash ends each line)
//     X(double, timeout, 15, Positive(), "seconds to lower and compile one candidate")
//     X(int, n_parallel, 0, AtLeast(0), "worker processes that compile at once")
//   struct BuilderOptions {
//     AUTOSCHED_OPTIONS_FIELDS(BuilderOptions, AUTOSCHED_BUILDER_OPTIONS_FIELDS)
//   };
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "support/error.h"

namespace autosched {

// The values a numeric field (or each element of a list field) may take: from
// min to max, either end open; `finite` refuses infinities and NaN. Fields of
// other types (strings, flags, nested structs) take AnyValue().
struct FieldRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;
  bool max_open = false;
  bool finite = false;
  // What Describe says instead, where the range alone would mislead (a
  // special value below the range: "not be negative (-1: ...)").
  const char* text = nullptr;

  bool Contains(double v) const {
    if (finite && !std::isfinite(v)) return false;
    if (std::isnan(v)) return !(std::isfinite(min) || std::isfinite(max));
    return (min_open ? v > min : v >= min) && (max_open ? v < max : v <= max);
  }
  // What Contains asks, as the end of "x must ...": "be at least 1", "be in (0, 1]".
  std::string Describe() const {
    if (this->text != nullptr) return this->text;
    std::ostringstream text;
    const bool low = std::isfinite(min), high = std::isfinite(max);
    if (low && high) {
      text << "be in " << (min_open ? "(" : "[") << min << ", " << max << (max_open ? ")" : "]");
    } else if (low && min == 0) {
      text << (min_open ? "be positive" : "not be negative");
    } else if (low) {
      text << "be " << (min_open ? "above " : "at least ") << min;
    } else if (high) {
      text << "be " << (max_open ? "below " : "at most ") << max;
    } else {
      text << "be finite";
    }
    return text.str();
  }
};

constexpr FieldRange AnyValue() { return {}; }
constexpr FieldRange AtLeast(double min) { return {min, std::numeric_limits<double>::infinity()}; }
constexpr FieldRange Positive() {
  FieldRange r = AtLeast(0);
  r.min_open = true;
  return r;
}
constexpr FieldRange Finite() {
  FieldRange r;
  r.finite = true;
  return r;
}
constexpr FieldRange FiniteAtLeast(double min) {
  FieldRange r = AtLeast(min);
  r.finite = true;
  return r;
}
// [min, max], or with either end open.
constexpr FieldRange InRange(double min, double max, bool min_open = false, bool max_open = false) {
  return {min, max, min_open, max_open, false};
}
// A share: [0, 1].
constexpr FieldRange Share() { return InRange(0, 1); }
// A count or size that is not negative, or -1 for "take it from the target"
// (HardwareParams; resolved when a task is made).
constexpr FieldRange CountOrFromTarget() {
  FieldRange r = AtLeast(-1);
  r.text = "not be negative (-1: take it from the target)";
  return r;
}

namespace fields_detail {

template <typename T>
struct IsList : std::false_type {};
template <typename T>
struct IsList<std::vector<T>> : std::true_type {};

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <typename T>
constexpr bool kNumeric = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

}  // namespace fields_detail

// Throws Error "<owner>: <name> must <range>, got <value>" when `value` (or an
// element of a list) lies outside `range`. An optional field that holds no
// value (None) passes.
template <typename T>
void CheckField(const char* owner, const char* name, const T& value, const FieldRange& range) {
  if constexpr (fields_detail::IsOptional<T>::value) {
    if (value.has_value()) CheckField(owner, name, *value, range);
  } else if constexpr (fields_detail::kNumeric<T>) {
    AS_CHECK(range.Contains(static_cast<double>(value)),
             owner << ": " << name << " must " << range.Describe() << ", got " << value);
  } else if constexpr (fields_detail::IsList<T>::value) {
    if constexpr (fields_detail::kNumeric<typename T::value_type>) {
      for (const auto& v : value) {
        AS_CHECK(range.Contains(static_cast<double>(v)),
                 owner << ": every value of " << name << " must " << range.Describe() << ", got " << v);
      }
    }
  }
}

// Every field of `options` in its range, then the struct's CheckTogether.
template <typename S>
void CheckFields(const S& options) {
  S::VisitFields(options, [](const char* name, const auto& value, const FieldRange& range, const char*) {
    CheckField(S::kOptionsName, name, value, range);
  });
  if constexpr (requires { options.CheckTogether(); }) options.CheckTogether();
}

// {"name": value, ...} for structs whose fields are numbers, flags, strings
// or lists of them.
template <typename S>
nlohmann::json FieldsToJson(const S& options) {
  nlohmann::json doc = nlohmann::json::object();
  S::VisitFields(options, [&](const char* name, const auto& value, const FieldRange&, const char*) {
    doc[name] = value;
  });
  return doc;
}

// The struct from FieldsToJson's form: missing fields keep their defaults;
// unknown fields, values of the wrong JSON type and values out of range are
// an Error naming the field.
template <typename S>
S FieldsFromJson(const nlohmann::json& doc) {
  AS_CHECK(doc.is_object(), S::kOptionsName << ": expected a JSON object, got " << doc.type_name());
  S options;
  for (const auto& [key, item] : doc.items()) {
    bool known = false;
    S::VisitFields(options, [&](const char* name, auto& value, const FieldRange&, const char*) {
      if (key != name) return;
      known = true;
      using T = std::decay_t<decltype(value)>;
      bool fits = false;
      const char* kind = "";
      if constexpr (std::is_same_v<T, bool>) {
        fits = item.is_boolean(), kind = "true or false";
      } else if constexpr (std::is_floating_point_v<T>) {
        fits = item.is_number(), kind = "a number";
      } else if constexpr (fields_detail::kNumeric<T>) {
        fits = item.is_number_integer(), kind = "an integer";
      } else if constexpr (std::is_same_v<T, std::string>) {
        fits = item.is_string(), kind = "a string";
      } else if constexpr (fields_detail::IsList<T>::value) {
        fits = item.is_array(), kind = "a list";
      }
      AS_CHECK(fits, S::kOptionsName << ": " << name << " must be " << kind << ", got " << item.dump());
      value = item.template get<T>();
    });
    AS_CHECK(known, S::kOptionsName << ": unknown field '" << key << "'");
  }
  CheckFields(options);
  return options;
}

}  // namespace autosched

#define AUTOSCHED_OPTIONS_FIELD_DECLARE(type, name, default_value, range, doc) type name = default_value;
#define AUTOSCHED_OPTIONS_FIELD_VISIT(type, name, default_value, range, doc) \
  visit(#name, self.name, ::autosched::range, doc);

// The members of an options struct from its field list, with operator== and
// VisitFields (see the top of this file).
#define AUTOSCHED_OPTIONS_FIELDS(Struct, LIST)           \
  LIST(AUTOSCHED_OPTIONS_FIELD_DECLARE)                  \
  static constexpr const char* kOptionsName = #Struct;   \
  template <typename Self, typename Visitor>             \
  static void VisitFields(Self& self, Visitor&& visit) { \
    LIST(AUTOSCHED_OPTIONS_FIELD_VISIT)                  \
  }                                                      \
  bool operator==(const Struct&) const = default;
