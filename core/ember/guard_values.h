// Value tests shared by the C++ halves of ember's guards (tensor_match.cpp, source_walk.cpp):
// each is the Python expression the guard would evaluate, with the same operations, and an
// error in it is False (the error cleared), as an exception makes the Python guard fail.
#pragma once

#include <Python.h>

namespace ember_guards {

// Truthiness of a new reference (a value read or a comparison): 1, 0, or -1 when the read or
// the test failed (the error cleared). The reference is released.
inline int truthy(PyObject* value) {
  if (value == nullptr) {
    PyErr_Clear();
    return -1;
  }
  int out = PyObject_IsTrue(value);
  Py_DECREF(value);
  if (out < 0) PyErr_Clear();
  return out;
}

// ``a == value`` as Python's operator (no identity shortcut: a NaN never equals itself), then
// its truth.
inline bool equal(PyObject* a, PyObject* value) {
  PyObject* eq = PyObject_RichCompare(a, value, Py_EQ);
  return eq != nullptr && truthy(eq) == 1;
}

// A constant: ``type(a) is type and a == value`` (item_types nullptr), or for a tuple of
// primitives ``a is value or (type(a) is tuple and a == value and tuple(map(type, a)) ==
// item_types)``.
inline bool same_constant(PyObject* a, PyTypeObject* type, PyObject* value, PyObject* item_types) {
  bool ok;
  if (item_types == nullptr) {
    ok = Py_TYPE(a) == type && equal(a, value);
  } else {
    ok = a == value;
    if (!ok && PyTuple_CheckExact(a) && equal(a, value)) {
      Py_ssize_t n = PyTuple_GET_SIZE(a);
      ok = n == PyTuple_GET_SIZE(item_types);
      for (Py_ssize_t i = 0; ok && i < n; ++i) {
        ok = (PyObject*)Py_TYPE(PyTuple_GET_ITEM(a, i)) == PyTuple_GET_ITEM(item_types, i);
      }
    }
  }
  if (PyErr_Occurred()) PyErr_Clear();
  return ok;
}

// Adds the SourceWalk type (source_walk.cpp) to the extension module; -1 with an error set.
int add_source_walk(PyObject* module);

}  // namespace ember_guards
