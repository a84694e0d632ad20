// Methods bound as CPython METH_FASTCALL functions instead of through
// pybind11's dispatcher: the raw operations, whose host cost is their point.
// pybind11 3.1 builds a call record for every call and, once a keyword is
// passed, copies the keyword dict and looks each parameter up through a new
// string: 0.36 µs for comm.allreduce(x, y, op), 1.5 µs with stream=s; a
// vectorcall method takes the same arguments in 0.08-0.13 µs
// (bench/results/hostpath-1gpu-h200.md).
//
// A method is declared by its Python parameter list, e.g.
//   "sendbuf, recvbuf, op, root=None, *, stream=None"
// (defaults are None or an int), and a capture-free lambda taking the bound
// object and one py::handle per parameter, its default where left out; each
// method needs a lambda of its own (the signature is kept per lambda type).
// Calls of the wrong shape raise TypeError as a Python def would; C++
// exceptions become Python ones through pybind11's registered translators, as
// for any bound method; inspect.signature reads the parameter list.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace nccl_core::python::fastcall {

namespace py = pybind11;

struct Signature {
  std::string method;
  std::vector<std::string> names;
  // Both hold references for the life of the process: a static py::object
  // would be released after the interpreter is gone.
  std::vector<PyObject*> interned;  // the names as interned str
  std::vector<PyObject*> defaults;  // null for a required parameter
  size_t positional = 0;             // the first ones may come by position
  std::string doc;                   // text signature, then the docstring
};

// Parses "a, b, c=None, *, d=0" for `method`; throws std::invalid_argument
// on a list this module cannot bind.
Signature make_signature(const char* method, const char* params, const char* doc);

// Spreads a call's arguments over out[0 .. names.size()) (borrowed; left
// out: the default); false, with a TypeError set, where they do not fit.
bool parse(const Signature& sig, PyObject* const* args, size_t nargs, PyObject* kwnames,
           PyObject** out);

// Installs `def` (static storage) on `cls` as a method descriptor.
void install(py::handle cls, PyMethodDef* def);

namespace detail {

template <class M>
struct Arity;
template <class C, class R, class Self, class... A>
struct Arity<R (C::*)(Self, A...) const> {
  static constexpr size_t value = sizeof...(A);
  using self = std::remove_cv_t<std::remove_reference_t<Self>>;
};

template <class Fn>
using ArityOf = Arity<decltype(&Fn::operator())>;

// One of each per bound lambda (each lambda is a type of its own; C++17
// cannot default-construct one, so it is kept).
template <class Fn>
Signature& signature_of() {
  static Signature s;
  return s;
}
template <class Fn>
std::optional<Fn>& lambda_of() {
  static std::optional<Fn> fn;
  return fn;
}

template <class Fn, size_t... I>
PyObject* call(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
               std::index_sequence<I...>) {
  using Self = typename ArityOf<Fn>::self;
  PyObject* a[sizeof...(I) + 1];  // + 1: never an empty array
  if (!parse(signature_of<Fn>(), args, static_cast<size_t>(nargs), kwnames, a)) {
    return nullptr;
  }
  try {
    // Keeps temporaries of implicit conversions alive for the call (a
    // dist.ReduceOp.RedOpType read as a ReduceOp), as pybind11's dispatcher does.
    py::detail::loader_life_support temporaries;
    Self& s = py::handle(self).cast<Self&>();
    const Fn& fn = *lambda_of<Fn>();
    using R = decltype(fn(s, py::handle(a[I])...));
    if constexpr (std::is_void_v<R>) {
      fn(s, py::handle(a[I])...);
      Py_RETURN_NONE;
    } else {
      return py::cast(fn(s, py::handle(a[I])...)).release().ptr();
    }
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    py::detail::try_translate_exceptions();  // what pybind11's dispatcher does
  }
  return nullptr;
}

template <class Fn>
PyObject* entry(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return call<Fn>(self, args, nargs, kwnames, std::make_index_sequence<ArityOf<Fn>::value>{});
}

}  // namespace detail

// cls.<method>(params...) runs fn(self, handles...).
template <class Fn>
void def(py::handle cls, const char* method, const char* params, Fn fn, const char* doc) {
  static_assert(std::is_empty_v<Fn>, "fastcall::def binds lambdas without captures");
  Signature& sig = detail::signature_of<Fn>();
  sig = make_signature(method, params, doc);
  if (sig.names.size() != detail::ArityOf<Fn>::value) {
    throw std::invalid_argument(std::string("fastcall::def: ") + method + " declares " +
                                std::to_string(sig.names.size()) + " parameters, its lambda takes " +
                                std::to_string(detail::ArityOf<Fn>::value));
  }
  detail::lambda_of<Fn>().emplace(fn);
  static PyMethodDef method_def{};
  method_def.ml_name = sig.method.c_str();
  method_def.ml_meth = reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&detail::entry<Fn>));
  method_def.ml_flags = METH_FASTCALL | METH_KEYWORDS;
  method_def.ml_doc = sig.doc.c_str();
  install(cls, &method_def);
}

}  // namespace nccl_core::python::fastcall
