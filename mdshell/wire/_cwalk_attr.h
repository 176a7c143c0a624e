/* Attribute reads of __slots__ classes where the slot lies (attr), and txn_span.
 *
 * Part of _cwalk.c (one compilation unit: it includes the parts in order, each
 * using what the parts before it define). */

/* ------------------------------------------------------------------ attributes */

/* Where a class's __slots__ attribute lies in its instances, by (class, interned name):
 * a small direct-mapped table, each entry valid while the class's version tag is the one
 * it was found at (CPython gives a class a new tag whenever it or a base changes). */
typedef struct {
    PyTypeObject *type;
    PyObject *name;
    unsigned int tag;
    Py_ssize_t offset;
} AttrAt;
#define ATTRS_AT 256  /* a power of 2 */
static AttrAt attrs_at[ATTRS_AT];

/* The entry of (t, name): the two addresses mixed (Fibonacci hashing), the top bits. */
static inline AttrAt *attr_entry(PyTypeObject *t, PyObject *name)
{
    uint64_t h = ((uint64_t)(uintptr_t)t ^ ((uint64_t)(uintptr_t)name << 7)) *
                 UINT64_C(0x9E3779B97F4A7C15);
    return &attrs_at[h >> 56];
}

static inline int tag_valid(PyTypeObject *t)
{
#ifdef Py_TPFLAGS_VALID_VERSION_TAG
    return (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) != 0 && t->tp_version_tag != 0;
#else
    return t->tp_version_tag != 0;
#endif
}

/* obj.name as PyObject_GetAttr gives it (a new reference, NULL on error): a slot of a
 * __slots__ class (the image, its topics, the builder, the journal: read once a record or
 * more by the handlers) read where it lies; anything else, or a slot not set, by
 * PyObject_GetAttr. `name`: a str (the handlers' are interned at import). */
static PyObject *attr(PyObject *obj, PyObject *name)
{
    PyTypeObject *t = Py_TYPE(obj);
    AttrAt *e = attr_entry(t, name);
    if (e->type != t || e->name != name || e->tag != t->tp_version_tag || !tag_valid(t)) {
        e->type = NULL;  /* (a class freed and another made where it was has a new tag) */
        if (t->tp_getattro != PyObject_GenericGetAttr)
            return PyObject_GetAttr(obj, name);
        PyObject *d = _PyType_Lookup(t, name);  /* borrowed; gives the class a tag */
        if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type) || !tag_valid(t) ||
                !PyType_IsSubtype(t, PyDescr_TYPE(d)))  /* a slot of this class's own */
            return PyObject_GetAttr(obj, name);
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type != T_OBJECT_EX || m->offset <= 0 || (m->flags & PY_AUDIT_READ))
            return PyObject_GetAttr(obj, name);
        Py_INCREF(name);  /* held: no other str may take its place while it is here */
        Py_XDECREF(e->name);
        *e = (AttrAt){t, name, t->tp_version_tag, m->offset};
    }
    PyObject *v = *(PyObject **)((char *)obj + e->offset);
    return v != NULL ? Py_NewRef(v) : PyObject_GetAttr(obj, name);
}

/* txn_span(decoded, i) -> j: the end of the run of decoded records from decoded[i] (entries
 * (offset, key, version, value, value position)) that a metadata transaction keeps as they
 * are until its end: a value that is a dict or a tuple (an undecoded PartitionRecord), a
 * key that is not a transaction marker (23-25). */
static PyObject *txn_span(PyObject *self, PyObject *args)
{
    PyObject *decoded;
    Py_ssize_t i;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &decoded, &i))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(decoded);
    if (i < 0) {
        PyErr_SetString(PyExc_ValueError, "txn_span: i >= 0");
        return NULL;
    }
    for (; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(decoded, i);
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 5)
            break;
        PyObject *key = PyTuple_GET_ITEM(t, 1), *value = PyTuple_GET_ITEM(t, 3);
        if (!PyLong_CheckExact(key) || (!PyDict_CheckExact(value) && !PyTuple_CheckExact(value)))
            break;
        long k = PyLong_AsLong(key);
        if (k == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            break;
        }
        if (k >= 23 && k <= 25)
            break;
    }
    return PyLong_FromSsize_t(i);
}

/* read_attr(obj, name) -> obj.name as the handlers read it (attr): for tests, which hold
 * it to getattr. */
static PyObject *read_attr(PyObject *self, PyObject *args)
{
    PyObject *obj, *name;
    if (!PyArg_ParseTuple(args, "OU", &obj, &name))
        return NULL;
    Py_INCREF(name);
    PyUnicode_InternInPlace(&name);
    PyObject *v = attr(obj, name);
    Py_DECREF(name);
    return v;
}
