/* Receive buffers (wire/framing.py), not zero-filled: large frames' own buffers, and each
connection's scratch for small frames.

bytearray(n) zero-fills n bytes that the socket reads overwrite straight after: for a
producer's 1 MB batch that fill was a sixth of the broker's CPU per request, and a connection's
64 KiB scratch, zero-filled, was most of its memory (small requests reach only its first
pages). A buffer from here holds whatever the allocator left there. FrameReader hands out a
large frame only once every byte of it has been received into its buffer, and drops a partial
one with its connection; from its scratch it reads only the bytes receives wrote there. So none
of those old bytes is ever seen.

retain_freed_buffers: where those buffers come from. glibc's malloc serves a 1 MB block from its
heap once it has freed one such block, but hands the heap's freed top back to the kernel above
twice that size; as a producer's pipelined 1 MB requests come and go, the heap grows and shrinks,
and every regrowth page-faults and zero-fills (in the kernel) the pages again. Bounded by the
connection's read-ahead, the blocks in use fit under a fixed retention, and the same pages serve
request after request. release_freed_buffers hands what is kept back once the load is over. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

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

static PyObject *retain_freed_buffers(PyObject *self, PyObject *args) {
    Py_ssize_t largest, keep;
    if (!PyArg_ParseTuple(args, "nn", &largest, &keep))
        return NULL;
    if (largest < 0 || keep < 0 || largest > INT_MAX || keep > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "largest and keep must be in 0..INT_MAX");
        return NULL;
    }
#ifdef __GLIBC__
    /* Setting either turns off glibc's own moving threshold, so both are set. */
    if (mallopt(M_MMAP_THRESHOLD, (int)largest) && mallopt(M_TRIM_THRESHOLD, (int)keep))
        Py_RETURN_TRUE;
#endif
    Py_RETURN_FALSE;
}

static PyObject *release_freed_buffers(PyObject *self, PyObject *unused) {
#ifdef __GLIBC__
    if (malloc_trim(0))
        Py_RETURN_TRUE;
#endif
    Py_RETURN_FALSE;
}

static PyMethodDef methods[] = {
    {"receive_buffer", receive_buffer, METH_O, "A bytearray of `size` bytes whose contents are not set."},
    {"retain_freed_buffers", retain_freed_buffers, METH_VARARGS,
     "Have malloc serve blocks up to `largest` bytes from its heap and keep up to `keep` bytes of it "
     "freed rather than return them to the kernel (process-wide); False where the C library has no "
     "such setting."},
    {"release_freed_buffers", release_freed_buffers, METH_NOARGS,
     "Return the freed memory malloc keeps to the kernel; True if any was returned."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "wire._receive_buffer", "Receive buffers that are not zero-filled.", -1, methods,
};

PyMODINIT_FUNC PyInit__receive_buffer(void) { return PyModule_Create(&module); }
