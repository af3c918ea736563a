/* The eager write fast paths of engine/writes.py in C: ``x[index] = v`` and ``x op= y``.
 *
 * A Python ``__setitem__`` costs a frame on every write, already 1.8x numpy's whole
 * ``a[i] = v`` on a small array; as a type slot of the tensor's C base class the same
 * tests and numpy's own write cost a few nanoseconds more than numpy alone.
 *
 * The rules are engine/writes.py's, which stays the one description of them: on an exact
 * ``Tensor`` holding a numpy array, with no tape holding entries and no mode pushed, a
 * write whose value is a Python number (or a tensor of x's dtype) and whose index is
 * basic (ints, slices, the ellipsis, numpy's integer scalars, tuples of them) or a
 * boolean mask tensor of at least one axis is numpy's own statement on the array; numpy
 * checks it in full before writing anything. Everything else, and anything numpy refuses
 * (IndexError, ValueError, TypeError, OverflowError: nothing was written), calls the
 * Python function bound for the checked path, which gives the same result or the
 * engine's error. A tensor that is a view, has views or was captured by a trace
 * (``_alias`` set) has its version moved by the bound ``bump`` after the write.
 *
 * ``bind(...)`` (engine/fast_writes.py) hands over the Tensor class, its slots'
 * descriptors (whose offsets are read here), the tape set, the mode's context variable
 * and the Python fallbacks; until it is called every write takes the fallbacks.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

static PyTypeObject *tensor_type;           /* engine.tensor.Tensor (exact type test) */
static Py_ssize_t off_value = -1, off_dtype = -1, off_shape = -1, off_alias = -1;
static PyObject *live_tapes;                /* writes._LIVE: a set, empty when no tape */
static PyObject *mode_var;                  /* modes._MODE: a ContextVar */
static PyObject *bool_dtype;                /* np.dtype(bool) */
static PyObject *basic_types;               /* tuple of the index item types numpy checks */
static PyObject *refused;                   /* tuple of numpy's refusals before writing */
static PyObject *setitem_python;            /* writes.setitem (its own fast path, then checked) */
static PyObject *setitem_checked;           /* writes._checked_setitem */
static PyObject *delitem_refused;           /* refuses ``del x[index]`` by name */
static PyObject *bump;                      /* writes._bump */
static PyObject *in_place_python;           /* dict: op name -> Python x op= y method */
static PyObject *in_place_checked;          /* writes' checked x op= y: f(x, name, other) */
static int enabled = 1;

/* The slot at ``offset`` of ``obj`` (borrowed; NULL when unset). */
static inline PyObject *
slot(PyObject *obj, Py_ssize_t offset)
{
    return *(PyObject **)((char *)obj + offset);
}

static int
is_basic_type(PyObject *item)
{
    PyObject *kind = (PyObject *)Py_TYPE(item);
    Py_ssize_t n = PyTuple_GET_SIZE(basic_types);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyTuple_GET_ITEM(basic_types, i) == kind)
            return 1;
    }
    return 0;
}

/* Whether eager numpy writes may take the fast path at all: bound, enabled, no tape
 * holding entries, no mode pushed. -1 on error. */
static int
no_tape_no_mode(void)
{
    if (tensor_type == NULL || !enabled || PySet_GET_SIZE(live_tapes) != 0)
        return 0;
    PyObject *mode = NULL;
    if (PyContextVar_Get(mode_var, NULL, &mode) < 0)
        return -1;
    int none = mode == NULL || mode == Py_None;
    Py_XDECREF(mode);
    return none;
}

static int
same_dtype(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    if (a == NULL || b == NULL)
        return 0;
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

/* What numpy writes for ``value`` into x (borrowed), or NULL when the fast path does not
 * take it (sets no error). -1 in *err on an error. */
static PyObject *
operand_of(PyObject *x, PyObject *value, int *err)
{
    if (PyFloat_CheckExact(value) || PyLong_CheckExact(value) || PyBool_Check(value))
        return value;
    if (Py_TYPE(value) == tensor_type) {
        int same = same_dtype(slot(value, off_dtype), slot(x, off_dtype));
        if (same < 0) {
            *err = 1;
            return NULL;
        }
        return same ? slot(value, off_value) : NULL;   /* (None while traced) */
    }
    return NULL;
}

/* The index numpy receives (borrowed), or NULL when the fast path does not take it. */
static PyObject *
index_of(PyObject *index, int *err)
{
    if (PyLong_CheckExact(index) || PySlice_Check(index))
        return index;
    if (PyTuple_CheckExact(index)) {
        Py_ssize_t n = PyTuple_GET_SIZE(index);
        for (Py_ssize_t i = 0; i < n; i++) {
            if (!is_basic_type(PyTuple_GET_ITEM(index, i)))
                return NULL;
        }
        return index;
    }
    if (Py_TYPE(index) == tensor_type) {   /* a boolean mask of at least one axis */
        PyObject *where = slot(index, off_value), *shape = slot(index, off_shape);
        if (where == NULL || where == Py_None || shape == NULL || !PyTuple_Check(shape)
                || PyTuple_GET_SIZE(shape) == 0)
            return NULL;
        int same = same_dtype(slot(index, off_dtype), bool_dtype);
        if (same < 0)
            *err = 1;
        return same > 0 ? where : NULL;
    }
    return is_basic_type(index) ? index : NULL;
}

/* After a write that reached memory: move the version of a view, a root with views or a
 * captured tensor. 0, or -1 on error. */
static int
after_write(PyObject *x)
{
    PyObject *alias = slot(x, off_alias);
    if (alias == NULL || alias == Py_None)
        return 0;
    PyObject *r = PyObject_CallOneArg(bump, x);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* 1 when numpy's statement ran, 0 when it refused before writing (error cleared: the
 * checked path names it), -1 on another error. */
static int
ran(int status)
{
    if (status == 0)
        return 1;
    if (PyErr_ExceptionMatches(refused)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

static int
fast_setitem(PyObject *x, PyObject *index, PyObject *value)
{
    if (value == NULL) {
        PyObject *r = PyObject_CallFunctionObjArgs(delitem_refused, x, index, NULL);
        if (r != NULL) {          /* (the bound function always raises) */
            Py_DECREF(r);
            PyErr_SetString(PyExc_TypeError, "tensors do not support item deletion");
        }
        return -1;
    }
    if (tensor_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "engine._fast_writes: a write before bind()");
        return -1;
    }
    int ok = no_tape_no_mode();
    if (ok < 0)
        return -1;
    if (!ok) {
        PyObject *r = PyObject_CallFunctionObjArgs(enabled ? setitem_checked : setitem_python,
                                                   x, index, value, NULL);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
        return 0;
    }
    if (Py_TYPE(x) == tensor_type) {
        int err = 0;
        PyObject *operand = operand_of(x, value, &err);
        if (err)
            return -1;
        PyObject *buf = slot(x, off_value);
        if (operand != NULL && operand != Py_None && buf != NULL && buf != Py_None) {
            PyObject *where = index_of(index, &err);
            if (err)
                return -1;
            if (where != NULL) {
                Py_INCREF(buf);
                Py_INCREF(where);
                Py_INCREF(operand);
                int done = ran(PyObject_SetItem(buf, where, operand));
                Py_DECREF(buf);
                Py_DECREF(where);
                Py_DECREF(operand);
                if (done < 0)
                    return -1;
                if (done)
                    return after_write(x);
            }
        }
    }
    PyObject *r = PyObject_CallFunctionObjArgs(setitem_checked, x, index, value, NULL);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* ``x op= y``: numpy's in-place operator ``numpy_op`` on x's array, or the Python method
 * bound under ``name`` (the checked path). */
static PyObject *
fast_in_place(PyObject *x, PyObject *other, binaryfunc numpy_op, const char *name)
{
    if (tensor_type == NULL) {
        PyErr_Format(PyExc_RuntimeError, "engine._fast_writes: x %s= y before bind()", name);
        return NULL;
    }
    if (!enabled) {           /* engine/writes.py's Python method, fast path and all */
        PyObject *method = PyDict_GetItemString(in_place_python, name);   /* borrowed */
        if (method == NULL) {
            PyErr_Format(PyExc_RuntimeError, "engine._fast_writes: no x %s= y", name);
            return NULL;
        }
        return PyObject_CallFunctionObjArgs(method, x, other, NULL);
    }
    int ok = no_tape_no_mode();
    if (ok < 0)
        return NULL;
    if (ok && Py_TYPE(x) == tensor_type) {
        int err = 0;
        PyObject *operand = operand_of(x, other, &err);
        if (err)
            return NULL;
        PyObject *buf = slot(x, off_value);
        if (operand != NULL && operand != Py_None && buf != NULL && buf != Py_None) {
            Py_INCREF(buf);
            Py_INCREF(operand);
            PyObject *r = numpy_op(buf, operand);   /* warns as numpy's x op= y does */
            Py_DECREF(buf);
            Py_DECREF(operand);
            int done = ran(r == NULL ? -1 : 0);
            Py_XDECREF(r);
            if (done < 0)
                return NULL;
            if (done) {
                if (after_write(x) < 0)
                    return NULL;
                Py_INCREF(x);
                return x;
            }
        }
    }
    return PyObject_CallFunction(in_place_checked, "OsO", x, name, other);
}

#define IN_PLACE(slot_name, numpy_op, name)                                   \
    static PyObject *slot_name(PyObject *x, PyObject *other)                 \
    {                                                                         \
        return fast_in_place(x, other, numpy_op, name);                      \
    }

IN_PLACE(fast_iadd, PyNumber_InPlaceAdd, "add")
IN_PLACE(fast_isub, PyNumber_InPlaceSubtract, "sub")
IN_PLACE(fast_imul, PyNumber_InPlaceMultiply, "mul")
IN_PLACE(fast_itruediv, PyNumber_InPlaceTrueDivide, "truediv")
IN_PLACE(fast_iand, PyNumber_InPlaceAnd, "and")
IN_PLACE(fast_ior, PyNumber_InPlaceOr, "or")
IN_PLACE(fast_ixor, PyNumber_InPlaceXor, "xor")
IN_PLACE(fast_ilshift, PyNumber_InPlaceLshift, "lshift")
IN_PLACE(fast_irshift, PyNumber_InPlaceRshift, "rshift")

static PyNumberMethods writable_number = {
    .nb_inplace_add = fast_iadd,
    .nb_inplace_subtract = fast_isub,
    .nb_inplace_multiply = fast_imul,
    .nb_inplace_true_divide = fast_itruediv,
    .nb_inplace_and = fast_iand,
    .nb_inplace_or = fast_ior,
    .nb_inplace_xor = fast_ixor,
    .nb_inplace_lshift = fast_ilshift,
    .nb_inplace_rshift = fast_irshift,
};

static PyMappingMethods writable_mapping = {
    .mp_ass_subscript = fast_setitem,
};

static PyTypeObject WritableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "engine._fast_writes.Writable",
    .tp_doc = PyDoc_STR("The C base of engine.Tensor: x[index] = v and x op= y."),
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_as_number = &writable_number,
    .tp_as_mapping = &writable_mapping,
};

/* The offset of a slot from its member descriptor (``Tensor._value``). */
static Py_ssize_t
offset_of(PyObject *descr)
{
    if (Py_TYPE(descr) != &PyMemberDescr_Type) {
        PyErr_SetString(PyExc_TypeError, "engine._fast_writes.bind: a slot descriptor expected");
        return -1;
    }
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    if (member->type != T_OBJECT_EX) {
        PyErr_SetString(PyExc_TypeError, "engine._fast_writes.bind: an object slot expected");
        return -1;
    }
    return member->offset;
}

static PyObject *
bind(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *cls, *d_value, *d_dtype, *d_shape, *d_alias;
    PyObject *live, *var, *bdtype, *basic, *refusals, *py_set, *checked, *del_refused;
    PyObject *bump_fn, *in_place, *in_place_slow;
    if (!PyArg_ParseTuple(args, "O!OOOOO!OOO!O!OOOOO!O", &PyType_Type, &cls,
                          &d_value, &d_dtype, &d_shape, &d_alias, &PySet_Type, &live, &var,
                          &bdtype, &PyTuple_Type, &basic, &PyTuple_Type, &refusals, &py_set,
                          &checked, &del_refused, &bump_fn, &PyDict_Type, &in_place,
                          &in_place_slow))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)cls, &WritableType)) {
        PyErr_SetString(PyExc_TypeError, "engine._fast_writes.bind: the class must derive "
                        "from Writable");
        return NULL;
    }
    Py_ssize_t ov = offset_of(d_value), od = offset_of(d_dtype), os = offset_of(d_shape),
               oa = offset_of(d_alias);
    if (ov < 0 || od < 0 || os < 0 || oa < 0)
        return NULL;
    off_value = ov; off_dtype = od; off_shape = os; off_alias = oa;
    Py_INCREF(live); Py_XSETREF(live_tapes, live);
    Py_INCREF(var); Py_XSETREF(mode_var, var);
    Py_INCREF(bdtype); Py_XSETREF(bool_dtype, bdtype);
    Py_INCREF(basic); Py_XSETREF(basic_types, basic);
    Py_INCREF(refusals); Py_XSETREF(refused, refusals);
    Py_INCREF(py_set); Py_XSETREF(setitem_python, py_set);
    Py_INCREF(checked); Py_XSETREF(setitem_checked, checked);
    Py_INCREF(del_refused); Py_XSETREF(delitem_refused, del_refused);
    Py_INCREF(bump_fn); Py_XSETREF(bump, bump_fn);
    Py_INCREF(in_place); Py_XSETREF(in_place_python, in_place);
    Py_INCREF(in_place_slow); Py_XSETREF(in_place_checked, in_place_slow);
    Py_INCREF(cls); Py_XSETREF(tensor_type, (PyTypeObject *)cls);   /* last: arms the slots */
    Py_RETURN_NONE;
}

static PyObject *
set_enabled(PyObject *Py_UNUSED(module), PyObject *flag)
{
    int on = PyObject_IsTrue(flag);
    if (on < 0)
        return NULL;
    int was = enabled;
    enabled = on;
    return PyBool_FromLong(was);
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS,
     PyDoc_STR("bind(Tensor, d_value, d_dtype, d_shape, d_alias, live_tapes, mode_var, "
               "bool_dtype, basic_types, refusals, setitem, checked_setitem, refuse_delete, "
               "bump, in_place_methods, checked_in_place): arm the fast paths.")},
    {"set_enabled", set_enabled, METH_O,
     PyDoc_STR("set_enabled(flag) -> the previous flag: False sends every write through "
               "engine/writes.py's Python functions (tests compare the two).")},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "engine._fast_writes",
    PyDoc_STR("The C fast paths of tensor writes (see engine/fast_writes.py)."), -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__fast_writes(void)
{
    /* object's own tp_new, so object.__new__(Tensor) (engine/tensor.py's wrap) stays
     * allowed: Python allows it when the nearest static base allocates as object does. */
    WritableType.tp_new = PyBaseObject_Type.tp_new;
    if (PyType_Ready(&WritableType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    Py_INCREF(&WritableType);
    if (PyModule_AddObject(m, "Writable", (PyObject *)&WritableType) < 0) {
        Py_DECREF(&WritableType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
