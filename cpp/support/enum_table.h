// One table per enum: the names used in records, messages and Python, and the
// parser that reads them back. Records store names, never ordinals, so that
// reordering an enum cannot change what an old log means.
//
//   constexpr EnumEntry<Color> kColorNames[] = {{Color::Red, "red"}, {Color::Blue, "blue"}};
//   EnumName(kColorNames, Color::Red)              -> "red"
//   ParseEnum(kColorNames, "blue", "color")        -> Color::Blue
//   ParseEnum(kColorNames, "green", "color")       -> Error "unknown color 'green' (known: red, blue)"
#pragma once

#include <cstddef>
#include <string>

#include "support/error.h"

namespace autosched {

template <typename E>
struct EnumEntry {
  E value;
  const char* name;
};

template <typename E, size_t N>
const char* EnumName(const EnumEntry<E> (&table)[N], E value) {
  for (const EnumEntry<E>& entry : table) {
    if (entry.value == value) return entry.name;
  }
  AS_ICHECK(false, "enum value " << static_cast<long long>(value) << " missing from its name table");
  return "";
}

// Comma-separated names, in table order (for messages and docs).
template <typename E, size_t N>
std::string EnumNames(const EnumEntry<E> (&table)[N]) {
  std::string names;
  for (const EnumEntry<E>& entry : table) names += (names.empty() ? "" : ", ") + std::string(entry.name);
  return names;
}

// Throws Error naming `what`, the text and the known names when text is not one of them.
template <typename E, size_t N>
E ParseEnum(const EnumEntry<E> (&table)[N], const std::string& text, const char* what) {
  for (const EnumEntry<E>& entry : table) {
    if (text == entry.name) return entry.value;
  }
  AS_CHECK(false, "unknown " << what << " '" << text << "' (known: " << EnumNames(table) << ")");
  return table[0].value;
}

}  // namespace autosched
