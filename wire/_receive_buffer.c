/* Receive buffers for large frames (wire/framing.py), not zero-filled.

bytearray(n) zero-fills n bytes that the socket reads overwrite straight after: for a
producer's 1 MB batch that fill was a sixth of the broker's CPU per request. A buffer from
here holds whatever the allocator left there. FrameReader hands out a large frame only once
every byte of it has been received into its buffer, and drops a partial one with its
connection, so none of those old bytes is ever seen. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *receive_buffer(PyObject *self, PyObject *arg) {
    Py_ssize_t size = PyLong_AsSsize_t(arg);
    if (size == -1 && PyErr_Occurred())
        return NULL;
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "a receive buffer's size must be >= 0");
        return NULL;
    }
    /* No source: CPython allocates the bytes and copies nothing into them. */
    return PyByteArray_FromStringAndSize(NULL, size);
}

static PyMethodDef methods[] = {
    {"receive_buffer", receive_buffer, METH_O, "A bytearray of `size` bytes whose contents are not set."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "wire._receive_buffer", "Receive buffers that are not zero-filled.", -1, methods,
};

PyMODINIT_FUNC PyInit__receive_buffer(void) { return PyModule_Create(&module); }
