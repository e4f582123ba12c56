// The reads of a guard, in C++: ``SourceWalk(steps, groups)(L) -> (values, *groups) | None``.
//
// A guard first reads every value it checks from the frame's locals ``L``: ``L['self']``, then
// ``._modules``, then ``['features']``, ... (densenet121: about 1,700 reads and 570 type checks,
// most of its time in Python). ember.guards hands the reads and the simple checks to one
// SourceWalk, in the order the Python guard would run them:
//
//   values[0] is L; each step that reads appends one value:
//     (0, obj)              obj itself (a module's globals dict, a closure cell, a fixed object)
//     (1, base, name)       getattr(values[base], name)        (PyObject_GetAttr: Python's ``.``)
//     (2, base, key)        values[base][key]                  (PyObject_GetItem: Python's ``[]``)
//   a check step tests values[base] and appends nothing:
//     (3, base, 0, T)                   type(v) is T
//     (3, base, 1, T, value, item_types) a constant: type(v) is T and v == value, or for a tuple
//                                        of primitives (item_types a tuple) v is value or (type(v)
//                                        is tuple and v == value and tuple(map(type, v)) ==
//                                        item_types)
//     (3, base, 2, keys)                type(v) is dict and tuple(v.keys()) == keys
//     (3, base, 3, T, n)                type(v) is T and len(v) == n
//     (3, base, 4, obj)                 v is obj
//     (3, base, 5, ref)                 v is ref()   (a weak reference, called)
//
// Calling it runs the steps in order. The first read that raises or check that fails makes it
// return None (the error cleared), as the Python guard's ``try ... except Exception`` returns
// None; an error that is not an Exception (KeyboardInterrupt) propagates, as it does there. Otherwise it
// returns ``(values, g0, g1, ...)``: the tuple of all values read, then for each group (a tuple
// of value indices) the tuple of those values, which the guard passes on (the tensors for
// TensorMatch, the graph's inputs) without indexing them one by one in Python.
//
// Most reads give what they gave on the last call: each read step remembers where its value
// came from (read_memo.h) and skips the read while CPython's version tags say nothing there
// changed; a constant or dict-keys check skips itself on the very object (or dict state) it
// passed on. Type, length and identity checks always run.
#include <Python.h>

#include <new>
#include <vector>

#include "guard_values.h"
#include "read_memo.h"

namespace ember_guards {
namespace {

enum Op { kConst = 0, kAttr = 1, kItem = 2, kCheck = 3 };
enum Kind { kType = 0, kEquals = 1, kKeys = 2, kLen = 3, kIs = 4, kIsWeak = 5 };

struct Step {
  int op = kConst;
  Py_ssize_t base = 0;
  int kind = kType;
  PyObject* arg = nullptr;         // obj, name, key, T, keys, obj or ref: a strong reference
  PyObject* value = nullptr;       // the constant of kEquals: a strong reference
  PyObject* item_types = nullptr;  // kEquals on a tuple: a strong reference, else nullptr
  Py_ssize_t length = 0;           // kLen
  ReadMemo memo;                   // a read: where its value came from last time (read_memo.h)
  uint64_t passed = 0;             // a check: the state its value was in when it last passed
};

struct Program {
  std::vector<Step> steps;
  std::vector<std::vector<Py_ssize_t>> groups;
  Py_ssize_t values = 1;  // L, then one per read
};

void release(Program* program) {
  for (Step& step : program->steps) {
    Py_XDECREF(step.arg);
    Py_XDECREF(step.value);
    Py_XDECREF(step.item_types);
  }
  delete program;
}

struct SourceWalk {
  PyObject_HEAD
  Program* program;
};

bool invalid(const char* message) {
  PyErr_SetString(PyExc_ValueError, message);
  return false;
}

PyObject* owned(PyObject* obj) {
  Py_XINCREF(obj);
  return obj;
}

// One step of the header's forms; ``values`` counts the values read before it.
bool read_step(PyObject* item, Py_ssize_t values, Step& step) {
  if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 2) return invalid("a step is a tuple (op, ...)");
  Py_ssize_t n = PyTuple_GET_SIZE(item);
  step.op = (int)PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
  if (PyErr_Occurred()) return false;
  if (step.op == kConst) {
    if (n != 2) return invalid("(0, obj)");
    step.arg = owned(PyTuple_GET_ITEM(item, 1));
    return true;
  }
  step.base = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 1));
  if (PyErr_Occurred()) return false;
  if (step.base < 0 || step.base >= values) return invalid("a step reads a value not read before it");
  if (step.op == kAttr || step.op == kItem) {
    if (n != 3) return invalid("(1, base, name) or (2, base, key)");
    if (step.op == kAttr && !PyUnicode_Check(PyTuple_GET_ITEM(item, 2))) return invalid("an attribute name is a str");
    step.arg = PyTuple_GET_ITEM(item, 2);
    Py_INCREF(step.arg);
    if (step.op == kAttr) PyUnicode_InternInPlace(&step.arg);
    return true;
  }
  if (step.op != kCheck || n < 4) return invalid("op is 0, 1, 2 or 3");
  step.kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(item, 2));
  if (PyErr_Occurred()) return false;
  PyObject* a = PyTuple_GET_ITEM(item, 3);
  switch (step.kind) {
    case kType:
    case kLen:
      if (n != (step.kind == kType ? 4 : 5) || !PyType_Check(a)) return invalid("(3, base, 0, T) or (3, base, 3, T, n)");
      if (step.kind == kLen) {
        step.length = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 4));
        if (PyErr_Occurred()) return false;
      }
      break;
    case kEquals: {
      PyObject* types = n == 6 ? PyTuple_GET_ITEM(item, 5) : nullptr;
      if (types == nullptr || !PyType_Check(a) || (types != Py_None && !PyTuple_Check(types))) {
        return invalid("(3, base, 1, T, value, item_types or None)");
      }
      step.value = owned(PyTuple_GET_ITEM(item, 4));
      step.item_types = types == Py_None ? nullptr : owned(types);
      break;
    }
    case kKeys:
      if (n != 4 || !PyTuple_Check(a)) return invalid("(3, base, 2, keys)");
      break;
    case kIs:
    case kIsWeak:
      if (n != 4) return invalid("(3, base, 4, obj) or (3, base, 5, ref)");
      break;
    default:
      return invalid("a check's kind is 0 to 5");
  }
  step.arg = owned(a);
  return true;
}

// A garbage-collected type: the objects it holds (fixed objects, cells, globals, constants) may
// refer back to what holds the guard.
int SourceWalk_traverse(SourceWalk* self, visitproc visit, void* arg) {
  if (self->program == nullptr) return 0;
  for (const Step& step : self->program->steps) {
    Py_VISIT(step.arg);
    Py_VISIT(step.value);
    Py_VISIT(step.item_types);
  }
  return 0;
}

int SourceWalk_clear(SourceWalk* self) {
  Program* program = self->program;
  self->program = nullptr;
  if (program != nullptr) release(program);
  return 0;
}

void SourceWalk_dealloc(SourceWalk* self) {
  PyObject_GC_UnTrack(self);
  SourceWalk_clear(self);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

int SourceWalk_init(SourceWalk* self, PyObject* args, PyObject* kwargs) {
  PyObject *steps, *groups;
  if (!PyArg_ParseTuple(args, "O!O!", &PyTuple_Type, &steps, &PyTuple_Type, &groups)) return -1;
  if (self->program != nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "a SourceWalk is initialised once");
    return -1;
  }
  auto* program = new (std::nothrow) Program();
  if (program == nullptr) {
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(steps); ++i) {
    program->steps.emplace_back();
    if (!read_step(PyTuple_GET_ITEM(steps, i), program->values, program->steps.back())) {
      release(program);
      return -1;
    }
    if (program->steps.back().op != kCheck) ++program->values;
  }
  for (Py_ssize_t g = 0; g < PyTuple_GET_SIZE(groups); ++g) {
    PyObject* group = PyTuple_GET_ITEM(groups, g);
    program->groups.emplace_back();
    for (Py_ssize_t i = 0; PyTuple_Check(group) && i < PyTuple_GET_SIZE(group); ++i) {
      Py_ssize_t index = PyLong_AsSsize_t(PyTuple_GET_ITEM(group, i));
      if (index < 0 || index >= program->values) {
        if (!PyErr_Occurred()) invalid("a group names a value that is not read");
        release(program);
        return -1;
      }
      program->groups.back().push_back(index);
    }
    if (!PyTuple_Check(group)) {
      invalid("a group is a tuple of value indices");
      release(program);
      return -1;
    }
  }
  self->program = program;
  return 0;
}

// ``tuple(d.keys()) == keys`` for an exact dict: lengths, then each key == its counterpart
// (PyObject_RichCompareBool, with the identity shortcut, as tuple comparison does).
bool same_keys(PyObject* d, PyObject* keys) {
  if (PyDict_GET_SIZE(d) != PyTuple_GET_SIZE(keys)) return false;
  Py_ssize_t pos = 0, i = 0;
  PyObject *key, *unused;
  while (PyDict_Next(d, &pos, &key, &unused)) {
    if (i >= PyTuple_GET_SIZE(keys)) return false;  // the dict grew during a comparison
    Py_INCREF(key);
    int eq = PyObject_RichCompareBool(key, PyTuple_GET_ITEM(keys, i++), Py_EQ);
    Py_DECREF(key);
    if (eq != 1) return false;
  }
  return i == PyTuple_GET_SIZE(keys);
}

// Whether a check's answer is known without running it: kEquals on a value of an immutable
// type that is the very object it passed on (``stamp``: the version of the dict the value was
// recalled from, unique to that dict's state, so the object is the one that dict held then), and
// kKeys on a dict at the version it passed at. Every other check runs (they are a pointer
// comparison or two). A check that runs records what it passed on, or forgets on a failure.
bool immutable(PyObject* v) {
  return PyLong_CheckExact(v) || PyFloat_CheckExact(v) || PyUnicode_CheckExact(v) || PyBool_Check(v) ||
         v == Py_None || PyTuple_CheckExact(v);  // a tuple check is on a tuple of primitives
}

uint64_t state_of(const Step& step, PyObject* v, uint64_t stamp) {
#ifdef EMBER_READ_MEMO
  if (step.kind == kKeys) return PyDict_CheckExact(v) ? dict_version(v) : 0;
  if (step.kind == kEquals && immutable(v)) return stamp;
#endif
  return 0;
}

bool check(const Step& step, PyObject* v) {
  switch (step.kind) {
    case kType:
      return (PyObject*)Py_TYPE(v) == step.arg;
    case kEquals:
      return same_constant(v, (PyTypeObject*)step.arg, step.value, step.item_types);
    case kKeys:
      return PyDict_CheckExact(v) && same_keys(v, step.arg);
    case kLen:
      return (PyObject*)Py_TYPE(v) == step.arg && PyObject_Length(v) == step.length;
    case kIs:
      return v == step.arg;
    default: {  // kIsWeak
      PyObject* referent = PyObject_CallNoArgs(step.arg);
      if (referent == nullptr) return false;
      bool same = referent == v;
      Py_DECREF(referent);
      return same;
    }
  }
}

PyObject* SourceWalk_call(SourceWalk* self, PyObject* args, PyObject* kwargs) {
  PyObject* frame_locals;
  if (!PyArg_ParseTuple(args, "O", &frame_locals)) return nullptr;
  Program* program = self->program;
  if (program == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "SourceWalk was not initialised");
    return nullptr;
  }
  PyObject* values = PyTuple_New(program->values);  // unfilled items are NULL until read
  if (values == nullptr) return nullptr;
  Py_INCREF(frame_locals);
  PyTuple_SET_ITEM(values, 0, frame_locals);
  std::vector<uint64_t> stamps(program->values, 0);  // per value: recalled from a dict at this version
  Py_ssize_t next = 1;
  bool ok = true;
  for (Step& step : program->steps) {
    PyObject* base = PyTuple_GET_ITEM(values, step.base);
    if (step.op == kCheck) {
      uint64_t state = state_of(step, base, stamps[step.base]);
      if (state != 0 && state == step.passed) continue;
      ok = check(step, base);
      step.passed = ok ? state : 0;
    } else if (step.op == kConst) {
      PyTuple_SET_ITEM(values, next++, owned(step.arg));
    } else {
      PyObject* v = step.op == kAttr ? recall_attr(step.memo, base) : recall_item(step.memo, base);
      if (v != nullptr) {
        Py_INCREF(v);
        stamps[next] = step.memo.dict_version;
      } else if (step.op == kAttr) {
        v = PyObject_GetAttr(base, step.arg);
        if (v != nullptr) remember_attr(step.memo, base, step.arg, v);
      } else {
        v = PyObject_GetItem(base, step.arg);
        if (v != nullptr) remember_item(step.memo, base, step.arg, v);
      }
      ok = v != nullptr;
      if (ok) PyTuple_SET_ITEM(values, next++, v);
    }
    if (!ok) break;
  }
  if (!ok) {
    Py_DECREF(values);
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception)) return nullptr;  // KeyboardInterrupt...
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  PyObject* out = PyTuple_New(1 + (Py_ssize_t)program->groups.size());
  if (out == nullptr) {
    Py_DECREF(values);
    return nullptr;
  }
  PyTuple_SET_ITEM(out, 0, values);
  for (size_t g = 0; g < program->groups.size(); ++g) {
    const std::vector<Py_ssize_t>& indices = program->groups[g];
    PyObject* group = PyTuple_New((Py_ssize_t)indices.size());
    if (group == nullptr) {
      Py_DECREF(out);
      return nullptr;
    }
    for (size_t i = 0; i < indices.size(); ++i) {
      PyObject* v = PyTuple_GET_ITEM(values, indices[i]);
      Py_INCREF(v);
      PyTuple_SET_ITEM(group, (Py_ssize_t)i, v);
    }
    PyTuple_SET_ITEM(out, 1 + (Py_ssize_t)g, group);
  }
  return out;
}

PyObject* SourceWalk_steps(SourceWalk* self, void*) {
  return PyLong_FromSize_t(self->program == nullptr ? 0 : self->program->steps.size());
}

PyGetSetDef SourceWalk_getset[] = {
    {"steps", (getter)SourceWalk_steps, nullptr, "how many reads and checks it runs", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject SourceWalkType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

int add_source_walk(PyObject* module) {
  SourceWalkType.tp_name = "ember_tensor_match.SourceWalk";
  SourceWalkType.tp_basicsize = sizeof(SourceWalk);
  SourceWalkType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
  SourceWalkType.tp_traverse = (traverseproc)SourceWalk_traverse;
  SourceWalkType.tp_clear = (inquiry)SourceWalk_clear;
  SourceWalkType.tp_doc = "SourceWalk(steps, groups)(L) -> (values, *groups) | None";
  SourceWalkType.tp_new = PyType_GenericNew;
  SourceWalkType.tp_init = (initproc)SourceWalk_init;
  SourceWalkType.tp_dealloc = (destructor)SourceWalk_dealloc;
  SourceWalkType.tp_call = (ternaryfunc)SourceWalk_call;
  SourceWalkType.tp_getset = SourceWalk_getset;
  if (PyType_Ready(&SourceWalkType) < 0) return -1;
  Py_INCREF(&SourceWalkType);
  if (PyModule_AddObject(module, "SourceWalk", (PyObject*)&SourceWalkType) < 0) {
    Py_DECREF(&SourceWalkType);
    return -1;
  }
  return 0;
}

}  // namespace ember_guards
