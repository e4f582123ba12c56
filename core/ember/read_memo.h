// Reading again what a guard read last time, without doing the read: CPython's version tags.
//
// A guard reads the same module tree on every call (``self._modules['features']``, then
// ``._modules['denseblock1']``, ..., ``._parameters['weight']``): thousands of attribute and
// dict reads that give the same objects until someone changes the model. CPython (3.11, 3.12)
// tags every dict with a version (PEP 509: ``ma_version_tag``) drawn from a global counter on
// every change, and every type with a version (``tp_version_tag``) that changes whenever the type
// or a base class is modified. So for one read step, a ReadMemo remembers where the value came
// from the last time it was read:
//
//   - an item of an exact dict (a str or int key): the dict and its version. The same dict at
//     the same version holds the same value under the same key.
//   - an attribute found in an object's instance dict, of a type whose attribute lookup is
//     object's (``object.__getattribute__``, a ``__getattr__`` allowed: it runs only for missing
//     names) and which has no class attribute of that name (no descriptor can take precedence):
//     the object, its type and the type's version, its dict and the dict's version.
//
// When all of them are as remembered, the value is the one the dict still holds, and the read is
// skipped; anything else reads again (and remembers anew when the conditions hold). A freed
// object or dict whose address is reused cannot match: a new dict gets a new version. Nothing is
// owned: the remembered value is borrowed from the dict, which holds it while its version holds.
// Other Python versions (3.13 keeps inline values beside materialised dicts) never remember.
#pragma once

#include <Python.h>

#include <cstdint>

namespace ember_guards {

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030D0000
#define EMBER_READ_MEMO 1
#endif

struct ReadMemo {
  PyObject* base = nullptr;  // the object read from (attribute), or the dict (item)
  PyObject* dict = nullptr;
  uint64_t dict_version = 0;
  PyTypeObject* type = nullptr;
  unsigned int type_version = 0;
  PyObject* value = nullptr;  // borrowed from dict
};

// The hook check of a module called as its class's forward (tensor_match.cpp's plain_module):
// known to pass again while the module, its type (and version), its ``__dict__`` (and version)
// and the hook tables in it (each at its version: registering a hook changes it) are what they
// were when it last passed. The ``__dict__`` the check reads is the instance dict when the type
// looks attributes up generically and ``__dict__`` is the usual getset descriptor.
struct ModuleMemo {
  PyObject* module = nullptr;
  PyTypeObject* type = nullptr;
  unsigned int type_version = 0;
  PyObject* dict = nullptr;
  uint64_t dict_version = 0;
  PyObject* tables[4] = {nullptr, nullptr, nullptr, nullptr};  // borrowed from dict; nullptr: absent
  uint64_t table_versions[4] = {0, 0, 0, 0};
};

#ifdef EMBER_READ_MEMO

inline uint64_t dict_version(PyObject* dict) {
  return ((PyDictObject*)dict)->ma_version_tag;
}

// The type's version tag, or 0 when it has none (then nothing is remembered for it).
inline unsigned int type_version(PyTypeObject* type) {
#ifdef Py_TPFLAGS_VALID_VERSION_TAG
  if (!PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG)) return 0;
#endif
  return type->tp_version_tag;
}

// Whether attribute reads on instances of ``type`` are object's generic lookup (then, possibly,
// ``__getattr__`` for missing names), and its version tag can be trusted: its metaclass is
// ``type`` (a metaclass's own ``mro()`` can put a class into the MRO that does not invalidate the
// type's tag when it changes).
inline bool generic_getattr(PyTypeObject* type) {
  if (Py_TYPE(type) != &PyType_Type) return false;
  if (type->tp_getattro == PyObject_GenericGetAttr) return true;
  static PyObject* name = PyUnicode_InternFromString("__getattribute__");
  static PyObject* generic = name == nullptr ? nullptr : _PyType_Lookup(&PyBaseObject_Type, name);
  return generic != nullptr && _PyType_Lookup(type, name) == generic;
}

// The object's instance dict if it is an exact dict (materialised if it was inline values).
inline PyObject* instance_dict(PyObject* obj) {
  PyObject** slot = _PyObject_GetDictPtr(obj);
  if (slot == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  return *slot != nullptr && PyDict_CheckExact(*slot) ? *slot : nullptr;
}

// The value of ``getattr(obj, name)`` / ``obj[key]`` if it is known unchanged, borrowed; else
// nullptr (read it).
inline PyObject* recall_attr(const ReadMemo& memo, PyObject* obj) {
  if (memo.value == nullptr || obj != memo.base || Py_TYPE(obj) != memo.type ||
      type_version(memo.type) != memo.type_version) {  // remembered only with a version tag
    return nullptr;
  }
  PyObject* dict = instance_dict(obj);
  return dict == memo.dict && dict != nullptr && dict_version(dict) == memo.dict_version ? memo.value : nullptr;
}

inline PyObject* recall_item(const ReadMemo& memo, PyObject* container) {
  return memo.value != nullptr && container == memo.base && PyDict_CheckExact(container) &&
                 dict_version(container) == memo.dict_version
             ? memo.value
             : nullptr;
}

// After a real read of ``obj.name`` that gave ``value``: remember it if the header's conditions
// hold, else forget.
inline void remember_attr(ReadMemo& memo, PyObject* obj, PyObject* name, PyObject* value) {
  memo.value = nullptr;
  PyTypeObject* type = Py_TYPE(obj);
  if (!generic_getattr(type) || _PyType_Lookup(type, name) != nullptr) return;  // assigns a version tag
  unsigned int version = type_version(type);
  PyObject* dict = version == 0 ? nullptr : instance_dict(obj);
  if (dict == nullptr) return;
  PyObject* held = PyDict_GetItemWithError(dict, name);  // borrowed
  if (held != value) {
    PyErr_Clear();
    return;
  }
  memo = ReadMemo{obj, dict, dict_version(dict), type, version, value};
}

inline void remember_item(ReadMemo& memo, PyObject* container, PyObject* key, PyObject* value) {
  memo.value = nullptr;
  if (!PyDict_CheckExact(container) || !(PyUnicode_CheckExact(key) || PyLong_CheckExact(key))) return;
  memo = ReadMemo{container, container, dict_version(container), nullptr, 0, value};
}

inline bool recall_module(const ModuleMemo& memo, PyObject* module) {
  if (memo.module == nullptr || module != memo.module || Py_TYPE(module) != memo.type ||
      type_version(memo.type) != memo.type_version) {
    return false;
  }
  PyObject* dict = instance_dict(module);
  if (dict != memo.dict || dict == nullptr || dict_version(dict) != memo.dict_version) return false;
  for (int i = 0; i < 4; ++i) {
    if (memo.tables[i] != nullptr && dict_version(memo.tables[i]) != memo.table_versions[i]) return false;
  }
  return true;
}

// After the check passed on ``module``, having read ``d`` as its ``__dict__``, whose hook tables
// are read from it by ``names``: remembered when ``d`` is the instance dict and every table is an
// exact dict or OrderedDict, and empty.
inline void remember_module(ModuleMemo& memo, PyObject* module, PyObject* d, PyObject* const names[4]) {
  memo.module = nullptr;
  static PyObject* dict_name = PyUnicode_InternFromString("__dict__");
  PyTypeObject* type = Py_TYPE(module);
  if (dict_name == nullptr || !generic_getattr(type)) return;
  PyObject* descr = _PyType_Lookup(type, dict_name);  // assigns a version tag
  unsigned int version = type_version(type);
  PyObject* dict = version == 0 || descr == nullptr || Py_TYPE(descr) != &PyGetSetDescr_Type ? nullptr
                                                                                               : instance_dict(module);
  if (dict == nullptr || dict != d) return;
  ModuleMemo fresh{module, type, version, dict, dict_version(dict)};
  for (int i = 0; i < 4; ++i) {
    PyObject* table = PyDict_GetItemWithError(dict, names[i]);  // borrowed
    if (table == nullptr && PyErr_Occurred()) {
      PyErr_Clear();
      return;
    }
    if (table != nullptr && !((PyDict_CheckExact(table) || PyODict_CheckExact(table)) && PyDict_GET_SIZE(table) == 0)) {
      return;  // another type's truth could change unseen
    }
    fresh.tables[i] = table;
    fresh.table_versions[i] = table == nullptr ? 0 : dict_version(table);
  }
  memo = fresh;
}

#else

inline bool recall_module(const ModuleMemo&, PyObject*) { return false; }
inline void remember_module(ModuleMemo&, PyObject*, PyObject*, PyObject* const[4]) {}
inline PyObject* recall_attr(const ReadMemo&, PyObject*) { return nullptr; }
inline PyObject* recall_item(const ReadMemo&, PyObject*) { return nullptr; }
inline void remember_attr(ReadMemo&, PyObject*, PyObject*, PyObject*) {}
inline void remember_item(ReadMemo&, PyObject*, PyObject*, PyObject*) {}

#endif

}  // namespace ember_guards
