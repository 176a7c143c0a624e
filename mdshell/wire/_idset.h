/* IdSet: a set of object ids (addresses) for the image builder's copy-on-write bookkeeping
 * (ImageBuilder._owned: what it made since the last publish, which it changes in place).
 *
 * From Python it is the part of a set the builder uses: add(id), discard(id), clear(),
 * `id in s`, len(s); each item an int that id() gives (ints below 2 are refused: no
 * object lives there). From C (the compiled handlers) it is asked about an address without
 * making an int (idset_has, idset_add).
 *
 * Why not a set of ints: an id's hash is the address itself, a multiple of 16, so a set's
 * first probe lands on one slot in sixteen and lookups walk long chains; and every C-side
 * question made an int first. Here an address is hashed by Fibonacci hashing of its bits
 * above the alignment, in an open-addressed table (linear probing, removal marks), kept at
 * most two thirds full. Included by _cwalk.c (one compilation unit); no object is held, so
 * it needs no garbage-collector support. */

typedef struct {
    PyObject_HEAD
    uintptr_t *slots;  /* IDSET_EMPTY, IDSET_REMOVED, or an address */
    Py_ssize_t size;   /* slots: a power of two, 0 before the first add */
    Py_ssize_t used;   /* addresses held */
    Py_ssize_t filled; /* addresses and removal marks */
} IdSet;

#define IDSET_EMPTY ((uintptr_t)0)
#define IDSET_REMOVED ((uintptr_t)1)
#define IDSET_MIN 16

static PyTypeObject IdSetType;

static inline size_t idset_slot(const IdSet *s, uintptr_t key)
{
    uint64_t h = (uint64_t)(key >> 4) * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(h >> 32) & (size_t)(s->size - 1);
}

/* The slot holding `key`, or -1. */
static Py_ssize_t idset_find(const IdSet *s, uintptr_t key)
{
    if (s->size == 0)
        return -1;
    size_t mask = (size_t)(s->size - 1), i = idset_slot(s, key);
    for (;;) {  /* ends: the table always has empty slots (at most two thirds filled) */
        uintptr_t k = s->slots[i];
        if (k == key)
            return (Py_ssize_t)i;
        if (k == IDSET_EMPTY)
            return -1;
        i = (i + 1) & mask;
    }
}

static inline int idset_has(const IdSet *s, const void *obj)
{
    return idset_find(s, (uintptr_t)obj) >= 0;
}

/* The table remade with `size` slots (a power of two above the addresses held); -1 with
 * MemoryError. */
static int idset_resize(IdSet *s, Py_ssize_t size)
{
    uintptr_t *old = s->slots, *slots = PyMem_Calloc((size_t)size, sizeof(uintptr_t));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t old_size = s->size;
    s->slots = slots;
    s->size = size;
    s->filled = s->used;
    size_t mask = (size_t)(size - 1);
    for (Py_ssize_t j = 0; j < old_size; j++) {
        uintptr_t k = old[j];
        if (k == IDSET_EMPTY || k == IDSET_REMOVED)
            continue;
        size_t i = idset_slot(s, k);
        while (slots[i] != IDSET_EMPTY)
            i = (i + 1) & mask;
        slots[i] = k;
    }
    PyMem_Free(old);
    return 0;
}

/* `key` added (an address, at least 2); -1 with MemoryError. */
static int idset_add_key(IdSet *s, uintptr_t key)
{
    if (idset_find(s, key) >= 0)
        return 0;
    if ((s->filled + 1) * 3 >= s->size * 2) {  /* remade at most a third full */
        Py_ssize_t size = IDSET_MIN;
        while (size <= (s->used + 1) * 3)
            size *= 2;
        if (idset_resize(s, size) < 0)
            return -1;
    }
    size_t mask = (size_t)(s->size - 1), i = idset_slot(s, key);
    while (s->slots[i] != IDSET_EMPTY && s->slots[i] != IDSET_REMOVED)
        i = (i + 1) & mask;
    if (s->slots[i] == IDSET_EMPTY)
        s->filled++;
    s->slots[i] = key;
    s->used++;
    return 0;
}

static inline int idset_add(IdSet *s, const void *obj)
{
    return idset_add_key(s, (uintptr_t)obj);
}

/* An id given from Python as an address: 1, 0 when it is no address (below 2, or not an
 * int: never in the set), -1 on error. */
static int idset_key(PyObject *v, uintptr_t *key)
{
    if (!PyLong_Check(v))
        return 0;
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred())
        return -1;
    if (overflow || x < 2 || (unsigned long long)x > (unsigned long long)UINTPTR_MAX)
        return 0;
    *key = (uintptr_t)x;
    return 1;
}

static PyObject *idset_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if ((args != NULL && PyTuple_GET_SIZE(args)) || (kwargs != NULL && PyDict_GET_SIZE(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "IdSet() takes no arguments");
        return NULL;
    }
    return type->tp_alloc(type, 0);  /* zeroed: no table until the first add */
}

static void idset_dealloc(PyObject *self)
{
    PyMem_Free(((IdSet *)self)->slots);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *idset_add_py(PyObject *self, PyObject *v)
{
    uintptr_t key;
    int ok = idset_key(v, &key);
    if (ok < 0)
        return NULL;
    if (ok == 0) {
        PyErr_SetString(PyExc_ValueError, "an IdSet holds ids (ints of 2 and more)");
        return NULL;
    }
    if (idset_add_key((IdSet *)self, key) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *idset_discard(PyObject *self, PyObject *v)
{
    IdSet *s = (IdSet *)self;
    uintptr_t key;
    int ok = idset_key(v, &key);
    if (ok < 0)
        return NULL;
    Py_ssize_t at = ok ? idset_find(s, key) : -1;
    if (at >= 0) {
        s->slots[at] = IDSET_REMOVED;
        s->used--;
    }
    Py_RETURN_NONE;
}

static PyObject *idset_clear(PyObject *self, PyObject *unused)
{
    IdSet *s = (IdSet *)self;
    PyMem_Free(s->slots);  /* a big table is not kept: clears follow every publish */
    s->slots = NULL;
    s->size = s->used = s->filled = 0;
    Py_RETURN_NONE;
}

static int idset_contains(PyObject *self, PyObject *v)
{
    uintptr_t key;
    int ok = idset_key(v, &key);
    return ok <= 0 ? ok : idset_find((IdSet *)self, key) >= 0;
}

static Py_ssize_t idset_len(PyObject *self)
{
    return ((IdSet *)self)->used;
}

static PyMethodDef idset_methods[] = {
    {"add", idset_add_py, METH_O, "add(id): hold the id"},
    {"discard", idset_discard, METH_O, "discard(id): the id no longer held, if it was"},
    {"clear", idset_clear, METH_NOARGS, "clear(): hold nothing"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods idset_as_sequence = {
    .sq_length = idset_len,
    .sq_contains = idset_contains,
};

static PyTypeObject IdSetType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mdshell.wire._cwalk.IdSet",
    .tp_basicsize = sizeof(IdSet),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "IdSet(): a set of object ids (add, discard, clear, in, len)",
    .tp_new = idset_new,
    .tp_dealloc = idset_dealloc,
    .tp_methods = idset_methods,
    .tp_as_sequence = &idset_as_sequence,
};
