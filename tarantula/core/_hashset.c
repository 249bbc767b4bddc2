/* The binary search of tarantula/core/frontier.py's HashSet in C.
 *
 * in_sorted(values, value) -> bool: whether the sorted array('q') ``values`` holds ``value``,
 * exactly as bisect.bisect_left does it in Python. Why by hand: bisect over an array makes a
 * Python int of every element it compares (about 0.54 us a look-up in a set of 20,000 hashes,
 * against 0.07 us for one answered by the set of recent additions), and the crawl asks the
 * seen-set of every link and the browsable copy's sets of every target of a page
 * (docs/benchmarks.md). tests/core/test_frontier.py holds a HashSet to a set.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyObject *in_sorted(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "in_sorted(values, value) takes two arguments");
        return NULL;
    }
    long long value = PyLong_AsLongLong(args[1]);
    if (value == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (view.itemsize != 8 || view.format == NULL || strcmp(view.format, "q") != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "in_sorted needs an array('q')");
        return NULL;
    }
    const int64_t *items = view.buf;
    Py_ssize_t lo = 0, hi = view.len / 8;
    while (lo < hi) { /* bisect_left */
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (items[mid] < value)
            lo = mid + 1;
        else
            hi = mid;
    }
    int found = lo < view.len / 8 && items[lo] == value;
    PyBuffer_Release(&view);
    return PyBool_FromLong(found);
}

static PyMethodDef methods[] = {
    {"in_sorted", (PyCFunction)(void (*)(void))in_sorted, METH_FASTCALL,
     "in_sorted(values, value): whether the sorted array('q') values holds value."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_hashset", NULL, -1, methods};

PyMODINIT_FUNC PyInit__hashset(void) { return PyModule_Create(&module); }
