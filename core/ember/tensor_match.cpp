// The tensor checks of a guard, in C++: ``TensorMatch(specs, relations=())(tensors) -> bool``.
//
// A spec is the tuple ``(type, dtype, device, sizes, strides, requires_grad)`` that
// ember.guards records for a tensor input. Calling a TensorMatch with a tuple of tensors
// returns True when every tensor has exactly its spec's Python type, dtype, device, sizes,
// strides and requires_grad: the same test as the guard's Python expression
// ``type(t) is T and t.dtype is D and t.device == dev and t.shape == S and t.stride() == st
// and t.requires_grad is rg``, without creating a torch.Size, a tuple or a torch.device per
// tensor. A size or stride of -1 in a spec matches any value (a dynamic dimension).
//
// The relations between dynamic sizes that ember.shape_relations parsed into linear form are
// checked here too, once every tensor matched its spec, reading sizes straight from the tensors.
// A relation is ``((tensor, prop, dim, coefficient), ...), constant, op, modulus, offset``: with
// prop 0 size, 1 stride, 2 storage offset (dim unused), ``v = sum(coefficient * read) +
// constant``, then with a modulus > 0 ``v = v % modulus + offset`` (Python's %, never negative),
// and it holds when ``v op 0``, op 0..5 being == != < <= > >=. The limits on coefficients, terms
// and modulus (ember.shape_relations, checked again here) keep v within 128 bits: exact for any
// int64 reads, as Python's ints are. Relations whose tensors are not checked here stay in Python.
//
// With ``plain_modules=k``, the tuple's last k items are modules called as their class's forward
// with no hooks of their own: each must pass the guard's Python check ``'forward' not in (d :=
// m.__dict__) and not (d['_forward_hooks'] or d['_forward_pre_hooks'] or d['_backward_hooks'] or
// d.get('_backward_pre_hooks'))``, evaluated in the same order with the same operations (a table
// missing among the first three fails, as the KeyError makes the Python guard fail). A module
// that passed passes again without the reads while its type, its ``__dict__`` and its hook tables
// are at the versions they were (read_memo.h's ModuleMemo).
//
// With ``constants=((name, type, value, item_types), ...)``, the tuple ends with one object per
// constant, whose attribute ``name`` must pass the guard's Python check of a constant attribute:
// ``type(a) is type and a == value`` (item_types None), or for a tuple of primitives ``a is
// value or (type(a) is tuple and a == value and tuple(map(type, a)) == item_types)``. The
// attribute is read with PyObject_GetAttr (Python's ``obj.name``), compared with
// PyObject_RichCompare (Python's ``==``, no identity shortcut, so a NaN never equals itself).
//
// Anything the C++ side cannot read (a sparse or nested tensor's strides, say) is a mismatch,
// never an exception: the guard then fails and the call recompiles.
#include <Python.h>

#include <torch/csrc/Device.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/autograd/python_variable.h>

#include <new>
#include <vector>

#include "guard_values.h"
#include "read_memo.h"

namespace {

using ember_guards::same_constant;
using ember_guards::truthy;

struct Spec {
  PyTypeObject* type;  // a strong reference
  c10::ScalarType dtype;
  c10::Device device;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  bool requires_grad;
};

struct Term {
  size_t tensor;
  int prop;  // 0 size, 1 stride, 2 storage offset
  size_t dim;
  int64_t coefficient;
};

struct Relation {
  std::vector<Term> terms;
  int64_t constant;
  int op;  // == != < <= > >=
  int64_t modulus;  // 0: none
  int64_t offset;
};

constexpr int64_t kMaxCoefficient = int64_t(1) << 32;
constexpr size_t kMaxTerms = 32;
constexpr int64_t kMaxModulus = int64_t(1) << 62;

struct Constant {
  PyObject* name;        // interned attribute name, a strong reference
  PyTypeObject* type;    // a strong reference
  PyObject* value;       // a strong reference
  PyObject* item_types;  // a tuple of types (a tuple constant), or nullptr; a strong reference
};

struct Checks {
  std::vector<Spec> specs;
  std::vector<Relation> relations;
  size_t plain_modules = 0;
  std::vector<ember_guards::ModuleMemo> module_memos;  // one per plain module (read_memo.h)
  std::vector<Constant> constants;
};

void release(Checks* checks) {
  for (Spec& spec : checks->specs) Py_DECREF(spec.type);
  for (Constant& c : checks->constants) {
    Py_DECREF(c.name);
    Py_DECREF(c.type);
    Py_DECREF(c.value);
    Py_XDECREF(c.item_types);
  }
  delete checks;
}

bool read_constant(PyObject* item, Constant& constant) {
  PyObject *name, *type, *value, *item_types;
  if (!PyArg_ParseTuple(item, "O!O!OO", &PyUnicode_Type, &name, &PyType_Type, &type, &value, &item_types)) {
    return false;
  }
  if (item_types != Py_None && !PyTuple_Check(item_types)) {
    PyErr_SetString(PyExc_TypeError, "a constant's item types are a tuple or None");
    return false;
  }
  Py_INCREF(name);
  PyUnicode_InternInPlace(&name);
  constant.name = name;
  Py_INCREF(type);
  constant.type = (PyTypeObject*)type;
  Py_INCREF(value);
  constant.value = value;
  constant.item_types = item_types == Py_None ? nullptr : item_types;
  Py_XINCREF(constant.item_types);
  return true;
}

struct TensorMatch {
  PyObject_HEAD
  Checks* checks;
};

bool read_ints(PyObject* seq, std::vector<int64_t>& out) {
  PyObject* fast = PySequence_Fast(seq, "sizes and strides must be sequences of ints");
  if (fast == nullptr) return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  out.reserve(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
    if (v == -1 && PyErr_Occurred()) {
      Py_DECREF(fast);
      return false;
    }
    out.push_back(v);
  }
  Py_DECREF(fast);
  return true;
}

bool read_spec(PyObject* item, Spec& spec) {
  PyObject *type, *dtype, *device, *sizes, *strides;
  int requires_grad;
  if (!PyArg_ParseTuple(item, "O!O!O!OOp", &PyType_Type, &type, &THPDtypeType, &dtype,
                        &THPDeviceType, &device, &sizes, &strides, &requires_grad)) {
    return false;
  }
  if (!PyType_IsSubtype((PyTypeObject*)type, (PyTypeObject*)THPVariableClass)) {
    PyErr_SetString(PyExc_TypeError, "a spec's type must be a torch.Tensor type");
    return false;
  }
  spec.dtype = ((THPDtype*)dtype)->scalar_type;
  spec.device = ((THPDevice*)device)->device;
  spec.requires_grad = requires_grad != 0;
  if (!read_ints(sizes, spec.sizes) || !read_ints(strides, spec.strides)) return false;
  Py_INCREF(type);
  spec.type = (PyTypeObject*)type;
  return true;
}

bool invalid(const char* message) {
  PyErr_SetString(PyExc_ValueError, message);
  return false;
}

bool read_term(PyObject* item, const std::vector<Spec>& specs, Term& term) {
  Py_ssize_t tensor, dim;
  long long coefficient;
  if (!PyArg_ParseTuple(item, "ninL", &tensor, &term.prop, &dim, &coefficient)) return false;
  if (tensor < 0 || (size_t)tensor >= specs.size()) return invalid("a term reads a tensor that is not checked");
  if (term.prop < 0 || term.prop > 2) return invalid("a term reads a size (0), stride (1) or storage offset (2)");
  if (term.prop < 2 && (dim < 0 || (size_t)dim >= specs[tensor].sizes.size())) {
    return invalid("a term reads a dimension the tensor's spec does not have");
  }
  if (coefficient < -kMaxCoefficient || coefficient > kMaxCoefficient) return invalid("a coefficient is too large");
  term.tensor = (size_t)tensor;
  term.dim = term.prop < 2 ? (size_t)dim : 0;
  term.coefficient = coefficient;
  return true;
}

bool read_relation(PyObject* item, const std::vector<Spec>& specs, Relation& relation) {
  PyObject* terms;
  long long constant, modulus, offset;
  if (!PyArg_ParseTuple(item, "O!LiLL", &PyTuple_Type, &terms, &constant, &relation.op, &modulus, &offset)) {
    return false;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(terms);
  if (n < 1 || (size_t)n > kMaxTerms) return invalid("a relation has 1 to 32 terms");
  if (relation.op < 0 || relation.op > 5) return invalid("a relation's op is 0 to 5");
  if (modulus < 0 || modulus > kMaxModulus) return invalid("a relation's modulus is 0 (none) to 2**62");
  for (Py_ssize_t i = 0; i < n; ++i) {
    Term term;
    if (!read_term(PyTuple_GET_ITEM(terms, i), specs, term)) return false;
    relation.terms.push_back(term);
  }
  relation.constant = constant;
  relation.modulus = modulus;
  relation.offset = offset;
  return true;
}

// Garbage-collected: a constant it compares with may refer back to what holds the guard.
int TensorMatch_traverse(TensorMatch* self, visitproc visit, void* arg) {
  if (self->checks == nullptr) return 0;
  for (const Spec& spec : self->checks->specs) Py_VISIT(spec.type);
  for (const Constant& c : self->checks->constants) {
    Py_VISIT(c.type);
    Py_VISIT(c.value);
    Py_VISIT(c.item_types);
  }
  return 0;
}

int TensorMatch_clear(TensorMatch* self) {
  Checks* checks = self->checks;
  self->checks = nullptr;
  if (checks != nullptr) release(checks);
  return 0;
}

void TensorMatch_dealloc(TensorMatch* self) {
  PyObject_GC_UnTrack(self);
  TensorMatch_clear(self);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

int TensorMatch_init(TensorMatch* self, PyObject* args, PyObject* kwargs) {
  PyObject* specs;
  PyObject* relations = nullptr;
  Py_ssize_t plain_modules = 0;
  PyObject* constants = nullptr;
  if (!PyArg_ParseTuple(args, "O!|O!nO!", &PyTuple_Type, &specs, &PyTuple_Type, &relations, &plain_modules,
                        &PyTuple_Type, &constants)) {
    return -1;
  }
  if (plain_modules < 0) {
    PyErr_SetString(PyExc_ValueError, "plain_modules must be >= 0");
    return -1;
  }
  if (self->checks != nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "a TensorMatch is initialised once");
    return -1;
  }
  if (THPVariableClass == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "torch is not initialised");
    return -1;
  }
  auto* parsed = new (std::nothrow) Checks();
  if (parsed == nullptr) {
    PyErr_NoMemory();
    return -1;
  }
  auto fail = [parsed]() {
    release(parsed);
    return -1;
  };
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(specs); ++i) {
    Spec spec{nullptr, c10::ScalarType::Undefined, c10::Device(c10::kCPU), {}, {}, false};
    if (!read_spec(PyTuple_GET_ITEM(specs, i), spec)) return fail();
    parsed->specs.push_back(std::move(spec));
  }
  for (Py_ssize_t i = 0; relations != nullptr && i < PyTuple_GET_SIZE(relations); ++i) {
    Relation relation;
    if (!read_relation(PyTuple_GET_ITEM(relations, i), parsed->specs, relation)) return fail();
    parsed->relations.push_back(std::move(relation));
  }
  for (Py_ssize_t i = 0; constants != nullptr && i < PyTuple_GET_SIZE(constants); ++i) {
    Constant constant{nullptr, nullptr, nullptr, nullptr};
    if (!read_constant(PyTuple_GET_ITEM(constants, i), constant)) return fail();
    parsed->constants.push_back(constant);
  }
  parsed->plain_modules = (size_t)plain_modules;
  parsed->module_memos.resize((size_t)plain_modules);
  self->checks = parsed;
  return 0;
}

// Equal lengths, and every item equal where the spec's is not -1 ("any").
bool ints_match(c10::IntArrayRef actual, const std::vector<int64_t>& spec) {
  if (actual.size() != spec.size()) return false;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] != -1 && actual[i] != spec[i]) return false;
  }
  return true;
}

bool matches(PyObject* obj, const Spec& spec) {
  if (Py_TYPE(obj) != spec.type) return false;  // also proves obj is a tensor
  try {
    const at::Tensor& t = THPVariable_Unpack(obj);
    return t.scalar_type() == spec.dtype && t.device() == spec.device &&
           ints_match(t.sizes(), spec.sizes) && ints_match(t.strides(), spec.strides) &&
           t.requires_grad() == spec.requires_grad;
  } catch (...) {
    return false;
  }
}

// Called once every tensor matched its spec: each is a tensor of the spec's dimensions.
bool holds(const Relation& relation, PyObject* tensors) {
  try {
    __int128 value = relation.constant;
    for (const Term& term : relation.terms) {
      const at::Tensor& t = THPVariable_Unpack(PyTuple_GET_ITEM(tensors, term.tensor));
      int64_t read = term.prop == 0 ? t.sizes()[term.dim]
                     : term.prop == 1 ? t.strides()[term.dim]
                                      : t.storage_offset();
      value += (__int128)term.coefficient * read;
    }
    if (relation.modulus != 0) {
      value %= relation.modulus;
      if (value < 0) value += relation.modulus;
      value += relation.offset;
    }
    switch (relation.op) {
      case 0: return value == 0;
      case 1: return value != 0;
      case 2: return value < 0;
      case 3: return value <= 0;
      case 4: return value > 0;
      default: return value >= 0;
    }
  } catch (...) {
    return false;
  }
}

// The module check of the header: d = m.__dict__, then the operations of the Python expression.
// A plain dict (what a module's __dict__ is) is read with the dict API, which is what Python's
// operators do on one; anything else through the generic protocols. Keys are interned once.
// ``memo`` knows when the answer is the last one (read_memo.h).
bool plain_module(PyObject* module, ember_guards::ModuleMemo& memo) {
  if (ember_guards::recall_module(memo, module)) return true;
  static PyObject* dict_name = PyUnicode_InternFromString("__dict__");
  static PyObject* forward = PyUnicode_InternFromString("forward");
  static PyObject* required[] = {PyUnicode_InternFromString("_forward_hooks"),
                                 PyUnicode_InternFromString("_forward_pre_hooks"),
                                 PyUnicode_InternFromString("_backward_hooks")};
  static PyObject* optional = PyUnicode_InternFromString("_backward_pre_hooks");
  if (dict_name == nullptr || forward == nullptr || required[0] == nullptr || required[1] == nullptr ||
      required[2] == nullptr || optional == nullptr) {
    PyErr_Clear();
    return false;
  }
  PyObject* d = PyObject_GetAttr(module, dict_name);
  if (d == nullptr) {
    PyErr_Clear();
    return false;
  }
  bool ok = true;
  if (PyDict_CheckExact(d)) {
    int has_forward = PyDict_Contains(d, forward);
    ok = has_forward == 0;
    for (size_t i = 0; ok && i < 3; ++i) {
      PyObject* table = PyDict_GetItemWithError(d, required[i]);  // borrowed
      if (table == nullptr) {
        ok = false;  // missing: Python's d[key] raises
      } else {
        int t = PyObject_IsTrue(table);
        ok = t == 0;
      }
    }
    if (ok) {
      PyObject* table = PyDict_GetItemWithError(d, optional);  // d.get(key): None when missing
      ok = table == nullptr ? !PyErr_Occurred() : PyObject_IsTrue(table) == 0;
    }
  } else {
    int has_forward = PySequence_Contains(d, forward);
    ok = has_forward == 0;
    for (size_t i = 0; ok && i < 3; ++i) ok = truthy(PyObject_GetItem(d, required[i])) == 0;
    if (ok) ok = truthy(PyObject_CallMethod(d, "get", "O", optional)) == 0;
  }
  if (PyErr_Occurred()) PyErr_Clear();
  memo.module = nullptr;
  if (ok) {
    PyObject* const tables[4] = {required[0], required[1], required[2], optional};
    ember_guards::remember_module(memo, module, d, tables);
  }
  Py_DECREF(d);
  return ok;
}

// The constant check of the header on ``obj.name``.
bool constant_holds(PyObject* obj, const Constant& c) {
  PyObject* a = PyObject_GetAttr(obj, c.name);
  if (a == nullptr) {
    PyErr_Clear();
    return false;
  }
  bool ok = same_constant(a, c.type, c.value, c.item_types);
  Py_DECREF(a);
  return ok;
}

PyObject* TensorMatch_call(TensorMatch* self, PyObject* args, PyObject* kwargs) {
  PyObject* tensors;
  if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &tensors)) return nullptr;
  if (self->checks == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "TensorMatch was not initialised");
    return nullptr;
  }
  const std::vector<Spec>& specs = self->checks->specs;
  const size_t modules = self->checks->plain_modules;
  const std::vector<Constant>& constants = self->checks->constants;
  if ((size_t)PyTuple_GET_SIZE(tensors) != specs.size() + modules + constants.size()) {
    PyErr_SetString(PyExc_ValueError,
                    "expected one tensor per spec, then the plain modules, then the constants' objects");
    return nullptr;
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!matches(PyTuple_GET_ITEM(tensors, i), specs[i])) Py_RETURN_FALSE;
  }
  for (const Relation& relation : self->checks->relations) {
    if (!holds(relation, tensors)) Py_RETURN_FALSE;
  }
  for (size_t i = 0; i < modules; ++i) {
    if (!plain_module(PyTuple_GET_ITEM(tensors, specs.size() + i), self->checks->module_memos[i])) Py_RETURN_FALSE;
  }
  for (size_t i = 0; i < constants.size(); ++i) {
    if (!constant_holds(PyTuple_GET_ITEM(tensors, specs.size() + modules + i), constants[i])) Py_RETURN_FALSE;
  }
  Py_RETURN_TRUE;
}

PyObject* TensorMatch_len(TensorMatch* self, void*) {
  return PyLong_FromSize_t(self->checks == nullptr ? 0 : self->checks->specs.size());
}

PyObject* TensorMatch_relations(TensorMatch* self, void*) {
  return PyLong_FromSize_t(self->checks == nullptr ? 0 : self->checks->relations.size());
}

PyGetSetDef TensorMatch_getset[] = {
    {"count", (getter)TensorMatch_len, nullptr, "how many tensors it checks", nullptr},
    {"relations", (getter)TensorMatch_relations, nullptr, "how many shape relations it checks", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject TensorMatchType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "ember_tensor_match",
                          "The tensor checks of ember's guards, in C++.", -1, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_ember_tensor_match() {
  TensorMatchType.tp_name = "ember_tensor_match.TensorMatch";
  TensorMatchType.tp_basicsize = sizeof(TensorMatch);
  TensorMatchType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
  TensorMatchType.tp_traverse = (traverseproc)TensorMatch_traverse;
  TensorMatchType.tp_clear = (inquiry)TensorMatch_clear;
  TensorMatchType.tp_doc =
      "TensorMatch(specs, relations=(), plain_modules=0, constants=())(tensors + modules + objects) -> bool";
  TensorMatchType.tp_new = PyType_GenericNew;
  TensorMatchType.tp_init = (initproc)TensorMatch_init;
  TensorMatchType.tp_dealloc = (destructor)TensorMatch_dealloc;
  TensorMatchType.tp_call = (ternaryfunc)TensorMatch_call;
  TensorMatchType.tp_getset = TensorMatch_getset;
  if (PyType_Ready(&TensorMatchType) < 0) return nullptr;
  PyObject* module = PyModule_Create(&module_def);
  if (module == nullptr) return nullptr;
  Py_INCREF(&TensorMatchType);
  if (PyModule_AddObject(module, "TensorMatch", (PyObject*)&TensorMatchType) < 0) {
    Py_DECREF(&TensorMatchType);
    Py_DECREF(module);
    return nullptr;
  }
  if (ember_guards::add_source_walk(module) < 0) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
