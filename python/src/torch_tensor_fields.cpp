#include "python/src/torch_tensor_fields.h"

namespace py = pybind11;

namespace spire::python::torch_tensor {
namespace {

// The names, interned once (the GIL is held: the extension's functions run under it).
struct Names {
  PyObject* version = PyUnicode_InternFromString("_version");
  PyObject* data_ptr = PyUnicode_InternFromString("data_ptr");
  PyObject* is_contiguous = PyUnicode_InternFromString("is_contiguous");
  PyObject* dtype = PyUnicode_InternFromString("dtype");
  PyObject* shape = PyUnicode_InternFromString("shape");
  PyObject* device = PyUnicode_InternFromString("device");
};

const Names& names() {
  static const Names* n = new Names();  // never freed: the interpreter owns interned strings until it exits
  return *n;
}

py::object checked(PyObject* result) {
  if (!result) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(result);
}

// torch's C functions behind t._version (a getset descriptor) and t.data_ptr (a method descriptor taking no
// arguments) for one tensor type, found once per type: calling them directly skips the attribute lookup and the
// method call's machinery (what remains is torch's own work, most of a read: its check for a __torch_function__
// override, its error handling, the int it returns). Null where the type has something else under that name (a
// subclass overriding it): then the attribute is read the ordinary way.
struct Readers {
  PyTypeObject* type = nullptr;
  getter version = nullptr;
  void* version_closure = nullptr;
  PyCFunction data_ptr = nullptr;
};

Readers find_readers(PyTypeObject* type) {
  Readers r;
  r.type = type;
  PyObject* cls = reinterpret_cast<PyObject*>(type);
  if (PyObject* d = PyObject_GetAttr(cls, names().version)) {
    if (Py_IS_TYPE(d, &PyGetSetDescr_Type)) {
      PyGetSetDef* def = reinterpret_cast<PyGetSetDescrObject*>(d)->d_getset;
      r.version = def->get, r.version_closure = def->closure;
    }
    Py_DECREF(d);
  }
  if (PyObject* d = PyObject_GetAttr(cls, names().data_ptr)) {
    if (Py_IS_TYPE(d, &PyMethodDescr_Type)) {
      PyMethodDef* def = reinterpret_cast<PyMethodDescrObject*>(d)->d_method;
      if ((def->ml_flags & (METH_VARARGS | METH_FASTCALL | METH_NOARGS | METH_O | METH_KEYWORDS)) == METH_NOARGS)
        r.data_ptr = def->ml_meth;
    }
    Py_DECREF(d);
  }
  PyErr_Clear();  // a type without either attribute: read the ordinary way, which raises the error then
  return r;
}

// The readers of t's type: a weight list holds two types or so (Parameter, Tensor), so a few cached suffice.
const Readers& readers(PyObject* t) {
  static Readers cache[4];
  static int next = 0;
  PyTypeObject* type = Py_TYPE(t);
  for (const Readers& r : cache)
    if (r.type == type) return r;
  Readers& slot = cache[next];
  next = (next + 1) % 4;
  py::object keep = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(type));
  keep.release();  // cached types stay alive (torch's tensor types live as long as the interpreter anyway)
  slot = find_readers(type);
  return slot;
}

}  // namespace

int64_t version(PyObject* t) {
  const Readers& r = readers(t);
  py::object v = checked(r.version ? r.version(t, r.version_closure) : PyObject_GetAttr(t, names().version));
  long long n = PyLong_AsLongLong(v.ptr());
  if (n == -1 && PyErr_Occurred()) throw py::error_already_set();
  return n;
}

uint64_t data_ptr(PyObject* t) {
  const Readers& r = readers(t);
  py::object v = checked(r.data_ptr ? r.data_ptr(t, nullptr) : PyObject_CallMethodNoArgs(t, names().data_ptr));
  unsigned long long n = PyLong_AsUnsignedLongLong(v.ptr());
  if (n == static_cast<unsigned long long>(-1) && PyErr_Occurred()) throw py::error_already_set();
  return n;
}

bool is_contiguous(PyObject* t) {
  return checked(PyObject_CallMethodNoArgs(t, names().is_contiguous)).ptr() == Py_True;
}

py::object dtype(PyObject* t) { return checked(PyObject_GetAttr(t, names().dtype)); }
py::object shape(PyObject* t) { return checked(PyObject_GetAttr(t, names().shape)); }
py::object device(PyObject* t) { return checked(PyObject_GetAttr(t, names().device)); }

bool equal(PyObject* a, PyObject* b) {
  if (a == b) return true;
  int r = PyObject_RichCompareBool(a, b, Py_EQ);
  if (r < 0) throw py::error_already_set();
  return r == 1;
}

}  // namespace spire::python::torch_tensor
