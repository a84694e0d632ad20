#include "python/fastcall.h"

#include <stdexcept>

namespace nccl_core::python::fastcall {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(' ');
  size_t e = s.find_last_not_of(' ');
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// Index of the parameter named `key`, or names.size().
size_t find(const Signature& sig, PyObject* key) {
  for (size_t i = 0; i < sig.interned.size(); ++i) {
    if (sig.interned[i] == key) {
      return i;  // keywords at call sites are interned: the usual match
    }
  }
  for (size_t i = 0; i < sig.interned.size(); ++i) {
    int eq = PyUnicode_Compare(sig.interned[i], key);
    if (eq == 0) {
      return i;
    }
    if (eq == -1 && PyErr_Occurred()) {
      PyErr_Clear();  // not a str: no match
    }
  }
  return sig.names.size();
}

}  // namespace

Signature make_signature(const char* method, const char* params, const char* doc) {
  Signature sig;
  sig.method = method;
  std::string list = params;
  bool keyword_only = false;
  bool optional = false;
  size_t start = 0;
  while (start <= list.size() && !list.empty()) {
    size_t comma = list.find(',', start);
    std::string p = trim(list.substr(start, comma == std::string::npos ? std::string::npos
                                                                         : comma - start));
    start = comma == std::string::npos ? list.size() + 1 : comma + 1;
    if (p == "*") {
      keyword_only = true;
      continue;
    }
    py::object value;  // the default
    if (size_t eq = p.find('='); eq != std::string::npos) {
      std::string v = trim(p.substr(eq + 1));
      p = trim(p.substr(0, eq));
      if (v == "None") {
        value = py::none();
      } else {
        size_t used = 0;
        long long n = std::stoll(v, &used);  // throws std::invalid_argument
        if (used != v.size()) {
          throw std::invalid_argument(std::string(method) + ": default of " + p +
                                      " is neither None nor an int");
        }
        value = py::int_(n);
      }
    }
    bool has_default = static_cast<bool>(value);
    if (!has_default && optional && !keyword_only) {
      throw std::invalid_argument(std::string(method) + ": " + p + " follows an optional one");
    }
    optional = optional || has_default;
    sig.names.push_back(p);
    sig.defaults.push_back(value ? value.release().ptr() : nullptr);
    if (!keyword_only) {
      ++sig.positional;
    }
  }
  for (const auto& n : sig.names) {
    PyObject* s = PyUnicode_InternFromString(n.c_str());
    if (s == nullptr) {
      throw py::error_already_set();
    }
    sig.interned.push_back(s);
  }
  // CPython reads "name($self, ...)\n--\n\n" as the text signature.
  sig.doc = sig.method + "($self" + (list.empty() ? "" : ", " + list) + ")\n--\n\n" + doc;
  return sig;
}

bool parse(const Signature& sig, PyObject* const* args, size_t nargs, PyObject* kwnames,
           PyObject** out) {
  const size_t n = sig.names.size();
  const char* m = sig.method.c_str();
  if (nargs > sig.positional) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most %zu positional arguments (%zu given)", m,
                 sig.positional, nargs);
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    out[i] = i < nargs ? args[i] : nullptr;
  }
  size_t nkw = kwnames != nullptr ? static_cast<size_t>(PyTuple_GET_SIZE(kwnames)) : 0;
  for (size_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    size_t i = find(sig, key);
    if (i == n) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%S'", m, key);
      return false;
    }
    if (out[i] != nullptr) {
      PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", m,
                   sig.names[i].c_str());
      return false;
    }
    out[i] = args[nargs + k];
  }
  for (size_t i = 0; i < n; ++i) {
    if (out[i] == nullptr) {
      if (!sig.defaults[i]) {
        PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", m,
                     sig.names[i].c_str());
        return false;
      }
      out[i] = sig.defaults[i];  // borrowed, like the arguments
    }
  }
  return true;
}

void install(py::handle cls, PyMethodDef* def) {
  PyObject* descr = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), def);
  if (descr == nullptr) {
    throw py::error_already_set();
  }
  py::setattr(cls, def->ml_name, py::reinterpret_steal<py::object>(descr));
}

}  // namespace nccl_core::python::fastcall
