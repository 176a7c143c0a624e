/* Metadata record decoding at C speed, driven by a description compiled from the schema.
 *
 * mdshell/wire/cdecoder.py turns a (message, version) of the schema into nested tuples (the
 * "spec"); Decoder(spec, fallback) compiles that into the C tables below once, and calling
 * the decoder as decoder(buf, pos, end) gives (dict, pos) exactly as the generated Python
 * decoder of codec.py does: same keys in the same order, same value types, same pos.
 *
 * This file never reports errors of its own. On anything it does not decode cleanly inside
 * buf[pos:end] (out of bounds, long varint, null where not nullable, bad UTF-8, a tagged
 * field of the wrong size, a buffer that is not bytes...) it calls `fallback` (the generated
 * Python decoder) with the same arguments, so the same exception and message come out, or
 * the same odd result when the Python decoder accepts what this one does not. With fallback
 * None it returns None instead (the tests use that to see that C itself decoded). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

/* Field kinds; cdecoder.py uses the same numbers. */
enum {
    K_INT8, K_INT16, K_INT32, K_INT64, K_UINT16, K_UINT32, K_FLOAT64, K_UUID,
    K_BOOL, K_STRING, K_BYTES, K_STRUCT, K_COUNT
};
/* Bytes taken by one value of a fixed-width kind (0: variable width). */
static const Py_ssize_t WIDTH[K_COUNT] = {1, 2, 4, 8, 2, 4, 8, 16, 1, 0, 0, 0};

#define MAX_TAGGED 64  /* tagged fields of one struct (Kafka's schemas have < 10) */

typedef struct Prog Prog;

typedef struct {
    PyObject *key;     /* str, the camelCase name */
    int kind;
    int array;
    int nullable;
    Prog *sub;         /* members, for K_STRUCT */
} Field;

typedef struct {
    Field f;
    uint64_t tag;
    PyObject *dflt;    /* the value when the tag is absent */
} Tagged;

/* One struct (or the message itself) at one version. */
/* A step of the check mode's walk over the plain fields: `fixed` bytes of consecutive
 * fixed-width scalars (0: none), then `field` (NULL: none). */
typedef struct {
    Py_ssize_t fixed;
    const Field *field;
} Step;

struct Prog {
    Py_ssize_t nplain, ntagged, nabsent, nsteps;
    Field *plain;
    Tagged *tagged;
    PyObject **absent_key;
    PyObject **absent_dflt;
    PyObject *unknown_key;  /* codec.UNKNOWN_TAGS */
    PyObject *tmpl;         /* every key in result order, with the shared defaults */
    Step *steps;            /* the plain fields as the check mode walks them */
};

/* ------------------------------------------------------------------ reading */

/* Where decoding is: the bytes, the current position and the limit not to read past. */
typedef struct {
    const unsigned char *b;
    Py_ssize_t pos;
    Py_ssize_t end;
} Cur;

/* Unsigned LEB128. At most 5 bytes (35 bits): longer ones are legal for Python's reader but
 * never written by Kafka for these fields, so they go to the fallback. 0 ok, -1 give up. */
static inline int
uvarint(Cur *c, uint64_t *out)
{
    if (c->pos < c->end && c->b[c->pos] < 0x80) {  /* one byte: most of them */
        *out = c->b[c->pos++];
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < 5; i++) {
        if (c->pos >= c->end)
            return -1;
        unsigned char x = c->b[c->pos++];
        v |= (uint64_t)(x & 0x7F) << (7 * i);
        if (x < 0x80) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* Big-endian unsigned value of n bytes at p. */
static uint64_t
be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Two's complement of a `bits`-wide unsigned value, without implementation-defined casts. */
static int64_t
signed_of(uint64_t v, int bits)
{
    uint64_t mask = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    if (v & ((uint64_t)1 << (bits - 1)))
        return -(int64_t)(~v & mask) - 1;
    return (int64_t)v;
}

/* One fixed-width value at p (the caller checked the bytes are there); NULL on no memory. */
static PyObject *
fixed(int kind, const unsigned char *p)
{
    switch (kind) {
    case K_INT8: return PyLong_FromLongLong(signed_of(p[0], 8));
    case K_INT16: return PyLong_FromLongLong(signed_of(be(p, 2), 16));
    case K_INT32: return PyLong_FromLongLong(signed_of(be(p, 4), 32));
    case K_INT64: return PyLong_FromLongLong(signed_of(be(p, 8), 64));
    case K_UINT16: return PyLong_FromUnsignedLongLong(be(p, 2));
    case K_UINT32: return PyLong_FromUnsignedLongLong(be(p, 4));
    case K_FLOAT64: {
        double x = PyFloat_Unpack8((const char *)p, 0);  /* fails only off IEEE 754 */
        return x == -1.0 && PyErr_Occurred() ? NULL : PyFloat_FromDouble(x);
    }
    case K_UUID: return PyBytes_FromStringAndSize((const char *)p, 16);
    default: return PyBool_FromLong(p[0] != 0);  /* K_BOOL */
    }
}

static PyObject *decode_struct(const Prog *p, Cur *c);

/* A compact length (length + 1, 0 for null). 1: null, 0: *n set, -1: give up. */
static inline int
compact_len(Cur *c, uint64_t *n)
{
    if (uvarint(c, n) < 0)
        return -1;
    if (*n == 0)
        return 1;
    *n -= 1;
    return 0;
}

/* One non-array value of `f` (array items are never nullable); NULL: give up. */
static PyObject *
scalar(const Field *f, int nullable, Cur *c)
{
    Py_ssize_t w = WIDTH[f->kind];
    if (w) {
        if (c->end - c->pos < w)
            return NULL;
        PyObject *v = fixed(f->kind, c->b + c->pos);
        c->pos += w;
        return v;
    }
    if (f->kind == K_STRUCT)
        return decode_struct(f->sub, c);
    uint64_t n;
    int r = compact_len(c, &n);
    if (r < 0 || (r == 1 && !nullable))
        return NULL;
    if (r == 1)
        Py_RETURN_NONE;
    if (n > (uint64_t)(c->end - c->pos))
        return NULL;
    const char *s = (const char *)c->b + c->pos;
    c->pos += (Py_ssize_t)n;
    if (f->kind == K_STRING)  /* strict UTF-8, the codec bytes.decode('utf-8') uses */
        return PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, NULL);
    return PyBytes_FromStringAndSize(s, (Py_ssize_t)n);
}

/* The value of field `f`: a list for arrays (None when null and nullable); NULL: give up. */
static PyObject *
value(const Field *f, Cur *c)
{
    if (!f->array)
        return scalar(f, f->nullable, c);
    uint64_t n;
    int r = compact_len(c, &n);
    if (r < 0 || (r == 1 && !f->nullable))
        return NULL;
    if (r == 1)
        Py_RETURN_NONE;
    /* Every item takes at least one byte (its width when fixed): a damaged length must not
     * allocate a huge list. n < 2**35 here, so the product cannot overflow. */
    Py_ssize_t least = WIDTH[f->kind] ? WIDTH[f->kind] : 1;
    if (n * (uint64_t)least > (uint64_t)(c->end - c->pos))
        return NULL;
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < (Py_ssize_t)n; i++) {
        PyObject *item = scalar(f, 0, c);
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);  /* steals the reference */
    }
    return list;
}

/* A default as the Python decoder gives it: lists copied (each result has its own), other
 * values shared (they are immutable, or dicts that codec.py shares too). New reference. */
static PyObject *
default_of(PyObject *d)
{
    if (PyList_CheckExact(d))
        return PyList_GetSlice(d, 0, PyList_GET_SIZE(d));
    Py_INCREF(d);
    return d;
}

/* Set d[key] = v and drop the reference to v; -1 on failure (v is dropped too). */
static int
put(PyObject *d, PyObject *key, PyObject *v)
{
    if (v == NULL)
        return -1;
    int r = PyDict_SetItem(d, key, v);
    Py_DECREF(v);
    return r;
}

/* The tagged section: known tags into vals (indexed like p->tagged), unknown ones into
 * *unknown as {tag: raw bytes}. 0 ok, -1 give up (the caller drops vals and *unknown). */
static int
tagged_section(const Prog *p, Cur *c, PyObject **vals, PyObject **unknown)
{
    uint64_t count, tag, size;
    if (uvarint(c, &count) < 0)
        return -1;
    for (uint64_t i = 0; i < count; i++) {
        if (uvarint(c, &tag) < 0 || uvarint(c, &size) < 0)
            return -1;
        if (size > (uint64_t)(c->end - c->pos))
            return -1;
        Py_ssize_t stop = c->pos + (Py_ssize_t)size;
        Py_ssize_t j = 0;
        while (j < p->ntagged && p->tagged[j].tag != tag)
            j++;
        if (j < p->ntagged) {
            /* Read within the field's own bytes, which it must fill exactly. */
            Cur sub = {c->b, c->pos, stop};
            PyObject *v = value(&p->tagged[j].f, &sub);
            if (v == NULL)
                return -1;
            Py_XSETREF(vals[j], v);  /* a repeated tag: the last one wins, as in Python */
            if (sub.pos != stop)
                return -1;
        } else {
            if (*unknown == NULL && (*unknown = PyDict_New()) == NULL)
                return -1;
            PyObject *k = PyLong_FromUnsignedLongLong(tag);
            if (k == NULL)
                return -1;
            int r = put(*unknown, k,
                        PyBytes_FromStringAndSize((const char *)c->b + c->pos, (Py_ssize_t)size));
            Py_DECREF(k);
            if (r < 0)
                return -1;
        }
        c->pos = stop;
    }
    return 0;
}

/* One struct: plain fields in order, then the tagged ones, the unknown tags, and the fields
 * absent at this version, in the key order of codec.py's dict. NULL: give up.
 * The dict starts as a copy of p->tmpl, which has every key in that order (the unknown tags
 * aside) and the shared defaults in place: filling a dict that never grows is about twice as
 * fast as inserting into an empty one. */
static PyObject *
decode_struct(const Prog *p, Cur *c)
{
    PyObject *vals[MAX_TAGGED] = {NULL};
    PyObject *unknown = NULL;
    int moved = 0;  /* the absent fields were taken out, to go after the unknown tags */
    PyObject *d = PyDict_Copy(p->tmpl);
    if (d == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < p->nplain; i++)
        if (put(d, p->plain[i].key, value(&p->plain[i], c)) < 0)
            goto fail;
    if (tagged_section(p, c, vals, &unknown) < 0)
        goto fail;
    for (Py_ssize_t j = 0; j < p->ntagged; j++) {
        PyObject *v = vals[j];
        vals[j] = NULL;  /* put() owns it now */
        if (v == NULL && PyList_CheckExact(p->tagged[j].dflt))
            v = default_of(p->tagged[j].dflt);  /* each result has its own list */
        else if (v == NULL)
            continue;  /* the template's shared default */
        if (put(d, p->tagged[j].f.key, v) < 0)
            goto fail;
    }
    if (unknown != NULL) {
        /* The unknown tags go before the absent fields: move those to the end. */
        for (Py_ssize_t k = 0; k < p->nabsent; k++)
            if (PyDict_DelItem(d, p->absent_key[k]) < 0)
                goto fail;
        moved = 1;
        PyObject *u = unknown;
        unknown = NULL;
        if (put(d, p->unknown_key, u) < 0)
            goto fail;
    }
    for (Py_ssize_t k = 0; k < p->nabsent; k++) {
        PyObject *dflt = p->absent_dflt[k];
        if (moved || PyList_CheckExact(dflt))
            if (put(d, p->absent_key[k], default_of(dflt)) < 0)
                goto fail;
    }
    return d;
fail:
    for (Py_ssize_t j = 0; j < p->ntagged; j++)
        Py_XDECREF(vals[j]);
    Py_XDECREF(unknown);
    Py_DECREF(d);
    return NULL;
}

/* ------------------------------------------------------------------ checking */

/* The check mode: whether decode_struct would decode these bytes, without making the
 * values (a PartitionRecord held undecoded must be one that decodes). It reads exactly what
 * decode_struct reads and refuses what it refuses; an unknown tagged field of the message
 * itself (`top`) counts as not clean (the caller decodes fully, and says it), one inside a
 * member struct is kept raw by decoding, so passed over here. 1 clean, 0 not. */
static int check_struct(const Prog *p, Cur *c, int top);

static int
check_scalar(const Field *f, int nullable, Cur *c)
{
    Py_ssize_t w = WIDTH[f->kind];
    if (w) {
        if (c->end - c->pos < w)
            return 0;
        c->pos += w;
        return 1;
    }
    if (f->kind == K_STRUCT)
        return check_struct(f->sub, c, 0);
    uint64_t n;
    int r = compact_len(c, &n);
    if (r < 0 || (r == 1 && !nullable))
        return 0;
    if (r == 1)
        return 1;
    if (n > (uint64_t)(c->end - c->pos))
        return 0;
    if (f->kind == K_STRING) {  /* strict UTF-8, as decoding checks it */
        PyObject *s = PyUnicode_DecodeUTF8((const char *)c->b + c->pos, (Py_ssize_t)n, NULL);
        if (s == NULL) {
            PyErr_Clear();
            return 0;
        }
        Py_DECREF(s);
    }
    c->pos += (Py_ssize_t)n;
    return 1;
}

static int
check_value(const Field *f, Cur *c)
{
    if (!f->array)
        return check_scalar(f, f->nullable, c);
    uint64_t n;
    int r = compact_len(c, &n);
    if (r < 0 || (r == 1 && !f->nullable))
        return 0;
    if (r == 1)
        return 1;
    Py_ssize_t least = WIDTH[f->kind] ? WIDTH[f->kind] : 1;
    if (n * (uint64_t)least > (uint64_t)(c->end - c->pos))
        return 0;
    if (WIDTH[f->kind]) {
        c->pos += (Py_ssize_t)n * least;
        return 1;
    }
    for (uint64_t i = 0; i < n; i++)
        if (!check_scalar(f, 0, c))
            return 0;
    return 1;
}

static int
check_struct(const Prog *p, Cur *c, int top)
{
    for (Py_ssize_t i = 0; i < p->nsteps; i++) {
        const Step *st = &p->steps[i];
        if (st->fixed) {
            if (c->end - c->pos < st->fixed)
                return 0;
            c->pos += st->fixed;
        }
        const Field *f = st->field;
        if (f == NULL)
            continue;
        if (f->array && WIDTH[f->kind]) {  /* an array of fixed-width items, inline */
            uint64_t n;
            int r = compact_len(c, &n);
            if (r < 0 || (r == 1 && !f->nullable))
                return 0;
            if (r == 0) {
                if (n * (uint64_t)WIDTH[f->kind] > (uint64_t)(c->end - c->pos))
                    return 0;
                c->pos += (Py_ssize_t)n * WIDTH[f->kind];
            }
        } else if (!check_value(f, c)) {
            return 0;
        }
    }
    uint64_t count, tag, size;
    if (uvarint(c, &count) < 0)
        return 0;
    for (uint64_t i = 0; i < count; i++) {
        if (uvarint(c, &tag) < 0 || uvarint(c, &size) < 0)
            return 0;
        if (size > (uint64_t)(c->end - c->pos))
            return 0;
        Py_ssize_t stop = c->pos + (Py_ssize_t)size;
        Py_ssize_t j = 0;
        while (j < p->ntagged && p->tagged[j].tag != tag)
            j++;
        if (j == p->ntagged) {
            if (top)
                return 0;  /* unknown: not clean */
            c->pos = stop;
            continue;
        }
        Cur sub = {c->b, c->pos, stop};
        if (!check_value(&p->tagged[j].f, &sub) || sub.pos != stop)
            return 0;
        c->pos = stop;
    }
    return 1;
}

/* ------------------------------------------------------------------ compiling the spec */

static void
prog_free(Prog *p)
{
    if (p == NULL)
        return;
    for (Py_ssize_t i = 0; p->plain && i < p->nplain; i++) {
        Py_XDECREF(p->plain[i].key);
        prog_free(p->plain[i].sub);
    }
    for (Py_ssize_t i = 0; p->tagged && i < p->ntagged; i++) {
        Py_XDECREF(p->tagged[i].f.key);
        prog_free(p->tagged[i].f.sub);
        Py_XDECREF(p->tagged[i].dflt);
    }
    for (Py_ssize_t i = 0; p->absent_key && i < p->nabsent; i++) {
        Py_XDECREF(p->absent_key[i]);
        Py_XDECREF(p->absent_dflt[i]);
    }
    Py_XDECREF(p->unknown_key);
    Py_XDECREF(p->tmpl);
    PyMem_Free(p->plain);
    PyMem_Free(p->steps);
    PyMem_Free(p->tagged);
    PyMem_Free(p->absent_key);
    PyMem_Free(p->absent_dflt);
    PyMem_Free(p);
}

static Prog *prog_new(PyObject *spec, PyObject *unknown_key);

/* A field from (key, kind, is_array, nullable, sub_spec or None). 0 ok, -1 error set. */
static int
field_from(Field *f, PyObject *t, PyObject *unknown_key)
{
    PyObject *key, *sub;
    int kind, array, nullable;
    if (!PyTuple_Check(t)) {
        PyErr_SetString(PyExc_TypeError, "a field spec is a tuple");
        return -1;
    }
    if (!PyArg_ParseTuple(t, "UippO;fieldspec", &key, &kind, &array, &nullable, &sub))
        return -1;
    if (kind < 0 || kind >= K_COUNT) {
        PyErr_Format(PyExc_ValueError, "bad field kind %d", kind);
        return -1;
    }
    if ((kind == K_STRUCT) != (sub != Py_None)) {
        PyErr_SetString(PyExc_ValueError, "members given for a non-struct, or missing");
        return -1;
    }
    Py_INCREF(key);
    f->key = key;
    f->kind = kind;
    f->array = array;
    f->nullable = nullable;
    if (sub != Py_None && (f->sub = prog_new(sub, unknown_key)) == NULL)
        return -1;
    return 0;
}

/* Allocate n zeroed items of `size` into *out; -1 with MemoryError set. */
static int
alloc(void *out, Py_ssize_t n, size_t size)
{
    void *m = PyMem_Calloc(n ? (size_t)n : 1, size);
    if (m == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(out, &m, sizeof m);
    return 0;
}

/* A Prog from the spec (plain, tagged, absent):
 *   plain:  ((key, kind, is_array, nullable, sub), ...)
 *   tagged: ((tag, default, key, kind, is_array, nullable, sub), ...)
 *   absent: ((key, default), ...)
 * NULL with an exception on a malformed spec. */
static Prog *
prog_new(PyObject *spec, PyObject *unknown_key)
{
    PyObject *plain, *tagged, *absent;
    if (!PyArg_ParseTuple(spec, "O!O!O!;spec", &PyTuple_Type, &plain, &PyTuple_Type, &tagged,
                          &PyTuple_Type, &absent))
        return NULL;
    Prog *p = PyMem_Calloc(1, sizeof *p);
    if (p == NULL)
        return (Prog *)PyErr_NoMemory();
    Py_INCREF(unknown_key);
    p->unknown_key = unknown_key;
    if (PyTuple_GET_SIZE(tagged) > MAX_TAGGED) {
        PyErr_SetString(PyExc_ValueError, "too many tagged fields");
        goto fail;
    }
    p->nplain = PyTuple_GET_SIZE(plain);
    p->ntagged = PyTuple_GET_SIZE(tagged);
    p->nabsent = PyTuple_GET_SIZE(absent);
    if (alloc(&p->plain, p->nplain, sizeof(Field)) < 0
        || alloc(&p->tagged, p->ntagged, sizeof(Tagged)) < 0
        || alloc(&p->absent_key, p->nabsent, sizeof(PyObject *)) < 0
        || alloc(&p->absent_dflt, p->nabsent, sizeof(PyObject *)) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < p->nplain; i++)
        if (field_from(&p->plain[i], PyTuple_GET_ITEM(plain, i), unknown_key) < 0)
            goto fail;
    for (Py_ssize_t i = 0; i < p->ntagged; i++) {
        PyObject *t = PyTuple_GET_ITEM(tagged, i), *dflt, *rest;
        unsigned long long tag;
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 2) {
            PyErr_SetString(PyExc_ValueError, "bad tagged field spec");
            goto fail;
        }
        tag = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(t, 0));
        if (tag == (unsigned long long)-1 && PyErr_Occurred())
            goto fail;
        p->tagged[i].tag = tag;
        dflt = PyTuple_GET_ITEM(t, 1);
        Py_INCREF(dflt);
        p->tagged[i].dflt = dflt;
        rest = PyTuple_GetSlice(t, 2, PyTuple_GET_SIZE(t));
        if (rest == NULL)
            goto fail;
        int r = field_from(&p->tagged[i].f, rest, unknown_key);
        Py_DECREF(rest);
        if (r < 0)
            goto fail;
    }
    for (Py_ssize_t i = 0; i < p->nabsent; i++) {
        PyObject *key, *dflt;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(absent, i), "UO;absent field spec", &key, &dflt))
            goto fail;
        Py_INCREF(key);
        p->absent_key[i] = key;
        Py_INCREF(dflt);
        p->absent_dflt[i] = dflt;
    }
    if ((p->tmpl = PyDict_New()) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < p->nplain; i++)
        if (PyDict_SetItem(p->tmpl, p->plain[i].key, Py_None) < 0)
            goto fail;
    for (Py_ssize_t i = 0; i < p->ntagged; i++)
        if (PyDict_SetItem(p->tmpl, p->tagged[i].f.key, p->tagged[i].dflt) < 0)
            goto fail;
    for (Py_ssize_t i = 0; i < p->nabsent; i++)
        if (PyDict_SetItem(p->tmpl, p->absent_key[i], p->absent_dflt[i]) < 0)
            goto fail;
    if (PyDict_GET_SIZE(p->tmpl) != p->nplain + p->ntagged + p->nabsent) {
        PyErr_SetString(PyExc_ValueError, "field names repeat");
        goto fail;
    }
    /* the check mode's steps: runs of fixed-width scalars joined, each other field alone */
    if (alloc(&p->steps, p->nplain + 1, sizeof(Step)) < 0)
        goto fail;
    Py_ssize_t fixed = 0;
    for (Py_ssize_t i = 0; i < p->nplain; i++) {
        const Field *f = &p->plain[i];
        if (!f->array && WIDTH[f->kind]) {
            fixed += WIDTH[f->kind];
            continue;
        }
        p->steps[p->nsteps].fixed = fixed;
        p->steps[p->nsteps++].field = f;
        fixed = 0;
    }
    if (fixed) {
        p->steps[p->nsteps].fixed = fixed;
        p->steps[p->nsteps++].field = NULL;
    }
    return p;
fail:
    prog_free(p);
    return NULL;
}

/* ------------------------------------------------------------------ the Decoder type */

typedef struct {
    PyObject_HEAD
    Prog *prog;
    PyObject *fallback;  /* the Python decoder, or None (no GC: it never refers back here) */
    vectorcallfunc vectorcall;
} Decoder;

/* decoder(buf, pos, end) -> (dict, pos), by C when it can, else by the fallback. */
static PyObject *
decoder_call(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Decoder *self = (Decoder *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs == 4 && kwnames == NULL) {  /* the check mode: decodes exactly and cleanly? */
        int ok = 0;
        if (PyBytes_CheckExact(args[0])) {
            Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
            Py_ssize_t end = PyLong_AsSsize_t(args[2]);
            if (PyErr_Occurred())
                PyErr_Clear();
            else if (0 <= pos && pos <= end && end <= PyBytes_GET_SIZE(args[0])) {
                Cur c = {(const unsigned char *)PyBytes_AS_STRING(args[0]), pos, end};
                ok = check_struct(self->prog, &c, 1) && c.pos == end;
            }
        }
        return PyBool_FromLong(ok);
    }
    if (nargs == 3 && kwnames == NULL && PyBytes_CheckExact(args[0])) {
        /* Only bytes: slices of other buffers (bytearray, memoryview) have other types in
         * the Python decoder's results, or no .decode at all; it handles them itself. */
        Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
        Py_ssize_t end = PyLong_AsSsize_t(args[2]);
        if (PyErr_Occurred()) {
            PyErr_Clear();
        } else if (0 <= pos && pos <= end && end <= PyBytes_GET_SIZE(args[0])) {
            Cur c = {(const unsigned char *)PyBytes_AS_STRING(args[0]), pos, end};
            PyObject *d = decode_struct(self->prog, &c);
            if (d != NULL) {
                PyObject *p = PyLong_FromSsize_t(c.pos);
                PyObject *out = p ? PyTuple_Pack(2, d, p) : NULL;
                Py_DECREF(d);
                Py_XDECREF(p);
                if (out != NULL)
                    return out;
            }
            /* Whatever went wrong (bad bytes, bad UTF-8, even no memory), the fallback says
             * it the way the Python decoder does. */
            PyErr_Clear();
        }
    }
    if (self->fallback == Py_None)
        Py_RETURN_NONE;
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static PyObject *
decoder_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *spec, *fallback, *unknown_key;
    static char *kwlist[] = {"spec", "fallback", "unknown_key", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!OU:Decoder", kwlist, &PyTuple_Type,
                                     &spec, &fallback, &unknown_key))
        return NULL;
    if (fallback != Py_None && !PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "fallback must be callable or None");
        return NULL;
    }
    Decoder *self = (Decoder *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = decoder_call;
    Py_INCREF(fallback);
    self->fallback = fallback;
    if ((self->prog = prog_new(spec, unknown_key)) == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void
decoder_dealloc(PyObject *self_)
{
    Decoder *self = (Decoder *)self_;
    prog_free(self->prog);
    Py_CLEAR(self->fallback);
    Py_TYPE(self_)->tp_free(self_);
}

static PyMemberDef decoder_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Decoder, vectorcall), READONLY, NULL},
    {"fallback", T_OBJECT, offsetof(Decoder, fallback), READONLY,
     "the Python decoder run when this one gives up"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject DecoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mdshell.wire._cdecode.Decoder",
    .tp_basicsize = sizeof(Decoder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Decoder(spec, fallback, unknown_key): decoder(buf, pos, end) -> (dict, pos); "
               "decoder(buf, pos, end, True) -> whether C decodes it exactly, without unknown tags",
    .tp_new = decoder_new,
    .tp_dealloc = decoder_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Decoder, vectorcall),
    .tp_members = decoder_members,
};

/* The check mode for C callers (mdshell/wire/_cwalk.c, through the capsule below): -1
 * when `dec` is not a Decoder, else whether buf[pos:end] decodes exactly and cleanly. */
static int
check_c(PyObject *dec, const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end)
{
    if (Py_TYPE(dec) != &DecoderType)
        return -1;
    Cur c = {buf, pos, end};
    return check_struct(((Decoder *)dec)->prog, &c, 1) && c.pos == end;
}

/* The decoding for C callers (_cwalk's replay loop, through the capsule below): the dict
 * of buf[pos:end] when `dec` is a Decoder and it decodes those bytes exactly, as calling it
 * gives; NULL with no error set otherwise (the caller then calls the decoder, whose
 * fallback says what is wrong), with an error only for a MemoryError. */
static PyObject *
decode_c(PyObject *dec, const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end)
{
    if (Py_TYPE(dec) != &DecoderType || pos < 0 || pos > end)
        return NULL;
    Cur c = {buf, pos, end};
    PyObject *d = decode_struct(((Decoder *)dec)->prog, &c);
    if (d != NULL && c.pos == end)
        return d;
    Py_XDECREF(d);
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_MemoryError))
        PyErr_Clear();
    return NULL;
}

/* The fields mode for C callers (_cwalk's replay loop, through the capsule below): the
 * values of buf[pos:end]'s fields, one for each key of the dict decoding gives, in its
 * order (the plain fields, the tagged ones, those absent at this version: `n` of them, as
 * fields_index counts), made as decoding makes them (a tagged field not given and an absent
 * one get their default, lists copied), into out as new references: 1. 0 when `dec` is not
 * a Decoder of n fields, the bytes do not decode exactly or hold an unknown tagged field
 * (nothing left in out: decoding the dict way says what), -1 with only a MemoryError. */
static int
fields_c(PyObject *dec, const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end,
         PyObject **out, Py_ssize_t n)
{
    if (Py_TYPE(dec) != &DecoderType || pos < 0 || pos > end)
        return 0;
    const Prog *p = ((Decoder *)dec)->prog;
    if (n != p->nplain + p->ntagged + p->nabsent)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        out[i] = NULL;
    Cur c = {buf, pos, end};
    PyObject *unknown = NULL, **tagged = out + p->nplain, **absent = tagged + p->ntagged;
    for (Py_ssize_t i = 0; i < p->nplain; i++)
        if ((out[i] = value(&p->plain[i], &c)) == NULL)
            goto fail;
    if (tagged_section(p, &c, tagged, &unknown) < 0 || unknown != NULL || c.pos != end)
        goto fail;
    for (Py_ssize_t j = 0; j < p->ntagged; j++)
        if (tagged[j] == NULL && (tagged[j] = default_of(p->tagged[j].dflt)) == NULL)
            goto fail;
    for (Py_ssize_t k = 0; k < p->nabsent; k++)
        if ((absent[k] = default_of(p->absent_dflt[k])) == NULL)
            goto fail;
    return 1;
fail:
    Py_XDECREF(unknown);
    for (Py_ssize_t i = 0; i < n; i++)
        Py_CLEAR(out[i]);
    if (PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_MemoryError))
            return -1;
        PyErr_Clear();
    }
    return 0;
}

/* Where the field `key` (a str) comes in fields_c's values for `dec`: its index, -1 when
 * the message has no such field (or key is NULL), -2 when `dec` is not a Decoder; *n the
 * number of values. */
static Py_ssize_t
fields_index(PyObject *dec, PyObject *key, Py_ssize_t *n)
{
    if (Py_TYPE(dec) != &DecoderType)
        return -2;
    const Prog *p = ((Decoder *)dec)->prog;
    *n = p->nplain + p->ntagged + p->nabsent;
    if (key == NULL || !PyUnicode_Check(key))
        return -1;
    for (Py_ssize_t i = 0; i < *n; i++) {  /* the same object first (names are interned) */
        PyObject *k = i < p->nplain ? p->plain[i].key :
                      i < p->nplain + p->ntagged ? p->tagged[i - p->nplain].f.key :
                      p->absent_key[i - p->nplain - p->ntagged];
        if (k == key)
            return i;
    }
    for (Py_ssize_t i = 0; i < p->nplain; i++)
        if (PyUnicode_Compare(p->plain[i].key, key) == 0)
            return i;
    for (Py_ssize_t j = 0; j < p->ntagged; j++)
        if (PyUnicode_Compare(p->tagged[j].f.key, key) == 0)
            return p->nplain + j;
    for (Py_ssize_t k = 0; k < p->nabsent; k++)
        if (PyUnicode_Compare(p->absent_key[k], key) == 0)
            return p->nplain + p->ntagged + k;
    if (PyErr_Occurred())
        PyErr_Clear();
    return -1;
}

/* fields(decoder, buf, pos, end) -> fields_c's values of buf[pos:end] as a tuple, or None
 * where it leaves the record to decoding (for tests, which compare it with the dict). */
static PyObject *
fields_py(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || Py_TYPE(args[0]) != &DecoderType || !PyBytes_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "fields(Decoder, bytes, pos, end)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[2]), end = 0, n = 0;
    if (PyErr_Occurred() || ((end = PyLong_AsSsize_t(args[3])) == -1 && PyErr_Occurred()))
        return NULL;
    if (end > PyBytes_GET_SIZE(args[1]) || end < pos || pos < 0) {
        PyErr_SetString(PyExc_ValueError, "pos and end inside buf");
        return NULL;
    }
    fields_index(args[0], NULL, &n);
    PyObject *out = PyTuple_New(n);
    if (out == NULL)
        return NULL;
    int got = fields_c(args[0], (const unsigned char *)PyBytes_AS_STRING(args[1]), pos, end,
                       &PyTuple_GET_ITEM(out, 0), n);
    if (got > 0)
        return out;
    Py_DECREF(out);  /* its items are NULL again */
    if (got < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"fields", (PyCFunction)(void (*)(void))fields_py, METH_FASTCALL,
     "fields(decoder, buf, pos, end) -> the values of the fields, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_cdecode",
    .m_doc = "Schema-driven metadata record decoding in C (see mdshell/wire/cdecoder.py).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__cdecode(void)
{
    if (PyType_Ready(&DecoderType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&DecoderType);
    if (PyModule_AddObject(m, "Decoder", (PyObject *)&DecoderType) < 0) {
        Py_DECREF(&DecoderType);
        Py_DECREF(m);
        return NULL;
    }
    /* for _cwalk's replay loop: calls without Python's calling convention (each capsule
     * named mdshell.wire._cdecode.<its attribute>) */
    static const struct { const char *attribute, *name; void *fn; } api[] = {
        {"_check", "mdshell.wire._cdecode._check", (void *)check_c},
        {"_decode", "mdshell.wire._cdecode._decode", (void *)decode_c},
        {"_fields", "mdshell.wire._cdecode._fields", (void *)fields_c},
        {"_fields_index", "mdshell.wire._cdecode._fields_index", (void *)fields_index},
    };
    for (size_t i = 0; i < sizeof api / sizeof api[0]; i++) {
        PyObject *capsule = PyCapsule_New(api[i].fn, api[i].name, NULL);
        if (capsule == NULL || PyModule_AddObject(m, api[i].attribute, capsule) < 0) {
            Py_XDECREF(capsule);
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}
