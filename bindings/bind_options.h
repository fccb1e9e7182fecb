// Python classes of the options structs of support/fields.h, from their one
// field list: construction by keyword (a field not given, or given None,
// keeps its default; an optional field, std::optional, takes None for no
// value), a property per field whose setter checks like the
// constructor, ==, repr, to_dict, pickling, and the tuple `field_names`.
// A value of the wrong type is a TypeError, one out of range a ValueError;
// both name the struct and the field.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <type_traits>
#include <vector>

#include "support/error.h"
#include "support/fields.h"

namespace autosched::bindings {
namespace options_detail {

namespace py = pybind11;

inline std::string Repr(py::handle value) { return py::str(py::repr(value)).cast<std::string>(); }

inline bool IsInt(py::handle value) {
  return py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value);
}

// `value` as a field of type T, or TypeError / Error naming owner.name.
template <typename T>
T FromPython(const char* owner, const char* name, py::handle value) {
  if constexpr (fields_detail::IsOptional<T>::value) {
    if (value.is_none()) return std::nullopt;
    return FromPython<typename T::value_type>(owner, name, value);
  } else if constexpr (std::is_same_v<T, bool>) {
    AS_TYPE_CHECK(py::isinstance<py::bool_>(value),
                  owner << ": " << name << " must be True or False, got " << Repr(value));
    return value.cast<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    AS_TYPE_CHECK(IsInt(value), owner << ": " << name << " must be an int, got " << Repr(value));
    if constexpr (std::is_unsigned_v<T>) {
      AS_CHECK(value.cast<py::int_>() >= py::int_(0),
               owner << ": " << name << " must not be negative, got " << Repr(value));
    }
    try {
      return value.cast<T>();
    } catch (const py::cast_error&) {
      const bool negative = value.cast<py::int_>() < py::int_(0);
      AS_CHECK(false, owner << ": " << name << (negative ? " is too small" : " is too large") << ", got "
                            << Repr(value));
    }
    return T{};
  } else if constexpr (std::is_floating_point_v<T>) {
    AS_TYPE_CHECK(IsInt(value) || py::isinstance<py::float_>(value),
                  owner << ": " << name << " must be a number, got " << Repr(value));
    return value.cast<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    AS_TYPE_CHECK(py::isinstance<py::str>(value),
                  owner << ": " << name << " must be a string, got " << Repr(value));
    return value.cast<std::string>();
  } else if constexpr (fields_detail::IsList<T>::value) {
    AS_TYPE_CHECK(py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value),
                  owner << ": " << name << " must be a list, got " << Repr(value));
    T out;
    for (py::handle item : value) {
      out.push_back(FromPython<typename T::value_type>(owner, name, item));
    }
    return out;
  } else {
    try {
      return value.cast<T>();
    } catch (const py::cast_error&) {
      AS_TYPE_CHECK(false,
                    owner << ": " << name << " must be a " << T::kOptionsName << ", got " << Repr(value));
    }
    return T{};
  }
}

// Sets the field `key` of *options from `value` (checked); false when the
// struct has no such field.
template <typename S>
bool SetField(S* options, const std::string& key, py::handle value) {
  bool known = false;
  S::VisitFields(*options, [&](const char* name, auto& field, const FieldRange& range, const char*) {
    if (key != name) return;
    using T = std::decay_t<decltype(field)>;
    T parsed = FromPython<T>(S::kOptionsName, name, value);
    CheckField(S::kOptionsName, name, parsed, range);
    field = std::move(parsed);
    known = true;
  });
  return known;
}

template <typename S>
py::object GetField(const S& options, const std::string& key) {
  py::object out;
  S::VisitFields(options, [&](const char* name, const auto& field, const FieldRange&, const char*) {
    if (key == name) out = py::cast(field);
  });
  return out;
}

template <typename S>
py::dict ToDict(const S& options) {
  py::dict out;
  S::VisitFields(options, [&](const char* name, const auto& field, const FieldRange&, const char*) {
    out[name] = py::cast(field);
  });
  return out;
}

// " (did you mean 'name'?)" with the field of S closest to `key` (difflib's
// judgement, as the Python classes' keywords), or "" when none is close.
template <typename S>
std::string DidYouMean(const std::string& key) {
  py::list names;
  const S defaults{};
  S::VisitFields(defaults,
                 [&](const char* name, const auto&, const FieldRange&, const char*) { names.append(name); });
  py::list close = py::module_::import("difflib").attr("get_close_matches")(key, names, 1);
  return close.empty() ? "" : " (did you mean '" + close[0].cast<std::string>() + "'?)";
}

// `options` with the fields the mapping gives (None: keep), checked.
template <typename S>
S FromMapping(const py::handle& mapping, S options = S{}) {
  for (auto [key_handle, value] : mapping.cast<py::dict>()) {
    const std::string key = py::str(key_handle);
    if (value.is_none()) continue;
    AS_TYPE_CHECK(SetField(&options, key, value),
                  S::kOptionsName << " got an unknown keyword '" << key << "'" << DidYouMean<S>(key));
  }
  CheckFields(options);
  return options;
}

}  // namespace options_detail

// The class of S; `make` is its constructor (a function of the Python
// arguments returning S), by default one of keywords only.
template <typename S, typename Make>
pybind11::class_<S> BindOptions(pybind11::module_& m, const char* python_name, const char* doc, Make make) {
  namespace py = pybind11;
  using namespace options_detail;
  py::class_<S> cls(m, python_name, doc);
  cls.def(py::init(make));
  py::list names;
  const S defaults{};
  S::VisitFields(defaults, [&](const char* name, const auto&, const FieldRange&, const char* field_doc) {
    const std::string key = name;
    names.append(key);
    cls.def_property(
        name, [key](const S& s) { return GetField(s, key); },
        [key](S& s, const py::object& value) { SetField(&s, key, value); }, field_doc);
  });
  cls.attr("field_names") = py::tuple(names);
  auto equal = [](const S& a, const py::object& b) {
    return py::isinstance<S>(b) && a == b.cast<const S&>();
  };
  cls.def("__eq__", equal)
      .def("__ne__", [equal](const S& a, const py::object& b) { return !equal(a, b); })
      .def("to_dict", &ToDict<S>, "{field: value} of every field")
      .def("__repr__",
           [](const py::object& self) {
             std::string text = py::str(py::type::of(self).attr("__name__")).cast<std::string>() + "(";
             const char* sep = "";
             for (auto [key, value] : ToDict(self.cast<const S&>())) {
               text += sep + py::str(key).cast<std::string>() + "=" + Repr(value);
               sep = ", ";
             }
             return text + ")";
           })
      .def(py::pickle([](const S& s) { return ToDict(s); },
                      [](const py::dict& state) { return FromMapping<S>(state); }));
  return cls;
}

template <typename S>
pybind11::class_<S> BindOptions(pybind11::module_& m, const char* python_name, const char* doc) {
  return BindOptions<S>(m, python_name, doc, [](const pybind11::kwargs& kwargs) {
    return options_detail::FromMapping<S>(kwargs);
  });
}

}  // namespace autosched::bindings
