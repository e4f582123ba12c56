// The tensor checks of a guard, in C++: ``TensorMatch(specs)(tensors) -> bool``.
//
// A spec is the tuple ``(type, dtype, device, sizes, strides, requires_grad)`` that
// ember.guards records for a tensor input. Calling a TensorMatch with a tuple of tensors
// returns True when every tensor has exactly its spec's Python type, dtype, device, sizes,
// strides and requires_grad: the same test as the guard's Python expression
// ``type(t) is T and t.dtype is D and t.device == dev and t.shape == S and t.stride() == st
// and t.requires_grad is rg``, without creating a torch.Size, a tuple or a torch.device per
// tensor. A size or stride of -1 in a spec matches any value (a dynamic dimension, whose
// relations the guard checks in Python after this call). Anything the C++ side cannot read (a sparse or nested tensor's strides, say) is a
// mismatch, never an exception: the guard then fails and the call recompiles.
#include <Python.h>

#include <torch/csrc/Device.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/autograd/python_variable.h>

#include <new>
#include <vector>

namespace {

struct Spec {
  PyTypeObject* type;  // a strong reference
  c10::ScalarType dtype;
  c10::Device device;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  bool requires_grad;
};

struct TensorMatch {
  PyObject_HEAD
  std::vector<Spec>* specs;
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

void TensorMatch_dealloc(TensorMatch* self) {
  if (self->specs != nullptr) {
    for (Spec& spec : *self->specs) Py_DECREF(spec.type);
    delete self->specs;
  }
  Py_TYPE(self)->tp_free((PyObject*)self);
}

int TensorMatch_init(TensorMatch* self, PyObject* args, PyObject* kwargs) {
  PyObject* specs;
  if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &specs)) return -1;
  if (self->specs != nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "a TensorMatch is initialised once");
    return -1;
  }
  if (THPVariableClass == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "torch is not initialised");
    return -1;
  }
  auto* parsed = new (std::nothrow) std::vector<Spec>();
  if (parsed == nullptr) {
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(specs); ++i) {
    Spec spec{nullptr, c10::ScalarType::Undefined, c10::Device(c10::kCPU), {}, {}, false};
    if (!read_spec(PyTuple_GET_ITEM(specs, i), spec)) {
      for (Spec& done : *parsed) Py_DECREF(done.type);
      delete parsed;
      return -1;
    }
    parsed->push_back(std::move(spec));
  }
  self->specs = parsed;
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

PyObject* TensorMatch_call(TensorMatch* self, PyObject* args, PyObject* kwargs) {
  PyObject* tensors;
  if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &tensors)) return nullptr;
  if (self->specs == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "TensorMatch was not initialised");
    return nullptr;
  }
  const std::vector<Spec>& specs = *self->specs;
  if ((size_t)PyTuple_GET_SIZE(tensors) != specs.size()) {
    PyErr_SetString(PyExc_ValueError, "expected one tensor per spec");
    return nullptr;
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!matches(PyTuple_GET_ITEM(tensors, i), specs[i])) Py_RETURN_FALSE;
  }
  Py_RETURN_TRUE;
}

PyObject* TensorMatch_len(TensorMatch* self, void*) {
  return PyLong_FromSize_t(self->specs == nullptr ? 0 : self->specs->size());
}

PyGetSetDef TensorMatch_getset[] = {
    {"count", (getter)TensorMatch_len, nullptr, "how many tensors it checks", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject TensorMatchType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "ember_tensor_match",
                          "The tensor checks of ember's guards, in C++.", -1, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_ember_tensor_match() {
  TensorMatchType.tp_name = "ember_tensor_match.TensorMatch";
  TensorMatchType.tp_basicsize = sizeof(TensorMatch);
  TensorMatchType.tp_flags = Py_TPFLAGS_DEFAULT;
  TensorMatchType.tp_doc = "TensorMatch(specs)(tensors) -> bool";
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
  return module;
}
