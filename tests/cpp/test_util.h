// Helpers every C++ test file may use.
#pragma once

#include <string>

#include "support/error.h"

namespace autosched::test {

// The message of the Error that `fn` throws, or "" when it throws none.
template <typename F>
std::string ErrorOf(F&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace autosched::test
