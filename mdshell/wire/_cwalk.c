/* The walk of a clean log segment and the framing of its records, at C speed.
 *
 * Optional (setup.py; mdshell/wire/native.py says whether it is used), and the Python
 * code it stands for gives the same results (tests compare them on every fixture, the
 * corpus and damaged copies). Nothing here judges damage: when anything is not as a clean
 * batch has it, a function returns None and the Python code reads the bytes its own way,
 * so errors and warnings have one source.
 *
 *   scan(data, pos, limit)        the batches from pos on, their headers as columns, how
 *                                 many lead with a right CRC-32C and how many with offsets
 *                                 that follow on
 *   frame(buf, pos, end, count, base, base_ts, shape, control, batch_size)
 *                                 a batch's records framed: wire.framing.frame, the one
 *                                 definition (parse_record; run uses it too)
 *   run(...)                      Replayer.apply_run's loop: batches framed and decoded,
 *                                 then applied by the builder's apply_decoded
 *   crc32c(data, start, end)      CRC-32C of data[start:end] (for tests; SSE 4.2 where the
 *                                 CPU has it, crc32c_portable the tables' reference)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "_kept.h"

#define LOG_OVERHEAD 12     /* baseOffset + batchLength */
#define HEADER_SIZE 61
#define MIN_BATCH_LENGTH (HEADER_SIZE - LOG_OVERHEAD)
#define CRC_FROM 21         /* a batch's CRC covers its bytes from the attributes on */

/* ------------------------------------------------------------------ CRC-32C */

/* Slicing-by-8 tables of the reflected Castagnoli polynomial, made at import. */
static uint32_t crc_table[8][256];

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

/* CRC-32C of p[0:n] from the tables: the portable reference (crc32c_portable, for tests). */
static uint32_t crc32c_tables(const uint8_t *p, Py_ssize_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        /* bytes taken one by one: no alignment or byte-order assumption */
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24);
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^
            crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24] ^
            crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n-- > 0)
        c = crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#include <string.h>
/* The same with SSE 4.2's crc32 instruction (8 bytes a step), where the CPU has it. */
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(const uint8_t *p, Py_ssize_t n)
{
    uint64_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);  /* no alignment assumption; x86 is little-endian */
        c = _mm_crc32_u64(c, word);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n-- > 0)
        c32 = _mm_crc32_u8(c32, *p++);
    return c32 ^ 0xFFFFFFFFu;
}
#define HAVE_SSE42_CRC 1
#endif

static int crc_hardware = 0;  /* set at import: the CPU has the instruction */

/* CRC-32C of p[0:n] (Kafka's batch checksum): the instruction where there is one. */
static uint32_t crc32c(const uint8_t *p, Py_ssize_t n)
{
#ifdef HAVE_SSE42_CRC
    if (crc_hardware)
        return crc32c_sse42(p, n);
#endif
    return crc32c_tables(p, n);
}

/* ------------------------------------------------------------------ big-endian reads */

static inline int64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return (int64_t)v;
}

static inline int32_t be32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

static inline int16_t be16(const uint8_t *p)
{
    return (int16_t)((uint16_t)p[0] << 8 | p[1]);
}

/* ------------------------------------------------------------------ scan */

/* Columns of header fields, each a bytes object of native values (array.array reads them). */
enum { C_STARTS, C_BASE, C_LENGTH, C_EPOCH, C_CRC, C_ATTRS, C_DELTA, C_BASE_TS, C_MAX_TS,
       C_COUNT, C_MAGIC, N_COLUMNS };
static const Py_ssize_t col_width[N_COLUMNS] = {8, 8, 4, 4, 4, 2, 4, 8, 8, 4, 1};

static PyObject *scan(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, limit;
    if (!PyArg_ParseTuple(args, "y*nn", &view, &pos, &limit))
        return NULL;
    const uint8_t *data = view.buf;
    Py_ssize_t size = view.len;
    PyObject *result = NULL;
    PyObject *cols[N_COLUMNS] = {NULL};

    /* First pass: where the batches start (cleanwalk.batch_starts' rule). */
    Py_ssize_t most = limit < 0 ? size : limit, n = 0, p = pos;
    while (p >= 0 && p < size && n < most) {
        if (size - p < LOG_OVERHEAD)
            break;  /* a cut header */
        int32_t length = be32(data + p + 8);
        if (length < MIN_BATCH_LENGTH || (Py_ssize_t)length > size - p - LOG_OVERHEAD)
            break;
        p += LOG_OVERHEAD + length;
        n++;
    }
    if ((limit < 0 && p != size) || (limit >= 0 && n == 0)) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;  /* unclean: the walker reads it */
    }
    for (int c = 0; c < N_COLUMNS; c++) {
        cols[c] = PyBytes_FromStringAndSize(NULL, n * col_width[c]);
        if (cols[c] == NULL)
            goto done;
    }
    int64_t *starts = (int64_t *)PyBytes_AS_STRING(cols[C_STARTS]);
    int64_t *base = (int64_t *)PyBytes_AS_STRING(cols[C_BASE]);
    int32_t *len = (int32_t *)PyBytes_AS_STRING(cols[C_LENGTH]);
    int32_t *epoch = (int32_t *)PyBytes_AS_STRING(cols[C_EPOCH]);
    uint32_t *crc = (uint32_t *)PyBytes_AS_STRING(cols[C_CRC]);
    int16_t *attrs = (int16_t *)PyBytes_AS_STRING(cols[C_ATTRS]);
    int32_t *delta = (int32_t *)PyBytes_AS_STRING(cols[C_DELTA]);
    int64_t *base_ts = (int64_t *)PyBytes_AS_STRING(cols[C_BASE_TS]);
    int64_t *max_ts = (int64_t *)PyBytes_AS_STRING(cols[C_MAX_TS]);
    int32_t *count = (int32_t *)PyBytes_AS_STRING(cols[C_COUNT]);
    uint8_t *magic = (uint8_t *)PyBytes_AS_STRING(cols[C_MAGIC]);
    Py_ssize_t good = -1;  /* batches before the first wrong CRC */
    Py_ssize_t follows = -1;  /* batches before the first whose offsets do not follow on */

    /* Second pass: the columns, and the CRCs, without the GIL (data is a held buffer). */
    Py_BEGIN_ALLOW_THREADS
    p = pos;
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint8_t *h = data + p;
        starts[i] = p;
        base[i] = be64(h);
        len[i] = be32(h + 8);
        epoch[i] = be32(h + 12);
        magic[i] = h[16];
        crc[i] = (uint32_t)be32(h + 17);
        attrs[i] = be16(h + 21);
        delta[i] = be32(h + 23);
        base_ts[i] = be64(h + 27);
        max_ts[i] = be64(h + 35);
        count[i] = be32(h + 57);
        if (good < 0 && crc32c(h + CRC_FROM, LOG_OVERHEAD + len[i] - CRC_FROM) != crc[i])
            good = i;
        /* cleanwalk._follow_on's rule: no batch ends before it starts, and each starts at
         * the offset after the last of the one before */
        int64_t next;
        if (follows < 0 && (delta[i] < 0 || (i > 0 && (
                __builtin_add_overflow(base[i - 1], (int64_t)delta[i - 1] + 1, &next) ||
                next != base[i]))))
            follows = i;
        p += LOG_OVERHEAD + len[i];
    }
    Py_END_ALLOW_THREADS
    if (good < 0)
        good = n;
    if (follows < 0)
        follows = n;

    result = PyTuple_New(N_COLUMNS + 2);
    if (result == NULL)
        goto done;
    for (int c = 0; c < N_COLUMNS; c++) {
        PyTuple_SET_ITEM(result, c, cols[c]);
        cols[c] = NULL;
    }
    PyObject *g = PyLong_FromSsize_t(good), *f = PyLong_FromSsize_t(follows);
    if (g == NULL || f == NULL) {
        Py_XDECREF(g);
        Py_XDECREF(f);
        Py_CLEAR(result);
        goto done;
    }
    PyTuple_SET_ITEM(result, N_COLUMNS, g);
    PyTuple_SET_ITEM(result, N_COLUMNS + 1, f);
done:
    for (int c = 0; c < N_COLUMNS; c++)
        Py_XDECREF(cols[c]);
    PyBuffer_Release(&view);
    return result;
}

/* ------------------------------------------------------------------ frame */

/* The one definition of a batch's records (mdshell/wire/framing.py states the rules and is
 * the reference): every function here that reads records goes through parse_record. */

enum { SHAPE_METADATA = 0, SHAPE_FULL = 1 };

/* A zig-zag varint of at most `most` bytes (5: varint, 10: varlong) inside [*p, limit), as
 * Kafka reads it: the low 32 (64) bits of the value. 0 when longer or past `limit`. */
static inline int varint(const uint8_t *buf, Py_ssize_t *p, Py_ssize_t limit, int most,
                         int64_t *out)
{
    if (*p < limit && buf[*p] < 0x80) {  /* one byte: most of them */
        uint8_t b = buf[(*p)++];
        *out = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
        return 1;
    }
    uint64_t v = 0;
    for (int i = 0; i < most; i++) {
        if (*p >= limit)
            return 0;
        uint8_t b = buf[(*p)++];
        v |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            if (most == 5) {
                uint32_t u = (uint32_t)v;
                *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
            } else {
                *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
            }
            return 1;
        }
    }
    return 0;
}

/* One framed record: both shapes' fields (key/ver -1 when the metadata frame header is not
 * in its 3-byte form; kend/vend -1 for a null key/value). */
typedef struct {
    int64_t off, ts;
    int attrs;
    Py_ssize_t kpos, kend, vpos, vend, hpos, body;
    long key, ver;
} Rec;

/* A length-prefixed field (negative length: null) at *p inside [*p, rec_end). */
static inline int field_bytes(const uint8_t *buf, Py_ssize_t *p, Py_ssize_t rec_end,
                              Py_ssize_t *start, Py_ssize_t *stop)
{
    int64_t n;
    if (!varint(buf, p, rec_end, 5, &n))
        return 0;
    *start = *p;
    if (n < 0) {
        *stop = -1;
        return 1;
    }
    if (n > rec_end - *p)
        return 0;
    *p += (Py_ssize_t)n;
    *stop = *p;
    return 1;
}

/* The record whose length starts at *at inside [*at, end), at offset `off` (its batch's
 * base offset + its place), *at moved past it; `control`: of a control batch; `most`: the
 * longest record length taken (the batch's size on disk). 0 for anything the rules refuse
 * (framing.py's Python then reads it and says what). */
static int parse_record(const uint8_t *buf, Py_ssize_t *at, Py_ssize_t end, int64_t off,
                        int64_t base_ts, int control, int64_t most, Rec *r)
{
    Py_ssize_t p = *at;
    int64_t length, n;
    if (!varint(buf, &p, end, 5, &length) || length <= 0 || length > end - p || length > most)
        return 0;
    Py_ssize_t rec_end = p + (Py_ssize_t)length, last = rec_end - 1;
    if (buf[last] != 0 || p >= last)
        return 0;  /* the header count (the last byte) must be 0, the fields before it */
    r->attrs = buf[p++];
    if (!varint(buf, &p, last, 10, &n) || n != 0)
        return 0;  /* the timestamp delta must be 0 */
    if (!varint(buf, &p, last, 5, &n))
        return 0;  /* the offset delta: read, not used */
    if (!field_bytes(buf, &p, last, &r->kpos, &r->kend) ||
            !field_bytes(buf, &p, last, &r->vpos, &r->vend))
        return 0;
    if (control ? r->kend <= r->kpos : r->kend >= 0)
        return 0;  /* a control record has a key, a metadata record none */
    if (r->vend <= r->vpos)
        return 0;  /* a value of at least one byte */
    r->off = off;
    r->ts = base_ts;
    r->hpos = last;
    Py_ssize_t v = r->vpos;
    if (r->vend - v >= 3 && buf[v] == 1 && buf[v + 1] < 0x80 && buf[v + 2] < 0x80) {
        r->key = buf[v + 1];
        r->ver = buf[v + 2];
        r->body = v + 3;
    } else {
        r->key = r->ver = -1;
        r->body = v;
    }
    *at = rec_end;
    return 1;
}

/* Whether a batch of `count` records from `base` has offsets inside the 64-bit range (and
 * `count` is one the section of [pos, end) may hold). */
static inline int section_ok(Py_ssize_t pos, Py_ssize_t end, Py_ssize_t len, long long count,
                             int64_t base)
{
    int64_t last;
    return pos >= 0 && end <= len && pos <= end && count >= 0 && count <= end - pos &&
           (count == 0 || !__builtin_add_overflow(base, (int64_t)(count - 1), &last));
}

/* A tuple of `n` new references (stolen, also on failure); NULL when one is NULL or on no
 * memory. Py_BuildValue would parse a format string every time: a tenth of a snapshot's
 * decoding. */
static PyObject *tuple_of(Py_ssize_t n, PyObject **items)
{
    PyObject *t = NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (items[i] == NULL)
            goto fail;
    if ((t = PyTuple_New(n)) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(t, i, items[i]);
    return t;
fail:
    for (Py_ssize_t i = 0; i < n; i++)
        Py_XDECREF(items[i]);
    return NULL;
}

/* The tuple of a record in `shape` (framing.py); NULL on no memory. */
static PyObject *record_tuple(int shape, const Rec *r)
{
    if (shape == SHAPE_FULL) {
        PyObject *items[8] = {PyLong_FromLongLong(r->off), PyLong_FromLongLong(r->ts),
                              PyLong_FromLong(r->attrs), PyLong_FromSsize_t(r->kpos),
                              PyLong_FromSsize_t(r->kend), PyLong_FromSsize_t(r->vpos),
                              PyLong_FromSsize_t(r->vend), PyLong_FromSsize_t(r->hpos)};
        return tuple_of(8, items);
    }
    PyObject *items[6] = {PyLong_FromLongLong(r->off), PyLong_FromSsize_t(r->vpos),
                          PyLong_FromSsize_t(r->vend), PyLong_FromLong(r->key),
                          PyLong_FromLong(r->ver), PyLong_FromSsize_t(r->body)};
    return tuple_of(6, items);
}

/* The records of buf[pos:end]: a list of tuples, None when anything is refused (or an
 * argument is out of range), NULL on no memory. */
static PyObject *frame_records(const uint8_t *buf, Py_ssize_t len, Py_ssize_t pos,
                               Py_ssize_t end, Py_ssize_t count, int64_t base, int64_t base_ts,
                               int shape, int control, int64_t most)
{
    PyObject *out = NULL;
    if (!section_ok(pos, end, len, count, base))
        goto give_up;
    out = PyList_New(count);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        Rec r;
        if (!parse_record(buf, &pos, end, base + i, base_ts, control, most, &r))
            goto give_up;
        PyObject *t = record_tuple(shape, &r);
        if (t == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, t);
    }
    return out;
give_up:
    Py_XDECREF(out);
    Py_RETURN_NONE;
}

/* frame(buf, pos, end, count, base, base_ts, shape, control, batch_size): framing.frame;
 * called once a batch, so its arguments are taken without PyArg_ParseTuple's format
 * parsing. */
static PyObject *frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError,
                        "frame(buf, pos, end, count, base, base_ts, shape, control, batch_size)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    Py_ssize_t count = PyLong_AsSsize_t(args[3]);
    long long base = PyLong_AsLongLong(args[4]), base_ts = PyLong_AsLongLong(args[5]);
    long shape = PyLong_AsLong(args[6]);
    long long most = PyLong_AsLongLong(args[8]);
    int control = PyObject_IsTrue(args[7]);
    if (control < 0)
        return NULL;
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return NULL;  /* not integers: a caller's mistake */
        PyErr_Clear();
        Py_RETURN_NONE;  /* out of range: the Python reference reads it */
    }
    if (shape != SHAPE_METADATA && shape != SHAPE_FULL) {
        PyErr_SetString(PyExc_ValueError, "unknown shape");
        return NULL;
    }
    if (PyBytes_CheckExact(args[0]))
        return frame_records((const uint8_t *)PyBytes_AS_STRING(args[0]),
                             PyBytes_GET_SIZE(args[0]), pos, end, count, base, base_ts,
                             (int)shape, control, most);
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *out = frame_records(view.buf, view.len, pos, end, count, base, base_ts,
                                  (int)shape, control, most);
    PyBuffer_Release(&view);
    return out;
}

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

/* ------------------------------------------------------------------ run */

/* Attribute names run() sets and reads, interned at import. */
static PyObject *s_txn, *s_journal, *s_offset, *s_epoch, *s_time_ms, *s_at;

/* Whether the builder is outside a metadata transaction (-1: error). */
static int no_txn(PyObject *b)
{
    PyObject *txn = attr(b, s_txn);
    if (txn == NULL)
        return -1;
    int none = txn == Py_None;
    Py_DECREF(txn);
    return none;
}

/* prov.offset, prov.epoch, prov.time_ms = offset, epoch, time_ms (``offset`` is stolen). */
static int set_prov(PyObject *prov, PyObject *offset, PyObject *epoch, PyObject *time_ms)
{
    if (offset == NULL)
        return -1;
    int bad = PyObject_SetAttr(prov, s_offset, offset) < 0 ||
              PyObject_SetAttr(prov, s_epoch, epoch) < 0 ||
              PyObject_SetAttr(prov, s_time_ms, time_ms) < 0;
    Py_DECREF(offset);
    return bad ? -1 : 0;
}

/* _cdecode's check mode without Python's calling convention (its capsule, taken at
 * import; NULL when _cdecode is not built): -1 for a decoder that is not a compiled one. */
typedef int (*CheckFn)(PyObject *, const unsigned char *, Py_ssize_t, Py_ssize_t);
static CheckFn check = NULL;
/* _cdecode's decode_c: a Decoder's dict of buf[pos:end] when it decodes exactly, else NULL */
typedef PyObject *(*DecodeFn)(PyObject *, const unsigned char *, Py_ssize_t, Py_ssize_t);
static DecodeFn decode_c = NULL;
/* _cdecode's fields mode: a record's field values without the dict, and where a field
 * comes among them */
typedef int (*FieldsFn)(PyObject *, const unsigned char *, Py_ssize_t, Py_ssize_t,
                        PyObject **, Py_ssize_t);
typedef Py_ssize_t (*FieldsIndexFn)(PyObject *, PyObject *, Py_ssize_t *);
static FieldsFn fields_c = NULL;
static FieldsIndexFn fields_index = NULL;

/* The decoder of (key, ver): decoders[key << 7 | ver], asked of decoder_fn when missing.
 * New reference; Py_None for a kind this mdshell does not know; NULL on error. */
static PyObject *decoder_of(PyObject *decoders, PyObject *decoder_fn, long key, long ver)
{
    PyObject *k = PyLong_FromLong(key << 7 | ver);
    if (k == NULL)
        return NULL;
    PyObject *dec = PyDict_GetItemWithError(decoders, k);  /* borrowed */
    Py_DECREF(k);
    if (dec != NULL) {
        Py_INCREF(dec);
        return dec;
    }
    if (PyErr_Occurred())
        return NULL;
    return PyObject_CallFunction(decoder_fn, "ll", key, ver);
}

/* The decoded records of one batch's framed records (decoding.decode_records, for the
 * records in [lo, hi]): a new list, *last the last offset in range (-1: none). Py_None when
 * a record needs the Python reference (an unknown kind, a long frame header, bytes a
 * decoder refuses: it says what), NULL on error. */
static PyObject *decode_batch(PyObject *data, const Rec *recs, Py_ssize_t n, int64_t lo,
                              int64_t hi, PyObject *decoders, PyObject *decoder_fn, int lazy,
                              long noop_key, long partition_key, int64_t *last)
{
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    *last = -1;
    PyObject *dec = NULL;  /* the decoder of the kind before (records of a kind come in runs) */
    long dec_key = -1, dec_ver = -1;
    for (Py_ssize_t j = 0; j < n; j++) {
        const Rec *r = &recs[j];
        if (r->off < lo)
            continue;
        if (r->off > hi)
            break;
        *last = r->off;
        if (r->key == noop_key)
            continue;
        PyObject *value = NULL;
        if (r->key < 0)
            goto python;  /* the frame header's long form */
        if (dec == NULL || r->key != dec_key || r->ver != dec_ver) {
            Py_XDECREF(dec);
            dec = decoder_of(decoders, decoder_fn, r->key, r->ver);
            if (dec == NULL)
                goto fail;
            dec_key = r->key;
            dec_ver = r->ver;
        }
        if (dec == Py_None)
            goto python;  /* an unknown kind: kept raw by the reference */
        PyObject *args[4] = {data, PyLong_FromSsize_t(r->body), PyLong_FromSsize_t(r->vend),
                             Py_True};
        if (args[1] == NULL || args[2] == NULL) {
            Py_XDECREF(args[1]);
            Py_XDECREF(args[2]);
            goto fail;
        }
        if (lazy && r->key == partition_key && r->ver <= 2) {
            int clean = check == NULL ? -1 :
                check(dec, (const unsigned char *)PyBytes_AS_STRING(data), r->body, r->vend);
            if (clean < 0) {  /* not a compiled decoder: its own check mode */
                PyObject *ok = PyObject_Vectorcall(dec, args, 4, NULL);
                if (ok == NULL) {
                    Py_DECREF(args[1]);
                    Py_DECREF(args[2]);
                    goto fail;
                }
                clean = ok == Py_True;
                Py_DECREF(ok);
            }
            if (clean) {
                Py_INCREF(data);
                Py_INCREF(args[1]);
                Py_INCREF(args[2]);
                PyObject *items[4] = {data, args[1], args[2], PyLong_FromLong(r->ver)};
                value = tuple_of(4, items);
            }
        }
        if (value == NULL && !PyErr_Occurred()) {
            PyObject *res = PyObject_Vectorcall(dec, args, 3, NULL);
            if (res == NULL) {
                if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
                    Py_DECREF(args[1]);
                    Py_DECREF(args[2]);
                    goto fail;
                }
                PyErr_Clear();
            } else {
                Py_ssize_t got = -1;
                if (PyTuple_Check(res) && PyTuple_GET_SIZE(res) == 2 &&
                        PyDict_Check(PyTuple_GET_ITEM(res, 0)))
                    got = PyLong_AsSsize_t(PyTuple_GET_ITEM(res, 1));
                if (PyErr_Occurred())
                    PyErr_Clear();
                if (got == r->vend) {
                    value = PyTuple_GET_ITEM(res, 0);
                    Py_INCREF(value);
                }
                Py_DECREF(res);
            }
        }
        Py_DECREF(args[1]);
        Py_DECREF(args[2]);
        if (value == NULL) {
            if (PyErr_Occurred())
                goto fail;
            goto python;  /* bytes the decoder refuses: the reference says what */
        }
        PyObject *items[5] = {PyLong_FromLongLong(r->off), PyLong_FromLong(r->key),
                              PyLong_FromLong(r->ver), value, PyLong_FromSsize_t(r->vpos)};
        PyObject *t = tuple_of(5, items);
        if (t == NULL)
            goto fail;
        int bad = PyList_Append(out, t);
        Py_DECREF(t);
        if (bad < 0)
            goto fail;
    }
    Py_XDECREF(dec);
    return out;
python:
    Py_XDECREF(dec);
    Py_DECREF(out);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(dec);
    Py_DECREF(out);
    return NULL;
}

/* Frame the `count` records of data[pos:end] into a buffer of Recs (grown as needed);
 * 1 when they frame, 0 when the reference must read them (it says what), -1 no memory. */
static int frame_into(const uint8_t *buf, Py_ssize_t size, Py_ssize_t at, Py_ssize_t end,
                      long long count, int64_t base, int64_t base_ts, int64_t most, Rec **recs,
                      Py_ssize_t *held)
{
    if (!section_ok(at, end, size, count, base))
        return 0;
    if (count > *held) {
        Rec *more = PyMem_Realloc(*recs, (size_t)count * sizeof(Rec));
        if (more == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        *recs = more;
        *held = (Py_ssize_t)count;
    }
    Py_ssize_t got = 0;
    while (got < count && parse_record(buf, &at, end, base + got, base_ts, 0, most,
                                       &(*recs)[got]))
        got++;
    return got == count;
}

/* decode(data, pos, end, count, base, base_ts, lo, hi, batch_size, ctx) -> (decoded, last)
 * or None
 *
 * decoding.frame_and_decode for bytes data: the records of data[pos:end] framed by
 * parse_record and decoded as decoding.decode_records decodes them (lo < 0, hi None: no
 * bound). ctx: (decoders, decoder_fn, lazy, noop_key, partition_key). None when the
 * reference must read them (it decodes them, or says what is wrong). */
static PyObject *decode(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 10 || !PyBytes_CheckExact(args[0]) || !PyTuple_Check(args[9]) ||
            PyTuple_GET_SIZE(args[9]) != 5)
        Py_RETURN_NONE;
    PyObject *data = args[0], *ctx = args[9];
    PyObject *decoders = PyTuple_GET_ITEM(ctx, 0), *decoder_fn = PyTuple_GET_ITEM(ctx, 1);
    if (!PyDict_Check(decoders))
        Py_RETURN_NONE;
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    long long count = PyLong_AsLongLong(args[3]);
    long long base = PyLong_AsLongLong(args[4]), base_ts = PyLong_AsLongLong(args[5]);
    long long lo = PyLong_AsLongLong(args[6]);
    long long hi = args[7] == Py_None ? INT64_MAX : PyLong_AsLongLong(args[7]);
    long long most = PyLong_AsLongLong(args[8]);
    int lazy = PyObject_IsTrue(PyTuple_GET_ITEM(ctx, 2));
    long noop_key = PyLong_AsLong(PyTuple_GET_ITEM(ctx, 3));
    long partition_key = PyLong_AsLong(PyTuple_GET_ITEM(ctx, 4));
    if (lazy < 0 || PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Rec *recs = NULL;
    Py_ssize_t held = 0;
    int framed = frame_into((const uint8_t *)PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data),
                            pos, end, count, base, base_ts, most, &recs, &held);
    if (framed <= 0) {
        PyMem_Free(recs);
        if (framed < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    int64_t last;
    PyObject *decoded = decode_batch(data, recs, (Py_ssize_t)count, lo < 0 ? INT64_MIN : lo,
                                     hi, decoders, decoder_fn, lazy, noop_key, partition_key,
                                     &last);
    PyMem_Free(recs);
    if (decoded == NULL || decoded == Py_None)
        return decoded;
    return Py_BuildValue("(NL)", decoded, (long long)last);
}

/* 1 when every record of recs[0:n] is one the reference would decode without a word (a
 * known kind, its bytes decoding cleanly by its decoder's check mode, NoOps aside), 0 when
 * the reference must look (an unknown kind, a long frame header, a record that is not
 * clean: it may be damage), -1 on error. */
typedef struct {
    PyObject *dec;  /* the last decoder looked up (a new reference), and its kind */
    long key, ver;
} DecoderCache;

static int records_clean(PyObject *data, const Rec *recs, Py_ssize_t n, PyObject *decoders,
                         PyObject *decoder_fn, long noop_key, DecoderCache *cache)
{
    PyObject *dec = cache->dec;
    long dec_key = cache->key, dec_ver = cache->ver;
    int ok = 1;
    for (Py_ssize_t j = 0; j < n && ok; j++) {
        const Rec *r = &recs[j];
        if (r->key == noop_key)
            continue;
        if (r->key < 0) {
            ok = 0;
            break;
        }
        if (dec == NULL || r->key != dec_key || r->ver != dec_ver) {
            Py_XDECREF(dec);
            dec = decoder_of(decoders, decoder_fn, r->key, r->ver);
            if (dec == NULL) {
                cache->dec = NULL;
                return -1;
            }
            dec_key = r->key;
            dec_ver = r->ver;
        }
        if (dec == Py_None || check == NULL) {
            ok = 0;
            break;
        }
        int clean = check(dec, (const unsigned char *)PyBytes_AS_STRING(data), r->body, r->vend);
        ok = clean == 1;
    }
    cache->dec = dec;
    cache->key = dec_key;
    cache->ver = dec_ver;
    return ok;
}

/* check_section(data, pos, end, count, base, base_ts, batch_size, ctx) -> bool
 *
 * check's test for one records section data[pos:end] (uncompressed, of a metadata batch):
 * True when its records frame and all decode cleanly, False when the reference must read
 * it (decoding.verify). ctx: (decoders, decoder_fn, noop_key). */
static PyObject *check_section(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8 || !PyBytes_CheckExact(args[0]) || !PyTuple_Check(args[7]) ||
            PyTuple_GET_SIZE(args[7]) != 3)
        Py_RETURN_FALSE;
    PyObject *data = args[0], *ctx = args[7];
    PyObject *decoders = PyTuple_GET_ITEM(ctx, 0), *decoder_fn = PyTuple_GET_ITEM(ctx, 1);
    long noop_key = PyLong_AsLong(PyTuple_GET_ITEM(ctx, 2));
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    long long count = PyLong_AsLongLong(args[3]);
    long long base = PyLong_AsLongLong(args[4]), base_ts = PyLong_AsLongLong(args[5]);
    long long most = PyLong_AsLongLong(args[6]);
    if (PyErr_Occurred() || !PyDict_Check(decoders)) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    Rec *recs = NULL;
    Py_ssize_t held = 0;
    int framed = frame_into((const uint8_t *)PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data),
                            pos, end, count, base, base_ts, most, &recs, &held);
    int clean = framed;
    if (framed > 0) {
        DecoderCache cache = {NULL, -1, -1};
        clean = records_clean(data, recs, (Py_ssize_t)count, decoders, decoder_fn, noop_key,
                              &cache);
        Py_XDECREF(cache.dec);
    }
    PyMem_Free(recs);
    if (clean < 0)
        return NULL;
    return PyBool_FromLong(clean);
}

/* check(data, heads, lo, hi, ctx) -> i
 *
 * decoding.check_section for the batches lo..hi-1 of a clean stretch of data, their header
 * fields in heads: (starts, lengths, counts, base offsets, base timestamps, attributes) as
 * the fast walk's native arrays (int64, int32, int32, int64, int64, int16): the first of
 * them the reference must look at (compressed or control, records that do not frame, or one
 * that is not clean), hi when none. ctx: (decoders, decoder_fn, noop_key). */
static PyObject *check_batches(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    static const Py_ssize_t width[6] = {8, 4, 4, 8, 8, 2};
    if (nargs != 5 || !PyBytes_CheckExact(args[0]) || !PyTuple_Check(args[1]) ||
            PyTuple_GET_SIZE(args[1]) != 6 || !PyTuple_Check(args[4]) ||
            PyTuple_GET_SIZE(args[4]) != 3) {
        PyErr_SetString(PyExc_TypeError, "check(data, heads, lo, hi, ctx)");
        return NULL;
    }
    PyObject *data = args[0], *ctx = args[4];
    PyObject *decoders = PyTuple_GET_ITEM(ctx, 0), *decoder_fn = PyTuple_GET_ITEM(ctx, 1);
    long noop_key = PyLong_AsLong(PyTuple_GET_ITEM(ctx, 2));
    Py_ssize_t lo = PyLong_AsSsize_t(args[2]), hi = PyLong_AsSsize_t(args[3]);
    if (PyErr_Occurred())
        return NULL;
    if (!PyDict_Check(decoders)) {
        PyErr_SetString(PyExc_TypeError, "decoders is a dict");
        return NULL;
    }
    Py_buffer cols[6];
    int got = 0;
    for (; got < 6; got++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(args[1], got), &cols[got], PyBUF_SIMPLE) < 0)
            break;
        if (cols[got].len % width[got] || (got && cols[got].len / width[got] !=
                                           cols[0].len / width[0])) {
            PyBuffer_Release(&cols[got]);
            PyErr_SetString(PyExc_ValueError, "header columns of other sizes");
            break;
        }
    }
    PyObject *result = NULL;
    if (got < 6)
        goto done;
    const int64_t *starts = cols[0].buf, *base = cols[3].buf, *base_ts = cols[4].buf;
    const int32_t *length = cols[1].buf, *count = cols[2].buf;
    const int16_t *attrs = cols[5].buf;
    Py_ssize_t n = cols[0].len / 8;
    if (lo < 0 || hi > n || lo > hi) {
        PyErr_SetString(PyExc_ValueError, "batches outside the columns");
        goto done;
    }
    const uint8_t *buf = (const uint8_t *)PyBytes_AS_STRING(data);
    Py_ssize_t size = PyBytes_GET_SIZE(data), held = 0, k = lo;
    Rec *recs = NULL;
    DecoderCache cache = {NULL, -1, -1};
    int bad = 0;
    for (; k < hi; k++) {
        if (attrs[k] & 0x27)
            break;
        int framed = frame_into(buf, size, (Py_ssize_t)starts[k] + HEADER_SIZE,
                                (Py_ssize_t)(starts[k] + LOG_OVERHEAD + length[k]), count[k],
                                base[k], base_ts[k], LOG_OVERHEAD + (int64_t)length[k], &recs,
                                &held);
        if (framed < 0) {
            bad = 1;
            break;
        }
        if (!framed)
            break;
        int clean = records_clean(data, recs, (Py_ssize_t)count[k], decoders, decoder_fn,
                                  noop_key, &cache);
        if (clean < 0) {
            bad = 1;
            break;
        }
        if (!clean)
            break;
    }
    PyMem_Free(recs);
    Py_XDECREF(cache.dec);
    if (!bad)
        result = PyLong_FromSsize_t(k);
done:
    for (int c = 0; c < got; c++)
        PyBuffer_Release(&cols[c]);
    return result;
}

/* run(data, cols, plan, k, upto, skip_below, ctx) -> (k, since, applied, why)
 *
 * Replayer.apply_run's loop (image/history.py is the reference, and says what it does and
 * why) for bytes data: each batch of plan[k:] framed by parse_record, every record decoded
 * as decoding.decode_records does, then applied as the builder's apply_decoded applies them
 * (its reference): its plain branch here (a decoded record outside a transaction, not a
 * transaction marker, given to its handler; ``applied`` counts them, for
 * builder.records_applied), apply_decoded itself for the rest of the batch from the first
 * other record. ctx: (builder, provenance, decoders, decoder_fn, apply, lazy, every, since,
 * noop_key, partition_key, replayer, handlers, unknown_key, unknown_tags).
 * It stops at the first batch it leaves to Python (why 0: k is its index, the NoOps before
 * it passed over already, nothing of it applied; k == len(plan): none left): a control or
 * compressed batch, or one whose records the reference must read (it says what is wrong), or
 * after a batch that makes a history mark due (why 1: k is that batch's index). None for
 * arguments it does not take (the Python loop runs). An exception of applying propagates,
 * with replayer.at naming its batch and (since, applied) left in replayer._run_state. */
/* The run's header columns, read in place from the fast walk's arrays. */
typedef struct {
    Py_buffer view[9];
    int held;
    const int64_t *starts, *base, *max_ts, *base_ts;
    const int32_t *length, *delta, *epoch, *count;
    const int16_t *attrs;
    Py_ssize_t n;
} Columns;

static void columns_release(Columns *c)
{
    for (int i = 0; i < c->held; i++)
        PyBuffer_Release(&c->view[i]);
    c->held = 0;
}

/* The columns of `heads` (starts q, base q, length i, last_delta i, epoch i, max_ts q,
 * attrs h, count i, base_ts q); 0 when they are not that (nothing held then). */
static int columns_take(Columns *c, PyObject *heads)
{
    static const Py_ssize_t width[9] = {8, 8, 4, 4, 4, 8, 2, 4, 8};
    c->held = 0;
    if (!PyTuple_Check(heads) || PyTuple_GET_SIZE(heads) != 9)
        return 0;
    for (int i = 0; i < 9; i++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(heads, i), &c->view[i], PyBUF_FORMAT) < 0) {
            PyErr_Clear();
            columns_release(c);
            return 0;
        }
        c->held++;
        Py_buffer *v = &c->view[i];
        if (v->itemsize != width[i] || v->len / width[i] != c->view[0].len / 8) {
            columns_release(c);
            return 0;
        }
    }
    c->starts = c->view[0].buf;
    c->base = c->view[1].buf;
    c->length = c->view[2].buf;
    c->delta = c->view[3].buf;
    c->epoch = c->view[4].buf;
    c->max_ts = c->view[5].buf;
    c->attrs = c->view[6].buf;
    c->count = c->view[7].buf;
    c->base_ts = c->view[8].buf;
    c->n = c->view[0].len / 8;
    return 1;
}

/* The provenance the run has moved to and not written yet (prov's three attributes are
 * written when Python may read them: before apply_decoded, and when the run returns). */
typedef struct {
    int pending;
    int64_t offset, epoch, time_ms;
} Prov;

static int prov_flush(PyObject *prov, Prov *p)
{
    if (!p->pending)
        return 0;
    p->pending = 0;
    PyObject *e = PyLong_FromLongLong(p->epoch), *t = PyLong_FromLongLong(p->time_ms);
    int bad = e == NULL || t == NULL ||
              set_prov(prov, PyLong_FromLongLong(p->offset), e, t) < 0;
    Py_XDECREF(e);
    Py_XDECREF(t);
    return bad ? -1 : 0;
}

/* Whether run reads a record kind from its bytes (a partition change, a broker's change, a
 * config set, a re-registration): asked once a run, at its first record of the kind. Bit v of `vers` is set
 * when the kind's handler is its compiled one and its decoder of version v a compiled one,
 * as the reader stands for both (a test that puts the Python reference or a decoder of its
 * own there has them called as for any other record); `spec`: the handler's own (a new
 * reference). */
typedef struct {
    int asked;
    unsigned vers;
    PyObject *spec;
} Fast;
enum { FAST_CHANGE, FAST_BROKER_CHANGE, FAST_CONFIG, FAST_REGISTER, FAST_KINDS };

/* The decoders a run has looked up, by kind and version: a few (a log's one-record
 * batches hold a handful of kinds), looked through in order, new references; and what it
 * found out about the kinds it reads from their bytes. */
/* Whether run reads records of a kind and version by its decoder's fields mode into its
 * handler's core (apply_fields): `state` 0 not asked yet, 1 yes, -1 no (its handler is not
 * a compiled put, drop, scalar or client quota one, or the decoder not a compiled one);
 * then the handler's kind and spec (a new reference), how many values the decoder gives,
 * and where each field the core takes comes among them. */
#define MAX_FIELDS 32  /* values of a record read so, at most (Kafka's have < 15) */
typedef struct {
    int state, kind, nwanted;
    PyObject *spec;
    Py_ssize_t total;
    int8_t at[18];
} ByFields;

#define CACHED 16
typedef struct {
    int n;
    long key[CACHED], ver[CACHED];
    PyObject *dec[CACHED];
    ByFields byf[CACHED];
    Fast fast[FAST_KINDS];
} Decoders;

static void decoders_release(Decoders *ds)
{
    for (int i = 0; i < ds->n; i++) {
        Py_DECREF(ds->dec[i]);
        Py_CLEAR(ds->byf[i].spec);
    }
    ds->n = 0;
    for (int i = 0; i < FAST_KINDS; i++)
        Py_CLEAR(ds->fast[i].spec);
}

/* What a run hands apply_one: the builder, the handler table and decoders, how unknown
 * tagged fields are said, and the decoders found so far. */
typedef struct {
    PyObject *b, *handlers, *decoders, *decoder_fn, *unknown_key, *unknown_tags;
    Decoders *found;
} Plain;

/* The decoder of (key, ver), a new reference (decoder_of's, remembered in `found`);
 * *slot its place there (-1: not remembered, the table being full). */
static PyObject *found_decoder(const Plain *pl, long key, long ver, int *slot)
{
    Decoders *ds = pl->found;
    for (int i = 0; i < ds->n; i++)
        if (ds->key[i] == key && ds->ver[i] == ver) {
            *slot = i;
            return Py_NewRef(ds->dec[i]);
        }
    *slot = -1;
    PyObject *dec = decoder_of(pl->decoders, pl->decoder_fn, key, ver);
    if (dec != NULL && ds->n < CACHED) {
        ds->key[ds->n] = key;
        ds->ver[ds->n] = ver;
        ds->byf[ds->n] = (ByFields){0};
        *slot = ds->n;
        ds->dec[ds->n++] = Py_NewRef(dec);
    }
    return dec;
}

/* A decoded record `value` of kind `key` and version `ver` applied as apply_decoded's plain
 * branch applies it: its unknown tagged fields said, then its handler called with `off`.
 * 1 when its handler was called, 0 when its kind has none (no effect: a NoOp read in the
 * frame's long form), -1 on error; *reached is 1 from the moment the handler is called
 * (the record counts as applied from then, as the reference counts it). */
static int apply_value(const Plain *pl, PyObject *key, PyObject *ver, PyObject *value,
                       PyObject *off, int *reached)
{
    *reached = 0;
    PyObject *handler = PyDict_GetItemWithError(pl->handlers, key);
    if (handler == NULL || handler == Py_None)
        return PyErr_Occurred() ? -1 : 0;
    int tagged = PyDict_Contains(value, pl->unknown_key);
    if (tagged < 0)
        return -1;
    if (tagged) {
        PyObject *tags = PyDict_GetItemWithError(value, pl->unknown_key);
        PyObject *targs[4] = {key, ver, tags, off};
        PyObject *out = tags == NULL ? NULL : PyObject_Vectorcall(pl->unknown_tags, targs, 4,
                                                                  NULL);
        if (out == NULL)
            return -1;
        Py_DECREF(out);
    }
    *reached = 1;
    PyObject *hargs[3] = {pl->b, value, off};
    PyObject *out = PyObject_Vectorcall(handler, hargs, 3, NULL);
    if (out == NULL)
        return -1;
    Py_DECREF(out);
    return 1;
}

/* The record `r` of a one-record batch outside a metadata transaction applied as run's
 * plain branch applies a decoded record (its unknown tagged fields said, then its
 * handler), decoded by its compiled decoder without the list and tuples decode_batch
 * makes. 1 when done, 0 when decode_batch must take the batch (an unknown kind, no compiled
 * decoder, bytes it does not decode exactly: the decoder's fallback says what), -1 on error;
 * *counted as apply_value's *reached. */
static int apply_fields(const Plain *pl, ByFields *bf, PyObject *dec, const uint8_t *buf,
                        const Rec *r, int *counted);
static int apply_direct(const Plain *pl, PyObject *data, const Rec *recs, Py_ssize_t n,
                        int64_t lo, int64_t hi, int lazy, long noop_key, long partition_key,
                        long long *applied, int64_t *last);
static int apply_one(const Plain *pl, const uint8_t *buf, const Rec *r, int *counted)
{
    *counted = 0;
    if (decode_c == NULL || r->key < 0)
        return 0;
    int slot;
    PyObject *dec = found_decoder(pl, r->key, r->ver, &slot);
    if (dec == NULL)
        return -1;
    if (dec != Py_None && slot >= 0) {  /* its fields straight into its handler's core */
        int got = apply_fields(pl, &pl->found->byf[slot], dec, buf, r, counted);
        if (got != 0) {
            Py_DECREF(dec);
            return got;
        }
    }
    PyObject *value = dec == Py_None ? NULL : decode_c(dec, buf, r->body, r->vend);
    Py_DECREF(dec);  /* None: an unknown kind, kept raw by the reference */
    if (value == NULL)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *key = PyLong_FromLong(r->key), *ver = PyLong_FromLong(r->ver);
    PyObject *off = PyLong_FromLongLong(r->off);
    int done = key == NULL || ver == NULL || off == NULL ? -1 :
               apply_value(pl, key, ver, value, off, counted);
    Py_XDECREF(off);
    Py_XDECREF(ver);
    Py_XDECREF(key);
    Py_DECREF(value);
    return done < 0 ? -1 : 1;
}

#define PARTITION_CHANGE 5  /* PartitionChangeRecord's api key */
static int apply_bytes(const Plain *pl, const uint8_t *buf, const Rec *r, int *reached);

/* apply_decoded's branch for a batch inside a metadata transaction, when every record of
 * `decoded` (entries (offset, key, version, value, value position)) is one the transaction
 * keeps as it is until its end (txn_span's rule: a dict or an undecoded partition, not a
 * marker): b.txn extended by them, b._pos the last one's value position. 1 when done, 0
 * when apply_decoded must take the batch (nothing done), -1 on error. */
static int txn_keep(PyObject *b, PyObject *decoded)
{
    static PyObject *s_pos = NULL;
    if (s_pos == NULL && (s_pos = PyUnicode_InternFromString("_pos")) == NULL)
        return -1;
    Py_ssize_t n = PyList_GET_SIZE(decoded);
    if (n == 0)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(decoded, i);
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 5)
            return 0;
        PyObject *value = PyTuple_GET_ITEM(t, 3);
        long key = PyLong_AsLong(PyTuple_GET_ITEM(t, 1));
        if (key == -1 && PyErr_Occurred())
            return -1;
        if ((!PyDict_CheckExact(value) && !PyTuple_CheckExact(value)) || (key >= 23 && key <= 25))
            return 0;
    }
    PyObject *txn = attr(b, s_txn);
    if (txn == NULL)
        return -1;
    int got = 0;
    if (PyList_CheckExact(txn)) {
        Py_ssize_t at = PyList_GET_SIZE(txn);
        got = PyList_SetSlice(txn, at, at, decoded) < 0 ||
              PyObject_SetAttr(b, s_pos, PyTuple_GET_ITEM(PyList_GET_ITEM(decoded, n - 1), 4))
              < 0 ? -1 : 1;
    }
    Py_DECREF(txn);
    return got;
}

static PyObject *run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7 || !PyBytes_CheckExact(args[0]) || !PyTuple_Check(args[6]) ||
        PyTuple_GET_SIZE(args[6]) != 14)
        Py_RETURN_NONE;
    PyObject *data = args[0], *ctx = args[6];
    PyObject *b = PyTuple_GET_ITEM(ctx, 0), *prov = PyTuple_GET_ITEM(ctx, 1);
    PyObject *decoders = PyTuple_GET_ITEM(ctx, 2), *decoder_fn = PyTuple_GET_ITEM(ctx, 3);
    PyObject *apply = PyTuple_GET_ITEM(ctx, 4), *replayer = PyTuple_GET_ITEM(ctx, 10);
    PyObject *handlers = PyTuple_GET_ITEM(ctx, 11), *unknown_key = PyTuple_GET_ITEM(ctx, 12);
    PyObject *unknown_tags = PyTuple_GET_ITEM(ctx, 13);
    if (!PyDict_Check(decoders) || !PyDict_Check(handlers))
        Py_RETURN_NONE;
    int lazy = PyObject_IsTrue(PyTuple_GET_ITEM(ctx, 5));
    Py_ssize_t k = PyLong_AsSsize_t(args[3]);
    int has_upto = args[4] != Py_None;
    long long upto = has_upto ? PyLong_AsLongLong(args[4]) : 0;
    long long skip_below = PyLong_AsLongLong(args[5]);
    long long every = PyLong_AsLongLong(PyTuple_GET_ITEM(ctx, 6));
    long long since = PyLong_AsLongLong(PyTuple_GET_ITEM(ctx, 7));
    long noop_key = PyLong_AsLong(PyTuple_GET_ITEM(ctx, 8));
    long partition_key = PyLong_AsLong(PyTuple_GET_ITEM(ctx, 9));
    if (lazy < 0 || PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Columns h;
    if (!columns_take(&h, args[1]))
        Py_RETURN_NONE;
    Py_buffer planv;
    if (PyObject_GetBuffer(args[2], &planv, PyBUF_FORMAT) < 0 || planv.itemsize != 8) {
        if (PyErr_Occurred())
            PyErr_Clear();
        else
            PyBuffer_Release(&planv);
        columns_release(&h);
        Py_RETURN_NONE;
    }
    const int64_t *plan = planv.buf;
    const uint8_t *buf = (const uint8_t *)PyBytes_AS_STRING(data);
    Py_ssize_t size = PyBytes_GET_SIZE(data), n = planv.len / 8;
    int64_t lo = skip_below >= 0 ? skip_below : INT64_MIN;
    int64_t hi = has_upto ? upto : INT64_MAX;
    Rec *recs = NULL;
    Py_ssize_t held = 0;  /* how many Recs `recs` has room for */
    Decoders found = {0};  /* apply_one's decoders */
    int why = 0;
    long long applied_here = 0;  /* records applied by the handler calls below */
    int64_t plan_at = -1;  /* after an error: the batch it happened in (replayer.at) */
    Prov pv = {0, 0, 0, 0};
    Py_ssize_t before = k > 0 && k <= n ? (Py_ssize_t)plan[k - 1] : -1;
    Plain plain = {b, handlers, decoders, decoder_fn, unknown_key, unknown_tags, &found};
    /* Whether the builder is outside a metadata transaction: read again after each call of
     * apply_decoded, the only code here that applies a transaction's markers (handlers
     * never do) */
    int free_of_txn = no_txn(b);
    if (free_of_txn < 0)
        goto fail;

    for (; k < n; k++) {
        Py_ssize_t i = (Py_ssize_t)plan[k];
        if (i < 0 || i >= h.n) {
            PyErr_SetString(PyExc_ValueError, "a batch of the plan outside the columns");
            goto fail;
        }
        if (i - before > 1 && free_of_txn) {  /* pass_noops: the run's last NoOp */
            Py_ssize_t j = i - 1;
            if (h.base[j] >= skip_below && (!has_upto || h.base[j] <= upto))
                pv = (Prov){1, h.base[j], h.epoch[j], h.max_ts[j]};
        }
        before = i;
        if (h.attrs[i] & 0x27)
            break;  /* compressed or control: Python's */
        int64_t b0 = h.base[i], end_off = h.base[i] + h.delta[i];
        int framed = frame_into(buf, size, (Py_ssize_t)h.starts[i] + HEADER_SIZE,
                                (Py_ssize_t)(h.starts[i] + LOG_OVERHEAD + h.length[i]),
                                h.count[i], b0, h.base_ts[i],
                                LOG_OVERHEAD + (int64_t)h.length[i], &recs, &held);
        if (framed < 0)
            goto fail;
        if (!framed)
            break;  /* the reference frames it, and says what */
        const Rec *r0 = &recs[0];
        if (free_of_txn && h.count[i] == 1 && r0->off >= lo && r0->off <= hi) {
            /* a one-record batch outside a transaction (most of a busy log's tail): a
             * partition change read from its bytes and applied by the handler's own code,
             * a record of another kind by its compiled decoder into its handler; either
             * may leave it to decode_batch below */
            int counted_one = 0, got = apply_bytes(&plain, buf, r0, &counted_one);
            if (!got && r0->key != noop_key && r0->key != partition_key &&
                    (r0->key < 23 || r0->key > 25))  /* not a transaction's marker */
                got = apply_one(&plain, buf, r0, &counted_one);
            if (got < 0) {
                applied_here += counted_one;  /* reached before it failed */
                goto fail;
            }
            if (got) {
                applied_here += counted_one;
                since += counted_one;
                pv = (Prov){1, !has_upto || upto >= end_off ? end_off : r0->off, h.epoch[i],
                            h.max_ts[i]};
                goto counted;
            }
        }
        int64_t last;
        if (free_of_txn) {  /* the batch's records applied one by one, if it takes them */
            long long reached = 0;
            int direct = apply_direct(&plain, data, recs, (Py_ssize_t)h.count[i], lo, hi, lazy,
                                      noop_key, partition_key, &reached, &last);
            applied_here += reached;
            if (direct < 0)
                goto fail;
            if (direct) {
                since += reached;
                if (last >= 0)  /* the provenance, as apply_decoded moves it */
                    pv = (Prov){1, !has_upto || upto >= end_off ? end_off : last, h.epoch[i],
                                h.max_ts[i]};
                goto counted;
            }
        }
        PyObject *decoded = decode_batch(data, recs, (Py_ssize_t)h.count[i], lo, hi, decoders,
                                         decoder_fn, lazy, noop_key, partition_key, &last);
        if (decoded == NULL)
            goto fail;
        if (decoded == Py_None) {
            Py_DECREF(decoded);
            break;  /* a record the reference decodes, or refuses */
        }
        /* apply_decoded's plain branch (a dict outside a transaction, not a transaction
         * marker: its handler), then apply_decoded itself for the rest of the batch */
        long long applied = 0;
        Py_ssize_t j = 0, nd = PyList_GET_SIZE(decoded);
        if (free_of_txn) {
            for (; j < nd; j++) {
                PyObject *t = PyList_GET_ITEM(decoded, j);
                PyObject *value = PyTuple_GET_ITEM(t, 3);
                if (!PyDict_CheckExact(value))
                    break;
                long key = PyLong_AsLong(PyTuple_GET_ITEM(t, 1));
                if (key == 23 || key == 24 || key == 25)
                    break;  /* Begin/End/AbortTransactionRecord: replay's own */
                int reached;
                int got = apply_value(&plain, PyTuple_GET_ITEM(t, 1), PyTuple_GET_ITEM(t, 2),
                                      value, PyTuple_GET_ITEM(t, 0), &reached);
                applied += reached;
                applied_here += reached;
                if (got < 0) {
                    Py_DECREF(decoded);
                    goto fail;
                }
            }
        }
        int kept = free_of_txn ? 0 : txn_keep(b, decoded);  /* inside a transaction */
        if (kept < 0) {
            Py_DECREF(decoded);
            goto fail;
        }
        if (kept) {
            Py_DECREF(decoded);
        } else if (j < nd || !free_of_txn) {
            if (prov_flush(prov, &pv) < 0) {
                Py_DECREF(decoded);
                goto fail;
            }
            PyObject *rest = PyList_GetSlice(decoded, j, nd);
            PyObject *call[6] = {rest, PyLong_FromLongLong(last), PyLong_FromLongLong(end_off),
                                 PyLong_FromLong(h.epoch[i]), PyLong_FromLongLong(h.max_ts[i]),
                                 has_upto ? args[4] : Py_None};
            PyObject *res = NULL;
            if (rest != NULL && call[1] != NULL && call[2] != NULL && call[3] != NULL &&
                    call[4] != NULL)
                res = PyObject_Vectorcall(apply, call, 6, NULL);
            Py_DECREF(decoded);
            for (int c = 0; c < 5; c++)
                Py_XDECREF(call[c]);
            if (res == NULL)
                goto fail;
            applied += PyLong_AsLongLong(res);
            Py_DECREF(res);
            if (PyErr_Occurred() || (free_of_txn = no_txn(b)) < 0)
                goto fail;
        } else {
            Py_DECREF(decoded);
            if (last >= 0)  /* the provenance, as apply_decoded moves it */
                pv = (Prov){1, !has_upto || upto >= end_off ? end_off : last, h.epoch[i],
                            h.max_ts[i]};
        }
        since += applied;
    counted:
        if (since >= every) {  /* a mark due, if journaled and outside a transaction */
            PyObject *journal = attr(b, s_journal);
            if (journal == NULL)
                goto fail;
            int journaled = journal != Py_None;
            Py_DECREF(journal);
            if (journaled && free_of_txn) {
                why = 1;
                break;
            }
        }
    }
    PyMem_Free(recs);
    PyBuffer_Release(&planv);
    columns_release(&h);
    decoders_release(&found);
    if (prov_flush(prov, &pv) < 0)
        goto state;
    return Py_BuildValue("(nLLi)", k, since, applied_here, why);
fail:
    plan_at = k < n ? plan[k] : -1;
    PyMem_Free(recs);
    PyBuffer_Release(&planv);
    columns_release(&h);
    decoders_release(&found);
state:
    {  /* what the caller reads after an error: the run's counts, the batch it was at */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *state = Py_BuildValue("(LL)", since, applied_here);
        if (state != NULL) {
            PyObject_SetAttrString(replayer, "_run_state", state);
            Py_DECREF(state);
        }
        PyObject *at = plan_at >= 0 ? PyLong_FromLongLong(plan_at) : NULL;
        if (at != NULL) {
            PyObject_SetAttr(replayer, s_at, at);
            Py_DECREF(at);
        }
        PyErr_Clear();
        PyErr_Restore(type, value, tb);
        return NULL;
    }
}

/* ------------------------------------------------------------------ partitions */

/* put_partitions(decoded, i, topic_fn, noted, unknown_fn) -> (next, stored)
 *
 * ImageBuilder._put_partitions (image/replay.py, the reference): the run of undecoded
 * PartitionRecords from decoded[i] on (entries (offset, key, version, (buf, body, end,
 * version), value_pos)) stored as they are in their topics' partition maps: topic_fn(topic
 * id) gives a writable topic (looked up once for consecutive partitions of one topic), None
 * for an unknown id (unknown_fn(lazy, offset) says so); noted (a list, or None) gets
 * (topic id, partition id, lazy) of each, the journal of history. Returns the index after
 * the run and how many were stored. */
/* Where a run of undecoded PartitionRecords is stored: the topic of the record before (its
 * partition map and id, new references; its id's 16 bytes), looked up once for consecutive
 * partitions of one topic. */
typedef struct {
    PyObject *parts, *topic_id;
    uint8_t tid[16];
} PutState;

static void put_state_release(PutState *st)
{
    Py_CLEAR(st->parts);
    Py_CLEAR(st->topic_id);
}

/* The undecoded PartitionRecord `lazy` ((buf, body, end, version), the record's bytes at
 * p = buf + body: partition id, topic id...) stored in its topic's partition map:
 * topic_fn(topic id) gives the writable topic (None: unknown, then unknown_fn(lazy, off)
 * says so); `noted` (a list, or None) gets (topic id, partition id, lazy), the journal of
 * history. 1 stored, 0 not (an unknown topic), -1 on error. */
static int put_lazy(PutState *st, PyObject *lazy, const uint8_t *p, PyObject *off,
                    PyObject *topic_fn, PyObject *unknown_fn, PyObject *noted)
{
    static PyObject *s_partitions = NULL, *s_topic_id = NULL;
    if (s_partitions == NULL && ((s_partitions = PyUnicode_InternFromString("partitions")) == NULL
                                 || (s_topic_id = PyUnicode_InternFromString("id")) == NULL))
        return -1;
    if (st->parts == NULL || memcmp(p + 4, st->tid, 16) != 0) {
        put_state_release(st);
        PyObject *tid = kept_id(p + 4);
        if (tid == NULL)
            return -1;
        PyObject *topic = PyObject_CallOneArg(topic_fn, tid);
        Py_DECREF(tid);
        if (topic == NULL)
            return -1;
        if (topic == Py_None) {  /* the reference says the id is unknown */
            Py_DECREF(topic);
            PyObject *out = PyObject_CallFunctionObjArgs(unknown_fn, lazy, off, NULL);
            Py_XDECREF(out);
            return out == NULL ? -1 : 0;
        }
        st->parts = attr(topic, s_partitions);
        st->topic_id = st->parts == NULL ? NULL : attr(topic, s_topic_id);
        Py_DECREF(topic);
        if (st->parts == NULL || st->topic_id == NULL || !PyDict_Check(st->parts)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "a topic's partitions are a dict");
            put_state_release(st);
            return -1;
        }
        memcpy(st->tid, p + 4, 16);
    }
    PyObject *pid = PyLong_FromLong((long)be32(p));
    if (pid == NULL)
        return -1;
    int bad = PyDict_SetItem(st->parts, pid, lazy) < 0;
    if (!bad && noted != Py_None)
        bad = PyList_Append(noted, st->topic_id) < 0 || PyList_Append(noted, pid) < 0 ||
              PyList_Append(noted, lazy) < 0;
    Py_DECREF(pid);
    return bad ? -1 : 1;
}

static PyObject *put_partitions(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyList_Check(args[0]) || (args[3] != Py_None && !PyList_Check(args[3]))) {
        PyErr_SetString(PyExc_TypeError, "put_partitions(decoded, i, topic_fn, noted, unknown_fn)");
        return NULL;
    }
    PyObject *decoded = args[0], *topic_fn = args[2], *noted = args[3], *unknown_fn = args[4];
    Py_ssize_t i = PyLong_AsSsize_t(args[1]), n = PyList_GET_SIZE(decoded), stored = 0;
    if (i < 0 && PyErr_Occurred())
        return NULL;
    PutState st = {NULL, NULL, {0}};
    for (; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(decoded, i);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 5)
            break;
        PyObject *lazy = PyTuple_GET_ITEM(t, 3);
        if (!PyTuple_CheckExact(lazy) || PyTuple_GET_SIZE(lazy) != 4 ||
                !PyBytes_CheckExact(PyTuple_GET_ITEM(lazy, 0)))
            break;
        PyObject *buf = PyTuple_GET_ITEM(lazy, 0);
        Py_ssize_t body = PyLong_AsSsize_t(PyTuple_GET_ITEM(lazy, 1));
        if (body < 0 || body > PyBytes_GET_SIZE(buf) - 20) {
            if (PyErr_Occurred())
                goto fail;
            break;  /* not a record this builder made: the reference reads it */
        }
        int got = put_lazy(&st, lazy, (const uint8_t *)PyBytes_AS_STRING(buf) + body,
                           PyTuple_GET_ITEM(t, 0), topic_fn, unknown_fn, noted);
        if (got < 0)
            goto fail;
        stored += got;
    }
    put_state_release(&st);
    return Py_BuildValue("(nn)", i, stored);
fail:
    put_state_release(&st);
    return NULL;
}

/* A batch of the run applied record by record straight from its framed records `recs`
 * (n of them, those of offsets in [lo, hi]), without the list decode_batch makes for
 * apply_decoded: each record of a known kind decoded by its compiled decoder and applied
 * by its handler (apply_value), each PartitionRecord that checks clean stored undecoded
 * (put_lazy, when `lazy`), NoOps passed over. Only outside a metadata transaction, for a
 * batch holding no transaction marker, nothing of which the decoders leave to the
 * reference (the frame header's long form, an unknown kind, bytes a decoder refuses): each
 * record is decoded or checked before any is applied, so a batch not taken is left whole
 * (0). 1 when applied, -1 on error; *applied the records applied (reached, on error),
 * *last the last offset in range (-1: none). */
/* What put_lazy needs of the builder b, new references: b.topic, b._put_lazy_partition and
 * the journal's parts (Py_None without a journal). 0, or -1 on error (nothing held). */
static int lazy_needs(PyObject *b, PyObject **topic_fn, PyObject **unknown_fn,
                      PyObject **noted)
{
    static PyObject *s_topic = NULL, *s_put_lazy = NULL, *s_journal_parts = NULL;
    if (s_journal_parts == NULL &&
            ((s_topic = PyUnicode_InternFromString("topic")) == NULL ||
             (s_put_lazy = PyUnicode_InternFromString("_put_lazy_partition")) == NULL ||
             (s_journal_parts = PyUnicode_InternFromString("parts")) == NULL))
        return -1;
    PyObject *journal = attr(b, s_journal);
    if (journal == NULL)
        return -1;
    *noted = journal == Py_None ? Py_NewRef(Py_None) : attr(journal, s_journal_parts);
    Py_DECREF(journal);
    if (*noted != NULL && *noted != Py_None && !PyList_Check(*noted)) {
        PyErr_SetString(PyExc_TypeError, "a journal's parts are a list");
        Py_CLEAR(*noted);
    }
    *topic_fn = *noted == NULL ? NULL : PyObject_GetAttr(b, s_topic);
    *unknown_fn = *topic_fn == NULL ? NULL : PyObject_GetAttr(b, s_put_lazy);
    if (*unknown_fn != NULL)
        return 0;
    Py_CLEAR(*noted);
    Py_CLEAR(*topic_fn);
    return -1;
}

static int apply_direct(const Plain *pl, PyObject *data, const Rec *recs, Py_ssize_t n,
                        int64_t lo, int64_t hi, int lazy, long noop_key, long partition_key,
                        long long *applied, int64_t *last)
{
    enum { SKIP, DECODED, UNDECODED };
    const uint8_t *buf = (const uint8_t *)PyBytes_AS_STRING(data);
    *applied = 0;
    *last = -1;
    if (decode_c == NULL || n <= 0)
        return 0;
    PyObject **values = PyMem_Calloc((size_t)n, sizeof(PyObject *));
    char *kind = PyMem_Calloc((size_t)n, 1);
    /* what put_lazy needs (new references), asked at the first undecoded record */
    PyObject *topic_fn = NULL, *unknown_fn = NULL, *noted = NULL;
    PutState st = {NULL, NULL, {0}};
    int got = 0;
    if (values == NULL || kind == NULL) {
        PyErr_NoMemory();
        got = -1;
        goto done;
    }
    Py_ssize_t m = 0;  /* the records in range: recs[first .. first + m) */
    Py_ssize_t first = 0;
    while (first < n && recs[first].off < lo)
        first++;
    for (Py_ssize_t j = first; j < n && recs[j].off <= hi; j++, m++) {
        const Rec *r = &recs[j];
        *last = r->off;
        if (r->key == noop_key)
            continue;  /* kind SKIP */
        if (r->key < 0 || (r->key >= 23 && r->key <= 25))
            goto done;  /* the long frame header, or a transaction's marker: not taken */
        int slot;
        PyObject *dec = found_decoder(pl, r->key, r->ver, &slot);
        if (dec == NULL) {
            got = -1;
            goto done;
        }
        if (dec != Py_None && lazy && r->key == partition_key && r->ver <= 2 && check != NULL &&
                check(dec, buf, r->body, r->vend) == 1) {
            kind[j] = UNDECODED;
        } else if (dec != Py_None) {
            values[j] = decode_c(dec, buf, r->body, r->vend);
            kind[j] = DECODED;
        }
        Py_DECREF(dec);
        if (kind[j] == DECODED && values[j] != NULL)
            continue;
        if (kind[j] != UNDECODED) {  /* an unknown kind, or bytes its decoder refuses */
            got = PyErr_Occurred() ? -1 : 0;
            goto done;
        }
    }
    got = 1;
    for (Py_ssize_t j = first; j < first + m && got > 0; j++) {
        const Rec *r = &recs[j];
        if (kind[j] == SKIP)
            continue;
        PyObject *off = PyLong_FromLongLong(r->off);
        if (off == NULL) {
            got = -1;
            break;
        }
        if (kind[j] == DECODED) {
            PyObject *key = PyLong_FromLong(r->key), *ver = PyLong_FromLong(r->ver);
            int reached = 0;
            if (key == NULL || ver == NULL ||
                    apply_value(pl, key, ver, values[j], off, &reached) < 0)
                got = -1;
            *applied += reached;
            Py_XDECREF(key);
            Py_XDECREF(ver);
        } else {
            if (noted == NULL && lazy_needs(pl->b, &topic_fn, &unknown_fn, &noted) < 0) {
                Py_DECREF(off);
                got = -1;
                break;
            }
            PyObject *items[4] = {Py_NewRef(data), PyLong_FromSsize_t(r->body),
                                  PyLong_FromSsize_t(r->vend), PyLong_FromLong(r->ver)};
            PyObject *undecoded = tuple_of(4, items);
            int put = undecoded == NULL ? -1 :
                      put_lazy(&st, undecoded, buf + r->body, off, topic_fn, unknown_fn, noted);
            Py_XDECREF(undecoded);
            if (put < 0)
                got = -1;
            else
                *applied += put;
        }
        Py_DECREF(off);
    }
done:
    put_state_release(&st);
    Py_XDECREF(topic_fn);
    Py_XDECREF(unknown_fn);
    Py_XDECREF(noted);
    for (Py_ssize_t j = 0; values != NULL && j < n; j++)
        Py_XDECREF(values[j]);
    PyMem_Free(values);
    PyMem_Free(kind);
    return got;
}

/* ------------------------------------------------------------------ partition changes */

/* The image's Partition class (image/model.py: a slots dataclass of 11 fields) as set up by
 * setup_partitions: its type and each field's place in an instance, so that a changed
 * partition is read and made without Python code (its __init__ is a Python function). */
enum { P_REPLICAS, P_DIRS, P_ISR, P_REMOVING, P_ADDING, P_ELR, P_LAST_ELR, P_LEADER, P_LRS,
       P_LEADER_EPOCH, P_PARTITION_EPOCH, P_FIELDS };
static PyTypeObject *partition_type = NULL;
static PyObject *one = NULL;  /* 1, to count epochs on */
static Py_ssize_t partition_at[P_FIELDS];
static PyObject *migrating_dir = NULL;
/* PartitionChangeRecord's field names, in the order of enum D_... */
enum { D_TOPIC_ID, D_PARTITION_ID, D_REPLICAS, D_DIRS, D_ISR, D_REMOVING, D_ADDING, D_LEADER,
       D_LRS, D_ELR, D_LAST_ELR, D_FIELDS };
static const char *change_keys[D_FIELDS] = {
    "topicId", "partitionId", "replicas", "directories", "isr", "removingReplicas",
    "addingReplicas", "leader", "leaderRecoveryState", "eligibleLeaderReplicas",
    "lastKnownElr"};
static PyObject *change_key[D_FIELDS];
static PyObject *s_image, *s_topics_by_id, *s_owned, *s_partitions_attr, *s_parts, *s_id,
    *s_topic_fn, *s_decoded, *s_partition_fn, *s_no_partition, *s_what, *s_decoded_cache;

#define SLOT(obj, i) (*(PyObject **)((char *)(obj) + partition_at[i]))

/* change_key[] made (interned: the decoders' keys are); 0, or -1 on error. */
static int change_keys_ready(void)
{
    for (int i = 0; i < D_FIELDS; i++)
        if (change_key[i] == NULL &&
                (change_key[i] = PyUnicode_InternFromString(change_keys[i])) == NULL)
            return -1;
    return 0;
}

/* setup_partitions(Partition, field_names, MIGRATING_DIR) */
static PyObject *setup_partitions(PyObject *self, PyObject *args)
{
    PyObject *cls, *names, *migrating;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyType_Type, &cls, &PyTuple_Type, &names,
                          &PyBytes_Type, &migrating))
        return NULL;
    if (PyTuple_GET_SIZE(names) != P_FIELDS) {
        PyErr_SetString(PyExc_ValueError, "Partition has 11 fields");
        return NULL;
    }
    for (int i = 0; i < P_FIELDS; i++) {
        PyObject *descr = PyObject_GetAttr(cls, PyTuple_GET_ITEM(names, i));
        if (descr == NULL)
            return NULL;
        int ok = Py_TYPE(descr) == &PyMemberDescr_Type &&
                 ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX;
        if (ok)
            partition_at[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
        Py_DECREF(descr);
        if (!ok) {
            PyErr_SetString(PyExc_TypeError, "a Partition field is not a slot");
            return NULL;
        }
    }
    if (change_keys_ready() < 0)
        return NULL;
    const char *attrs[] = {"image", "topics_by_id", "_owned", "partitions", "parts", "id",
                           "_topic", "decoded", "partition", "_no_partition", "_decoded"};
    PyObject **slots[] = {&s_image, &s_topics_by_id, &s_owned, &s_partitions_attr, &s_parts,
                          &s_id, &s_topic_fn, &s_decoded, &s_partition_fn, &s_no_partition,
                          &s_decoded_cache};
    for (int i = 0; i < 11; i++)
        if (*slots[i] == NULL && (*slots[i] = PyUnicode_InternFromString(attrs[i])) == NULL)
            return NULL;
    if (s_what == NULL && (s_what = PyUnicode_FromString("PartitionChangeRecord")) == NULL)
        return NULL;
    if (one == NULL && (one = PyLong_FromLong(1)) == NULL)
        return NULL;
    Py_INCREF(cls);
    Py_XSETREF(partition_type, (PyTypeObject *)cls);
    Py_INCREF(migrating);
    Py_XSETREF(migrating_dir, migrating);
    Py_RETURN_NONE;
}

/* d[key], borrowed; NULL with KeyError (a decoder gives every field: a bug otherwise). */
static PyObject *field(PyObject *d, int key)
{
    PyObject *v = PyDict_GetItemWithError(d, change_key[key]);
    if (v == NULL && !PyErr_Occurred())
        PyErr_SetObject(PyExc_KeyError, change_key[key]);
    return v;
}

/* Whether every item of the list `dirs` is MIGRATING_DIR (an empty one too); -1 error. */
static int all_migrating(PyObject *dirs)
{
    if (!PyList_Check(dirs))
        return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(dirs); i++) {
        int eq = PyObject_RichCompareBool(PyList_GET_ITEM(dirs, i), migrating_dir, Py_EQ);
        if (eq <= 0)
            return eq;
    }
    return 1;
}

/* image.replay.merge_partition (the reference): a new Partition of `p` changed by the
 * record's values `v` (by enum D_..., borrowed); NULL on error. */
static PyObject *merge(PyObject *p, PyObject *const *v)
{
    PyObject *out[P_FIELDS] = {NULL};
    PyObject *replicas = v[D_REPLICAS], *dirs = v[D_DIRS];
    if (replicas == Py_None && dirs == Py_None) {
        out[P_REPLICAS] = SLOT(p, P_REPLICAS);
        out[P_DIRS] = SLOT(p, P_DIRS);
        Py_INCREF(out[P_REPLICAS]);
        Py_INCREF(out[P_DIRS]);
    } else {
        out[P_REPLICAS] = replicas == Py_None ? SLOT(p, P_REPLICAS) : replicas;
        Py_INCREF(out[P_REPLICAS]);
        dirs = dirs == Py_None ? SLOT(p, P_DIRS) : dirs;
        int all = all_migrating(dirs);
        if (all < 0)
            goto fail;
        if (all) {
            Py_ssize_t n = PyObject_Length(out[P_REPLICAS]);
            if (n < 0 || (out[P_DIRS] = PyList_New(n)) == NULL)
                goto fail;
            for (Py_ssize_t i = 0; i < n; i++) {
                Py_INCREF(migrating_dir);
                PyList_SET_ITEM(out[P_DIRS], i, migrating_dir);
            }
        } else {
            Py_INCREF(dirs);
            out[P_DIRS] = dirs;
        }
    }
    long leader = PyLong_AsLong(v[D_LEADER]);
    long lrs = PyLong_AsLong(v[D_LRS]);
    if (PyErr_Occurred())
        goto fail;
    if (leader != -2) {
        out[P_LEADER] = v[D_LEADER];
        Py_INCREF(out[P_LEADER]);
        out[P_LEADER_EPOCH] = PyNumber_Add(SLOT(p, P_LEADER_EPOCH), one);
    } else {
        out[P_LEADER] = SLOT(p, P_LEADER);
        out[P_LEADER_EPOCH] = SLOT(p, P_LEADER_EPOCH);
        Py_INCREF(out[P_LEADER]);
        Py_INCREF(out[P_LEADER_EPOCH]);
    }
    out[P_LRS] = lrs == -1 ? SLOT(p, P_LRS) : v[D_LRS];
    Py_INCREF(out[P_LRS]);
    static const int same[][2] = {{P_ISR, D_ISR}, {P_REMOVING, D_REMOVING},
                                  {P_ADDING, D_ADDING}, {P_ELR, D_ELR},
                                  {P_LAST_ELR, D_LAST_ELR}};
    for (int i = 0; i < 5; i++) {
        PyObject *x = v[same[i][1]];
        out[same[i][0]] = x == Py_None ? SLOT(p, same[i][0]) : x;
        Py_INCREF(out[same[i][0]]);
    }
    out[P_PARTITION_EPOCH] = PyNumber_Add(SLOT(p, P_PARTITION_EPOCH), one);
    for (int i = 0; i < P_FIELDS; i++)
        if (out[i] == NULL)
            goto fail;
    PyObject *made = partition_type->tp_alloc(partition_type, 0);
    if (made == NULL)
        goto fail;
    for (int i = 0; i < P_FIELDS; i++)
        SLOT(made, i) = out[i];  /* the references move into the new partition */
    return made;
fail:
    for (int i = 0; i < P_FIELDS; i++)
        Py_XDECREF(out[i]);
    return NULL;
}

#define PARTITION_PREFIX 20  /* frames.PARTITION_PREFIX_SIZE: partition id, topic id */

/* The bytes past the partition and topic ids of raw, an undecoded PartitionRecord (bytes,
 * body, end, version), and its version: 1, or 0 (no error) when raw is not such a tuple. */
static int record_rest(PyObject *raw, const uint8_t **rest, Py_ssize_t *n, long *version)
{
    if (PyTuple_GET_SIZE(raw) != 4 || !PyBytes_CheckExact(PyTuple_GET_ITEM(raw, 0)) ||
            !PyLong_CheckExact(PyTuple_GET_ITEM(raw, 3)))
        return 0;
    PyObject *buf = PyTuple_GET_ITEM(raw, 0);
    Py_ssize_t body = PyLong_AsSsize_t(PyTuple_GET_ITEM(raw, 1));
    Py_ssize_t end = PyLong_AsSsize_t(PyTuple_GET_ITEM(raw, 2));
    *version = PyLong_AsLong(PyTuple_GET_ITEM(raw, 3));
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (body < 0 || end > PyBytes_GET_SIZE(buf) || body > end - PARTITION_PREFIX)
        return 0;
    *rest = (const uint8_t *)PyBytes_AS_STRING(buf) + body + PARTITION_PREFIX;
    *n = end - body - PARTITION_PREFIX;
    return 1;
}

/* b.decoded(raw)'s cache read without calling it, for raw an undecoded PartitionRecord: the
 * partition kept for its bytes (kept_partition), else b._decoded[(version, its bytes past
 * the ids)] (then kept); a new reference, NULL when not there (b.decoded then decodes it)
 * or on error. */
static PyObject *decoded_before(PyObject *b, PyObject *raw)
{
    const uint8_t *rest;
    Py_ssize_t n;
    long version;
    if (!record_rest(raw, &rest, &n, &version))
        return NULL;
    uint64_t hash;
    PyObject *p = kept_partition(rest, n, version, partition_type, &hash);
    if (p != NULL)
        return p;
    PyObject *cache = attr(b, s_decoded_cache);
    if (cache == NULL || !PyDict_CheckExact(cache)) {
        Py_XDECREF(cache);
        PyErr_Clear();
        return NULL;
    }
    PyObject *key = NULL, *bytes = PyBytes_FromStringAndSize((const char *)rest, n);
    if (bytes != NULL) {
        PyObject *items[2] = {Py_NewRef(PyTuple_GET_ITEM(raw, 3)), bytes};
        key = tuple_of(2, items);
    }
    p = key == NULL ? NULL : PyDict_GetItemWithError(cache, key);  /* borrowed */
    Py_XINCREF(p);
    Py_XDECREF(key);
    Py_DECREF(cache);
    if (p != NULL && Py_TYPE(p) == partition_type &&
            keep_partition(hash, rest, n, version, p) < 0)
        Py_CLEAR(p);
    return p;
}

/* A partition b.decoded(raw) gave, kept for raw's bytes (kept_partition); -1 on error. */
static int keep_decoded(PyObject *raw, PyObject *p)
{
    const uint8_t *rest;
    Py_ssize_t n;
    long version;
    if (Py_TYPE(p) != partition_type || !record_rest(raw, &rest, &n, &version))
        return 0;
    uint64_t hash;
    PyObject *kept = kept_partition(rest, n, version, partition_type, &hash);
    if (kept != NULL) {
        Py_DECREF(kept);
        return 0;
    }
    return keep_partition(hash, rest, n, version, p);
}

static PyObject *change_partition(PyObject *b, PyObject *const *v, PyObject *off);

/* An unsigned varint of at most 5 bytes in its shortest form inside [*p, end), *p moved
 * past it; 0 for anything else (a longer form, past `end`, above 32 bits). */
static inline int uvarint_short(const uint8_t *buf, Py_ssize_t *p, Py_ssize_t end,
                                uint32_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 5 && *p < end; i++) {
        uint8_t byte = buf[(*p)++];
        v |= (uint64_t)(byte & 0x7F) << (7 * i);
        if (byte < 0x80) {
            if ((i > 0 && byte == 0) || v > UINT32_MAX)
                return 0;  /* a longer form than needed, or too large */
            *out = (uint32_t)v;
            return 1;
        }
    }
    return 0;
}

/* A compact nullable array of int32 (width 4) or uuid (width 16) filling buf[pos:end]
 * exactly: a new list (Py_None for null); NULL with no error when it does not. */
static PyObject *compact_array(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, int width)
{
    uint32_t n;
    if (!uvarint_short(buf, &pos, end, &n))
        return NULL;
    if (n == 0) {
        if (pos != end)
            return NULL;
        Py_RETURN_NONE;
    }
    Py_ssize_t count = (Py_ssize_t)n - 1;
    if (count > (end - pos) / width || pos + count * width != end)
        return NULL;
    PyObject *list = PyList_New(count);
    for (Py_ssize_t i = 0; list != NULL && i < count; i++, pos += width) {
        PyObject *item = width == 4 ? PyLong_FromLong(be32(buf + pos)) :
            PyBytes_FromStringAndSize((const char *)buf + pos, width);
        if (item == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, item);
    }
    return list;
}

/* A PartitionChangeRecord of version `ver` (0-2) read from its body buf[pos:end] into `v`
 * (by enum D_..., new references), giving what the schema-driven decoder gives, for the
 * encoding Kafka writes: its tagged fields known at `ver`, in ascending order, each once,
 * every varint in its shortest form, each field's size its value's, nothing after them. 1
 * when read; 0 when the decoder must read it (anything else: it decodes or refuses it, and
 * says what), nothing held then; -1 on error. */
static int read_change(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, long ver,
                       PyObject **v)
{
    static const int tag_field[9] = {D_ISR, D_LEADER, D_REPLICAS, D_REMOVING, D_ADDING, D_LRS,
                                     D_ELR, D_LAST_ELR, D_DIRS};
    static const long tag_since[9] = {0, 0, 0, 0, 0, 0, 2, 2, 1};
    for (int i = 0; i < D_FIELDS; i++)
        v[i] = NULL;
    uint32_t count;
    if (ver < 0 || ver > 2 || end - pos < 20)
        return 0;
    v[D_PARTITION_ID] = PyLong_FromLong(be32(buf + pos));
    v[D_TOPIC_ID] = kept_id(buf + pos + 4);  /* the topic's own key once it was looked up */
    pos += 20;
    if (v[D_PARTITION_ID] == NULL || v[D_TOPIC_ID] == NULL)
        goto error;
    if (!uvarint_short(buf, &pos, end, &count) || count > 9)
        goto refuse;
    long last = -1;
    for (uint32_t k = 0; k < count; k++) {
        uint32_t tag, size;
        if (!uvarint_short(buf, &pos, end, &tag) || tag > 8 || (long)tag <= last ||
                tag_since[tag] > ver || !uvarint_short(buf, &pos, end, &size) ||
                size > (uint64_t)(end - pos))
            goto refuse;
        last = tag;
        Py_ssize_t stop = pos + (Py_ssize_t)size;
        int f = tag_field[tag];
        if (f == D_LEADER) {
            if (size != 4)
                goto refuse;
            v[f] = PyLong_FromLong(be32(buf + pos));
        } else if (f == D_LRS) {
            if (size != 1)
                goto refuse;
            v[f] = PyLong_FromLong((int8_t)buf[pos]);
        } else {
            v[f] = compact_array(buf, pos, stop, f == D_DIRS ? 16 : 4);
            if (v[f] == NULL && !PyErr_Occurred())
                goto refuse;
        }
        if (v[f] == NULL)
            goto error;
        pos = stop;
    }
    if (pos != end)
        goto refuse;
    for (int i = 0; i < D_FIELDS; i++) {  /* the defaults of the fields not given */
        if (v[i] == NULL) {
            v[i] = i == D_LEADER ? PyLong_FromLong(-2) : i == D_LRS ? PyLong_FromLong(-1) :
                   Py_NewRef(Py_None);
            if (v[i] == NULL)
                goto error;
        }
    }
    return 1;
refuse:
    for (int i = 0; i < D_FIELDS; i++)
        Py_CLEAR(v[i]);
    return 0;
error:
    for (int i = 0; i < D_FIELDS; i++)
        Py_CLEAR(v[i]);
    return -1;
}

/* partition_change(builder, record, offset): image.replay._partition_change (the
 * reference), as a handler: the partition changed, its new value set in its topic's map
 * and journaled; an unknown topic or partition said by the builder's own methods. */
static PyObject *partition_change(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyDict_Check(args[1]) || partition_type == NULL) {
        PyErr_SetString(PyExc_TypeError, "partition_change(builder, record, offset)");
        return NULL;
    }
    PyObject *v[D_FIELDS];
    for (int i = 0; i < D_FIELDS; i++)
        if ((v[i] = field(args[1], i)) == NULL)
            return NULL;
    return change_partition(args[0], v, args[2]);
}

/* change_values(buf, pos, end, ver) -> {field: value} as read_change reads the body
 * buf[pos:end] (the keys are the decoder's), or None where it leaves the record to the
 * decoder: for tests, which compare it with the decoder. */
static PyObject *change_values(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, end;
    long ver;
    if (!PyArg_ParseTuple(args, "y*nnl", &view, &pos, &end, &ver))
        return NULL;
    if (pos < 0 || end > view.len || pos > end || change_keys_ready() < 0) {
        PyBuffer_Release(&view);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "range outside the buffer");
        return NULL;
    }
    PyObject *v[D_FIELDS];
    int got = read_change((const uint8_t *)view.buf, pos, end, ver, v);
    PyBuffer_Release(&view);
    if (got <= 0) {
        if (got < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *out = PyDict_New();
    for (int i = 0; i < D_FIELDS; i++) {
        if (out != NULL && PyDict_SetItem(out, change_key[i], v[i]) < 0)
            Py_CLEAR(out);
        Py_DECREF(v[i]);
    }
    return out;
}

/* ------------------------------------------------------------ ClearElrRecord's partitions */

/* Whether an undecoded PartitionRecord of version `ver` (0-2), its body buf[pos:end], holds
 * no eligible leader replicas and no last known ones, and decodes cleanly: 1 when its bytes
 * are the encoding Kafka writes (as read_change asks: tags known at `ver`, ascending, once,
 * shortest varints, sizes exact, nothing after) and its ELR and LastKnownElr (tags 1 and 2,
 * v2+) are absent, null or empty; 0 for anything else (the reference then decodes it). */
static int holds_no_elr(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, long ver)
{
    uint32_t n, count;
    if (ver < 0 || ver > 2 || end - pos < 20)
        return 0;
    pos += 20;  /* partition and topic ids */
    for (int i = 0; i < 4 + (ver >= 1); i++) {  /* replicas, isr, removing, adding, dirs */
        Py_ssize_t width = i == 4 ? 16 : 4;
        if (!uvarint_short(buf, &pos, end, &n) || n == 0 || (Py_ssize_t)(n - 1) > (end - pos) / width)
            return 0;
        pos += (Py_ssize_t)(n - 1) * width;
        if (i == 3) {  /* leader, leader epoch, partition epoch */
            if (end - pos < 12)
                return 0;
            pos += 12;
        }
    }
    if (!uvarint_short(buf, &pos, end, &count) || count > 3)
        return 0;
    long last = -1;
    for (uint32_t k = 0; k < count; k++) {
        uint32_t tag, size;
        if (!uvarint_short(buf, &pos, end, &tag) || tag > 2 || (long)tag <= last ||
                (tag > 0 && ver < 2) || !uvarint_short(buf, &pos, end, &size) ||
                size > (uint64_t)(end - pos))
            return 0;
        last = tag;
        Py_ssize_t stop = pos + (Py_ssize_t)size;
        if (tag == 0 ? size != 1 :  /* leader recovery state: one int8 */
                !uvarint_short(buf, &pos, stop, &n) || n > 1 || pos != stop)
            return 0;  /* an ELR list with members (or not one) */
        pos = stop;
    }
    return pos == end;
}

/* elr_held(partitions) -> [partition id]: the ids of a topic's partitions map ({id:
 * Partition or (buffer, body start, end, version)}) whose partition may hold eligible
 * leader replicas or last known ones: a Partition whose lists are not both empty, an
 * undecoded record holds_no_elr does not clear, anything else. The ones left out hold none
 * and decode cleanly: ClearElrRecord leaves them as they are without decoding them. */
static PyObject *elr_held(PyObject *self, PyObject *partitions)
{
    if (!PyDict_CheckExact(partitions) || partition_type == NULL) {
        PyErr_SetString(PyExc_TypeError, "elr_held(dict) after setup_partitions");
        return NULL;
    }
    PyObject *out = PyList_New(0), *pid, *p;
    Py_ssize_t at = 0;
    while (out != NULL && PyDict_Next(partitions, &at, &pid, &p)) {
        int none;
        if (Py_TYPE(p) == partition_type) {
            PyObject *elr = SLOT(p, P_ELR), *last = SLOT(p, P_LAST_ELR);
            none = elr != NULL && last != NULL && PyList_CheckExact(elr) &&
                   PyList_CheckExact(last) && PyList_GET_SIZE(elr) == 0 &&
                   PyList_GET_SIZE(last) == 0;
        } else if (PyTuple_CheckExact(p) && PyTuple_GET_SIZE(p) == 4 &&
                   PyBytes_CheckExact(PyTuple_GET_ITEM(p, 0)) &&
                   PyLong_CheckExact(PyTuple_GET_ITEM(p, 1)) &&
                   PyLong_CheckExact(PyTuple_GET_ITEM(p, 2)) &&
                   PyLong_CheckExact(PyTuple_GET_ITEM(p, 3))) {
            PyObject *buf = PyTuple_GET_ITEM(p, 0);
            Py_ssize_t body = PyLong_AsSsize_t(PyTuple_GET_ITEM(p, 1));
            Py_ssize_t end = PyLong_AsSsize_t(PyTuple_GET_ITEM(p, 2));
            long ver = PyLong_AsLong(PyTuple_GET_ITEM(p, 3));
            if (PyErr_Occurred()) {  /* a number too large for these: the reference reads it */
                PyErr_Clear();
                none = 0;
            } else {
                none = body >= 0 && body <= end && end <= PyBytes_GET_SIZE(buf) &&
                       holds_no_elr((const uint8_t *)PyBytes_AS_STRING(buf), body, end, ver);
            }
        } else {
            none = 0;
        }
        if (!none && PyList_Append(out, pid) < 0)
            Py_CLEAR(out);
    }
    return out;
}

/* partition_change's work on the record's values `v` (by enum D_..., borrowed), read from
 * its decoded dict or from its bytes (read_change); None, NULL on error. */
static int owns(PyObject *owned, PyObject *obj);
static PyObject *change_partition(PyObject *b, PyObject *const *v, PyObject *off)
{
    PyObject *tid = v[D_TOPIC_ID], *pid = v[D_PARTITION_ID];
    PyObject *image = NULL, *topics = NULL, *owned = NULL, *topic = NULL, *parts = NULL;
    PyObject *p = NULL, *made = NULL, *journal = NULL, *result = NULL;
    if ((image = attr(b, s_image)) == NULL ||
            (topics = attr(image, s_topics_by_id)) == NULL ||
            (owned = attr(b, s_owned)) == NULL)
        goto done;
    topic = PyDict_GetItemWithError(topics, tid);
    int mine = 0;
    if (topic != NULL) {
        Py_INCREF(topic);
        if ((mine = owns(owned, topic)) < 0)
            goto done;
    } else if (PyErr_Occurred()) {
        goto done;
    }
    if (!mine) {  /* b.topic() copies it, or b._topic() says it is unknown */
        Py_XDECREF(topic);
        topic = PyObject_CallMethodObjArgs(b, s_topic_fn, tid, s_what, off, NULL);
        if (topic == NULL)
            goto done;
        if (topic == Py_None) {
            result = Py_None;
            Py_INCREF(result);
            goto done;
        }
    }
    PyObject *own_id = attr(topic, s_id);  /* the map's key (b.put's): kept, found by identity */
    if (own_id == NULL)
        goto done;
    if (own_id != tid && PyBytes_CheckExact(own_id) && PyBytes_CheckExact(tid) &&
            PyBytes_GET_SIZE(own_id) == 16 && PyBytes_GET_SIZE(tid) == 16 &&
            memcmp(PyBytes_AS_STRING(own_id), PyBytes_AS_STRING(tid), 16) == 0)
        keep_id(own_id);
    Py_DECREF(own_id);
    if ((parts = attr(topic, s_partitions_attr)) == NULL || !PyDict_Check(parts)) {
        if (parts != NULL)
            PyErr_SetString(PyExc_TypeError, "a topic's partitions are a dict");
        goto done;
    }
    PyObject *raw = PyDict_GetItemWithError(parts, pid);  /* borrowed */
    if (raw == NULL && PyErr_Occurred())
        goto done;
    if (raw != NULL && PyTuple_CheckExact(raw)) {  /* undecoded: decoded once per record */
        p = decoded_before(b, raw);
        if (p == NULL && !PyErr_Occurred()) {
            p = PyObject_CallMethodOneArg(b, s_decoded, raw);
            if (p != NULL && keep_decoded(raw, p) < 0)
                Py_CLEAR(p);
        }
        if (p == Py_None) {
            Py_DECREF(p);
            p = PyObject_CallMethodOneArg(topic, s_partition_fn, pid);
        }
        if (p == NULL)
            goto done;
    } else if (raw != NULL) {
        p = raw;
        Py_INCREF(p);
    } else {
        p = Py_None;
        Py_INCREF(p);
    }
    if (p == Py_None) {
        result = PyObject_CallMethodObjArgs(b, s_no_partition, topic, pid, off, NULL);
        goto done;
    }
    if (Py_TYPE(p) != partition_type) {
        PyErr_SetString(PyExc_TypeError, "a partition that is not the image's Partition");
        goto done;
    }
    if ((made = merge(p, v)) == NULL || PyDict_SetItem(parts, pid, made) < 0)
        goto done;
    if ((journal = attr(b, s_journal)) == NULL)
        goto done;
    if (journal != Py_None) {  /* b.set_partition's journal: (topic id, partition, value) */
        PyObject *list = attr(journal, s_parts), *id = list == NULL ? NULL : attr(topic, s_id);
        int bad = list == NULL || id == NULL || !PyList_Check(list) ||
                  PyList_Append(list, id) < 0 || PyList_Append(list, pid) < 0 ||
                  PyList_Append(list, made) < 0;
        if (bad && !PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "a journal's parts are a list");
        Py_XDECREF(list);
        Py_XDECREF(id);
        if (bad)
            goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    Py_XDECREF(image);
    Py_XDECREF(topics);
    Py_XDECREF(owned);
    Py_XDECREF(topic);
    Py_XDECREF(parts);
    Py_XDECREF(p);
    Py_XDECREF(made);
    Py_XDECREF(journal);
    return result;
}

/* ------------------------------------------------------------------ other handlers */

/* Handlers of the other hot record kinds (image/replay.py's Python handlers are the
 * reference; tests/test_handlers.py compares the two): each does the common case in C and
 * hands everything else to its Python handler (`fallback`), before changing anything, so
 * that what it does not take is done, and said, by the reference. The builder's own
 * copy-on-write rules are followed: a map or value is changed in place only when the
 * builder owns it (`_owned` holds its id), else its Python method copies it first
 * (`writable`, `broker`); the journal of history gets what ImageBuilder.put and MapLog.put
 * give it. */

static PyObject *tomb = NULL;  /* journal.TOMB: a key removed since the mark */
static PyTypeObject *broker_type = NULL;  /* model.BrokerRegistration */
static PyObject *broker_offsets = NULL;  /* its slots' offsets, in field order */
static PyObject *s_writable, *s_broker_fn, *s_maps, *s_log_fn, *s_values, *s_resets, *s_epoch_attr,
    *s_fenced, *s_shutdown, *s_brokers, *s_configs, *f_broker_id, *f_broker_epoch, *f_fenced,
    *f_shutdown, *f_log_dirs, *f_cordoned, *f_resource_type, *f_resource_name, *f_name,
    *f_value, *f_incarnation, *f_endpoints, *f_features, *f_rack, *f_migrating, *f_feature_name,
    *f_min_version, *f_max_version, *s_client_quotas, *f_entity_type, *f_entity_name, *f_remove,
    *f_key, *f_entity;

#include "_idset.h"

/* Whether the builder owns `obj` (id(obj) in b._owned); -1 on error. */
static int owns(PyObject *owned, PyObject *obj)
{
    if (Py_TYPE(owned) == &IdSetType)
        return idset_has((IdSet *)owned, obj);
    PyObject *key = PyLong_FromVoidPtr(obj);
    if (key == NULL)
        return -1;
    int in = PySet_Contains(owned, key);
    Py_DECREF(key);
    return in;
}

/* b._owned.add(id(obj)); -1 on error. */
static int own(PyObject *owned, PyObject *obj)
{
    if (Py_TYPE(owned) == &IdSetType)
        return idset_add((IdSet *)owned, obj);
    PyObject *key = PyLong_FromVoidPtr(obj);
    if (key == NULL)
        return -1;
    int bad = PySet_Add(owned, key);
    Py_DECREF(key);
    return bad;
}

/* What a handler reads of the builder `b`: its image and `_owned` (the ids of what it made
 * since the last publish or mark, which it changes in place), new references. */
typedef struct {
    PyObject *b, *image, *owned;
} Builder;

static void builder_release(Builder *s)
{
    Py_CLEAR(s->image);
    Py_CLEAR(s->owned);
}

/* The builder's image and _owned taken into *s; -1 on error (nothing held then). */
static int builder_of(PyObject *b, Builder *s)
{
    s->b = b;
    s->image = attr(b, s_image);
    s->owned = s->image == NULL ? NULL : attr(b, s_owned);
    if (s->owned != NULL && (Py_TYPE(s->owned) == &IdSetType || PySet_Check(s->owned)))
        return 0;
    if (s->owned != NULL)
        PyErr_SetString(PyExc_TypeError, "the builder's _owned is an IdSet or a set");
    builder_release(s);
    return -1;
}

/* The image map `name`, writable: image.<name> when owned, else b.writable(name) (which
 * copies it). A new reference, NULL on error. */
static PyObject *writable_map(const Builder *s, PyObject *name)
{
    PyObject *d = attr(s->image, name);
    if (d == NULL)
        return NULL;
    int mine = owns(s->owned, d);
    if (mine > 0 && PyDict_CheckExact(d))
        return d;
    Py_DECREF(d);
    if (mine < 0)
        return NULL;
    d = PyObject_CallMethodOneArg(s->b, s_writable, name);
    if (d != NULL && !PyDict_CheckExact(d)) {
        Py_DECREF(d);
        PyErr_SetString(PyExc_TypeError, "an image map is a dict");
        return NULL;
    }
    return d;
}

static int journal_put(PyObject *b, PyObject *name, PyObject *key, PyObject *value);

/* ImageBuilder.put(name, key, value): image.<name>[key] = value, the map copied first when
 * shared, and journaled; -1 on error. */
static int builder_put(const Builder *s, PyObject *name, PyObject *key, PyObject *value)
{
    PyObject *map = writable_map(s, name);
    int bad = map == NULL || PyDict_SetItem(map, key, value) < 0 ||
              journal_put(s->b, name, key, value) < 0;
    Py_XDECREF(map);
    return bad ? -1 : 0;
}

/* The journal's log of map `name` (b.journal.log(name)), a new reference; Py_None when no
 * journal is kept; NULL on error. */
static PyObject *journal_log(PyObject *b, PyObject *name)
{
    PyObject *journal = attr(b, s_journal);
    if (journal == NULL || journal == Py_None)
        return journal;
    PyObject *maps = attr(journal, s_maps), *log = NULL;
    if (maps != NULL && PyDict_CheckExact(maps)) {
        log = PyDict_GetItemWithError(maps, name);
        Py_XINCREF(log);
        if (log == NULL && !PyErr_Occurred())
            log = PyObject_CallMethodOneArg(journal, s_log_fn, name);
    } else if (maps != NULL) {
        PyErr_SetString(PyExc_TypeError, "a journal's maps are a dict");
    }
    Py_XDECREF(maps);
    Py_DECREF(journal);
    return log;
}

/* MapLog.put(key, value) (a key set again after a removal moves to the end) on the journal
 * of map `name`, when one is kept; -1 on error. */
static int journal_put(PyObject *b, PyObject *name, PyObject *key, PyObject *value)
{
    PyObject *log = journal_log(b, name);
    if (log == NULL || log == Py_None) {
        Py_XDECREF(log);
        return log == NULL ? -1 : 0;
    }
    PyObject *values = attr(log, s_values);
    Py_DECREF(log);
    if (values == NULL || !PyDict_CheckExact(values)) {
        if (values != NULL)
            PyErr_SetString(PyExc_TypeError, "a map log's values are a dict");
        Py_XDECREF(values);
        return -1;
    }
    PyObject *was = PyDict_GetItemWithError(values, key);
    int bad = (was == NULL && PyErr_Occurred()) ||
              (was == tomb && PyDict_DelItem(values, key) < 0) ||
              PyDict_SetItem(values, key, value) < 0;
    Py_DECREF(values);
    return bad ? -1 : 0;
}

/* MapLog.drop(key) on the journal of map `name`, when one is kept; -1 on error. */
static int journal_drop(PyObject *b, PyObject *name, PyObject *key)
{
    PyObject *log = journal_log(b, name);
    if (log == NULL || log == Py_None) {
        Py_XDECREF(log);
        return log == NULL ? -1 : 0;
    }
    PyObject *values = attr(log, s_values);
    PyObject *resets = values == NULL ? NULL : attr(log, s_resets);
    Py_DECREF(log);
    int bad = values == NULL || resets == NULL || !PyDict_CheckExact(values) ||
              !PySet_Check(resets) || PyDict_SetItem(values, key, tomb) < 0 ||
              PySet_Add(resets, key) < 0;
    if (bad && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "a map log holds a dict and a set");
    Py_XDECREF(values);
    Py_XDECREF(resets);
    return bad ? -1 : 0;
}

/* The record's key: d[f] for one field name, (d[f1], d[f2]) for two. A new reference; NULL
 * with no error set when a field is missing (the reference then says so). */
/* A record's key of one or two fields (`k`, `n` of them): the field, or a tuple of the
 * two; a new reference, NULL on error. */
static PyObject *record_key(PyObject *const *k, Py_ssize_t n)
{
    if (n == 1)
        return Py_NewRef(k[0]);
    PyObject *parts[2] = {Py_NewRef(k[0]), Py_NewRef(k[1])};
    return tuple_of(2, parts);
}

/* The handler's spec (its bound `self`): a tuple whose last item is the Python handler. */
static PyObject *fall_back(PyObject *spec, PyObject *const *args)
{
    PyObject *fallback = PyTuple_GET_ITEM(spec, PyTuple_GET_SIZE(spec) - 1);
    return PyObject_Vectorcall(fallback, args, 3, NULL);
}

static int handler_args(PyObject *spec, Py_ssize_t nargs, PyObject *const *args, Py_ssize_t size)
{
    if (nargs != 3 || !PyDict_Check(args[1]) || !PyTuple_Check(spec) ||
            PyTuple_GET_SIZE(spec) != size) {
        PyErr_SetString(PyExc_TypeError, "a handler takes (builder, record, offset)");
        return 0;
    }
    return 1;
}

/* The fields a handler of the put, drop, scalar or client quota kind reads (Field names,
 * str), in the order its core takes them: put, the key fields then the value fields; drop,
 * the key fields; scalar, its field; client quota, QUOTA_FIELDS. How many (at most
 * MAX_WANTED), -1 with an error for a spec of another shape. */
#define MAX_WANTED 18
enum { H_PUT, H_DROP, H_SCALAR, H_QUOTA, H_KINDS };
static int wanted_fields(int kind, PyObject *spec, PyObject **names)
{
    int n = 0;
    if (kind == H_QUOTA) {
        PyObject *quota[4] = {f_remove, f_key, f_value, f_entity};
        for (; n < 4; n++)
            names[n] = quota[n];
        return n;
    }
    if (kind == H_SCALAR) {
        names[0] = PyTuple_GET_ITEM(spec, 1);
        return 1;
    }
    for (int t = 1; t <= (kind == H_PUT ? 3 : 1); t += 2) {  /* put: spec[1] and spec[3] */
        PyObject *tuple = PyTuple_GET_ITEM(spec, t);
        if (!PyTuple_Check(tuple) || n + PyTuple_GET_SIZE(tuple) > MAX_WANTED ||
                (t == 1 && (PyTuple_GET_SIZE(tuple) < 1 || PyTuple_GET_SIZE(tuple) > 2))) {
            PyErr_SetString(PyExc_ValueError, "a handler's fields: a key of one or two, "
                            "at most 18 in all");
            return -1;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++)
            names[n++] = PyTuple_GET_ITEM(tuple, i);
    }
    return n;
}

/* The values of a record's fields `keys[0..n-1]` in its dict `d` into `v` (borrowed): 1
 * when all are there, 0 when one is not (no error set), -1 on error. */
static int record_fields(PyObject *d, PyObject *const *keys, int n, PyObject **v)
{
    for (int i = 0; i < n; i++)
        if ((v[i] = PyDict_GetItemWithError(d, keys[i])) == NULL)
            return PyErr_Occurred() ? -1 : 0;
    return 1;
}

/* A value of a slots class made of `v`, in the class's field order (cls, slot offsets as
 * bytes of Py_ssize_t, one for each of v); NULL on error. */
static PyObject *slots_value(PyObject *const *v, PyObject *cls, PyObject *offsets)
{
    Py_ssize_t n = PyBytes_GET_SIZE(offsets) / (Py_ssize_t)sizeof(Py_ssize_t);
    const Py_ssize_t *at = (const Py_ssize_t *)PyBytes_AS_STRING(offsets);
    PyTypeObject *type = (PyTypeObject *)cls;
    PyObject *made = type->tp_alloc(type, 0);
    if (made == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        *(PyObject **)((char *)made + at[i]) = Py_NewRef(v[i]);
    return made;
}

/* The cores of the put, drop, scalar and client quota handlers: `v` the fields
 * wanted_fields names, borrowed, from the decoded record (the handler) or from its bytes
 * (apply_fields). 1 when applied, 0 when it is the Python handler's (nothing changed: the
 * record is handed to it as a dict), -1 on error. */

/* put: spec (map name, key fields, cls, value fields, offsets, fallback):
 * b.put(map, key, cls(*values)). */
static int put_core(PyObject *spec, PyObject *b, PyObject *const *v)
{
    Py_ssize_t nk = PyTuple_GET_SIZE(PyTuple_GET_ITEM(spec, 1));
    PyObject *key = record_key(v, nk), *value = NULL;
    Builder s = {NULL, NULL, NULL};
    int got = key == NULL ||
              (value = slots_value(v + nk, PyTuple_GET_ITEM(spec, 2),
                                   PyTuple_GET_ITEM(spec, 4))) == NULL ||
              builder_of(b, &s) < 0 ||
              builder_put(&s, PyTuple_GET_ITEM(spec, 0), key, value) < 0 ? -1 : 1;
    builder_release(&s);
    Py_XDECREF(key);
    Py_XDECREF(value);
    return got;
}

/* drop: spec (map name, key fields, said, fallback): b.drop(map, key); a key not in the
 * map is the reference's to say when `said` is true (0), else nothing happens. */
static int drop_core(PyObject *spec, PyObject *b, PyObject *const *v)
{
    PyObject *name = PyTuple_GET_ITEM(spec, 0);
    PyObject *key = record_key(v, PyTuple_GET_SIZE(PyTuple_GET_ITEM(spec, 1)));
    if (key == NULL)
        return -1;
    PyObject *now = NULL, *map = NULL;
    Builder s = {NULL, NULL, NULL};
    int got = -1;
    if (builder_of(b, &s) < 0 || (now = attr(s.image, name)) == NULL)
        goto done;
    int in = PyDict_CheckExact(now) ? PyDict_Contains(now, key) : -2;
    if (in == -2)
        PyErr_SetString(PyExc_TypeError, "an image map is a dict");
    if (in < 0)
        goto done;
    if (!in) {  /* nothing to remove: said by the reference, or nothing happens */
        got = PyTuple_GET_ITEM(spec, 2) == Py_True ? 0 : 1;
        goto done;
    }
    if ((map = writable_map(&s, name)) == NULL || PyDict_DelItem(map, key) < 0 ||
            journal_drop(b, name, key) < 0)
        goto done;
    got = 1;
done:
    builder_release(&s);
    Py_DECREF(key);
    Py_XDECREF(now);
    Py_XDECREF(map);
    return got;
}

/* scalar: spec (image attribute, field, fallback): b.image.<attribute> = the field. */
static int scalar_core(PyObject *spec, PyObject *b, PyObject *const *v)
{
    PyObject *image = attr(b, s_image);
    if (image == NULL)
        return -1;
    int bad = PyObject_SetAttr(image, PyTuple_GET_ITEM(spec, 0), v[0]);
    Py_DECREF(image);
    return bad < 0 ? -1 : 1;
}

static int quota_core(PyObject *spec, PyObject *b, PyObject *const *v);

/* One of the cores above by its kind. */
static int handler_core(int kind, PyObject *spec, PyObject *b, PyObject *const *v)
{
    switch (kind) {
    case H_PUT: return put_core(spec, b, v);
    case H_DROP: return drop_core(spec, b, v);
    case H_SCALAR: return scalar_core(spec, b, v);
    default: return quota_core(spec, b, v);
    }
}

/* A handler of one of those kinds called with (builder, decoded record, offset): its core
 * on the record's fields; a record missing one, or one the core leaves, goes to the
 * Python handler (which raises, or says what the core does not). */
static PyObject *core_handler(int kind, Py_ssize_t size, PyObject *spec,
                              PyObject *const *args, Py_ssize_t nargs)
{
    if (!handler_args(spec, nargs, args, size))
        return NULL;
    PyObject *names[MAX_WANTED], *v[MAX_WANTED];
    int n = wanted_fields(kind, spec, names);
    int got = n < 0 ? -1 : record_fields(args[1], names, n, v);
    if (got > 0)
        got = handler_core(kind, spec, args[0], v);
    if (got < 0)
        return NULL;
    if (got == 0)
        return fall_back(spec, args);
    Py_RETURN_NONE;
}

static PyObject *put_handler(PyObject *spec, PyObject *const *args, Py_ssize_t nargs)
{
    return core_handler(H_PUT, 6, spec, args, nargs);
}

static PyObject *drop_handler(PyObject *spec, PyObject *const *args, Py_ssize_t nargs)
{
    return core_handler(H_DROP, 4, spec, args, nargs);
}

static PyObject *scalar_handler(PyObject *spec, PyObject *const *args, Py_ssize_t nargs)
{
    return core_handler(H_SCALAR, 3, spec, args, nargs);
}

/* The slot offsets of cls's fields `names` (each a slot holding an object) as bytes of
 * Py_ssize_t; NULL with an error when one is not such a slot or there are more than 16. */
static PyObject *class_offsets(PyObject *cls, PyObject *names)
{
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (!PyType_Check(cls) || n > 16) {
        PyErr_SetString(PyExc_ValueError, "a slots class of 16 fields at most");
        return NULL;
    }
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(Py_ssize_t));
    if (offsets == NULL)
        return NULL;
    Py_ssize_t *at = (Py_ssize_t *)PyBytes_AS_STRING(offsets);
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *descr = PyObject_GetAttr(cls, PyTuple_GET_ITEM(names, j));
        int ok = descr != NULL && Py_TYPE(descr) == &PyMemberDescr_Type &&
                 ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX;
        if (ok)
            at[j] = ((PyMemberDescrObject *)descr)->d_member->offset;
        Py_XDECREF(descr);
        if (!ok) {
            Py_DECREF(offsets);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "a field that is not a slot");
            return NULL;
        }
    }
    return offsets;
}

/* A shallow copy of `obj`, an instance of the slots class whose slot offsets are `offsets`
 * (every slot of it); NULL on error. */
static PyObject *slots_copy(PyObject *obj, PyObject *offsets)
{
    Py_ssize_t n = PyBytes_GET_SIZE(offsets) / (Py_ssize_t)sizeof(Py_ssize_t);
    const Py_ssize_t *at = (const Py_ssize_t *)PyBytes_AS_STRING(offsets);
    PyTypeObject *type = Py_TYPE(obj);
    for (Py_ssize_t i = 0; i < n; i++)
        if (*(PyObject **)((char *)obj + at[i]) == NULL) {
            PyErr_SetString(PyExc_AttributeError, "a slot not set");
            return NULL;
        }
    PyObject *made = type->tp_alloc(type, 0);
    if (made == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = *(PyObject **)((char *)obj + at[i]);
        Py_INCREF(v);
        *(PyObject **)((char *)made + at[i]) = v;
    }
    return made;
}

/* b.broker(bid) for a registration `reg` the builder does not own: a copy, owned, put in
 * the brokers map (copied first when shared) and journaled. A new reference; NULL on error. */
static PyObject *broker_copy(const Builder *s, PyObject *bid, PyObject *reg, PyObject *offsets)
{
    if (Py_TYPE(reg) != broker_type) {
        PyErr_SetString(PyExc_TypeError, "a registration that is not a BrokerRegistration");
        return NULL;
    }
    PyObject *made = slots_copy(reg, offsets);
    if (made != NULL && (own(s->owned, made) < 0 || builder_put(s, s_brokers, bid, made) < 0))
        Py_CLEAR(made);
    return made;
}

/* An exact int's value in [lo, hi], or `none` (also for anything else). */
static long small_int(PyObject *v, long lo, long hi, long none)
{
    if (v == NULL || !PyLong_CheckExact(v))
        return none;
    int overflow;
    long x = PyLong_AsLongAndOverflow(v, &overflow);
    if (overflow || x < lo || x > hi) {
        PyErr_Clear();
        return none;
    }
    return x;
}

/* The fenced state (-1, 0 or 1: unfenced, unchanged, fenced) and controlled shutdown (0 or
 * 1: unchanged, in) of a BrokerRegistrationChangeRecord set on broker `bid`'s registration
 * of epoch `epoch` (copied first when shared: b.broker; spec as broker_change_handler's). 1
 * when set; 0 when the broker is not registered or of another epoch (nothing changed: the
 * reference says so); -1 on error. */
/* reg.<name> = value, for `name` BrokerRegistration's field number `field`: written in its
 * slot when reg is of that very class (setup_handlers' offsets), else set as an attribute.
 * -1 on error. */
static int set_broker_field(PyObject *reg, int field, PyObject *name, PyObject *value)
{
    if (Py_TYPE(reg) != broker_type || broker_offsets == NULL ||
            PyBytes_GET_SIZE(broker_offsets) < (field + 1) * (Py_ssize_t)sizeof(Py_ssize_t))
        return PyObject_SetAttr(reg, name, value);
    Py_ssize_t at = ((const Py_ssize_t *)PyBytes_AS_STRING(broker_offsets))[field];
    Py_XSETREF(*(PyObject **)((char *)reg + at), Py_NewRef(value));
    return 0;
}

static int broker_change_apply(PyObject *spec, PyObject *b, PyObject *bid, PyObject *epoch,
                               long fenced, long shutdown)
{
    PyObject *brokers = NULL, *reg = NULL, *now = NULL;
    int result = -1;
    Builder s = {NULL, NULL, NULL};
    if (builder_of(b, &s) < 0 || (brokers = attr(s.image, s_brokers)) == NULL)
        goto done;
    if (!PyDict_CheckExact(brokers)) {
        PyErr_SetString(PyExc_TypeError, "the brokers map is a dict");
        goto done;
    }
    reg = PyDict_GetItemWithError(brokers, bid);
    Py_XINCREF(reg);
    if (reg == NULL) {
        result = PyErr_Occurred() ? -1 : 0;  /* not registered */
        goto done;
    }
    if ((now = attr(reg, s_epoch_attr)) == NULL)
        goto done;
    int same = PyObject_RichCompareBool(now, epoch, Py_EQ);
    if (same <= 0) {
        result = same;  /* another epoch */
        goto done;
    }
    int mine = owns(s.owned, reg);
    if (mine < 0)
        goto done;
    if (!mine) {  /* b.broker(bid): a copy, owned and put (journaled) */
        Py_SETREF(reg, broker_copy(&s, bid, reg, PyTuple_GET_ITEM(spec, 0)));
        if (reg == NULL)
            goto done;
    }
    if (fenced != 0 && set_broker_field(reg, 6, s_fenced, fenced == 1 ? Py_True : Py_False) < 0)
        goto done;
    if (shutdown == 1 && set_broker_field(reg, 7, s_shutdown, Py_True) < 0)
        goto done;
    result = 1;
done:
    builder_release(&s);
    Py_XDECREF(brokers);
    Py_XDECREF(reg);
    Py_XDECREF(now);
    return result;
}

/* BrokerRegistrationChangeRecord (spec: (BrokerRegistration's slot offsets, fallback)): its
 * fenced and controlled-shutdown states set (broker_change_apply). The reference does
 * everything else: a broker not registered or of another epoch, an unknown value, log dirs
 * or cordoned log dirs given. */
static PyObject *broker_change_handler(PyObject *spec, PyObject *const *args, Py_ssize_t nargs)
{
    if (!handler_args(spec, nargs, args, 2))
        return NULL;
    PyObject *d = args[1], *v[4];  /* id, epoch, log dirs, cordoned log dirs */
    PyObject *const keys[4] = {f_broker_id, f_broker_epoch, f_log_dirs, f_cordoned};
    int got = record_fields(d, keys, 4, v);
    if (got <= 0)
        return got < 0 ? NULL : fall_back(spec, args);
    long fenced = small_int(PyDict_GetItemWithError(d, f_fenced), -1, 1, 9);
    long shutdown = small_int(PyDict_GetItemWithError(d, f_shutdown), 0, 1, 9);
    if (PyErr_Occurred())
        return NULL;
    if (v[3] != Py_None || !PyList_CheckExact(v[2]) || PyList_GET_SIZE(v[2]) != 0 ||
            fenced == 9 || shutdown == 9)
        return fall_back(spec, args);
    got = broker_change_apply(spec, args[0], v[0], v[1], fenced, shutdown);
    if (got < 0)
        return NULL;
    if (got == 0)
        return fall_back(spec, args);
    Py_RETURN_NONE;
}

/* One object for equal keys stored again and again (a config resource is journaled after
 * each history mark it changes in): `key` or the equal one seen before, a new reference;
 * NULL on error. Bounded: emptied when it holds KEYS_KEPT. */
#define KEYS_KEPT 16384
static PyObject *kept_keys = NULL;
static PyObject *kept_key(PyObject *key)
{
    if (kept_keys == NULL && (kept_keys = PyDict_New()) == NULL)
        return NULL;
    if (PyDict_GET_SIZE(kept_keys) >= KEYS_KEPT)
        PyDict_Clear(kept_keys);
    PyObject *kept = PyDict_SetDefault(kept_keys, key, key);  /* borrowed */
    Py_XINCREF(kept);
    return kept;
}

/* image.<map>[key][name] = value as ImageBuilder.inner(map, key, create=True) gives the
 * dict: the map and the key's dict copied first when shared, a new or copied dict put and
 * journaled. `key` is stolen. Py_None, or NULL on error. */
static PyObject *set_inner(PyObject *builder, PyObject *map, PyObject *key, PyObject *name,
                           PyObject *value)
{
    PyObject *outer = NULL, *values = NULL, *result = NULL;
    Builder s = {NULL, NULL, NULL};
    if (key == NULL || builder_of(builder, &s) < 0 || (outer = writable_map(&s, map)) == NULL)
        goto done;
    values = PyDict_GetItemWithError(outer, key);
    Py_XINCREF(values);
    if (values == NULL && PyErr_Occurred())
        goto done;
    int mine = values == NULL ? 0 : owns(s.owned, values);
    if (mine < 0)
        goto done;
    if (!mine) {  /* a new dict, or a copy of the shared one: owned, put, journaled */
        Py_XSETREF(values, values == NULL ? PyDict_New() : PyDict_Copy(values));
        Py_SETREF(key, kept_key(key));
        if (values == NULL || key == NULL || own(s.owned, values) < 0 ||
                builder_put(&s, map, key, values) < 0)
            goto done;
    }
    if (!PyDict_CheckExact(values)) {
        PyErr_SetString(PyExc_TypeError, "an inner map is a dict");
        goto done;
    }
    if (PyDict_SetItem(values, name, value) < 0)
        goto done;
    result = Py_None;
    Py_INCREF(result);
done:
    builder_release(&s);
    Py_XDECREF(key);
    Py_XDECREF(outer);
    Py_XDECREF(values);
    return result;
}

/* ConfigRecord (spec: (fallback,)): a value set in image.configs[(type, name)]
 * (set_inner). A value removed (None) is the reference's. */
static PyObject *config_handler(PyObject *spec, PyObject *const *args, Py_ssize_t nargs)
{
    if (!handler_args(spec, nargs, args, 1))
        return NULL;
    PyObject *v[4];  /* resource type, resource name, name, value */
    PyObject *const keys[4] = {f_resource_type, f_resource_name, f_name, f_value};
    int got = record_fields(args[1], keys, 4, v);
    if (got <= 0 || v[3] == Py_None)
        return got < 0 ? NULL : fall_back(spec, args);
    PyObject *items[2] = {Py_NewRef(v[0]), Py_NewRef(v[1])};
    return set_inner(args[0], s_configs, tuple_of(2, items), v[2], v[3]);
}

/* A ClientQuotaRecord's entity (model.quota_entity): ((type, name), ...) sorted by type, a
 * type given twice keeping its last name; NULL with no error when an item is not such a
 * struct. */
static PyObject *quota_entity(PyObject *parts)
{
    if (!PyList_CheckExact(parts))
        return NULL;
    PyObject *names = PyDict_New(), *items = NULL, *entity = NULL;
    for (Py_ssize_t i = 0; names != NULL && i < PyList_GET_SIZE(parts); i++) {
        PyObject *e = PyList_GET_ITEM(parts, i);
        PyObject *type = PyDict_CheckExact(e) ? PyDict_GetItemWithError(e, f_entity_type) : NULL;
        PyObject *name = type == NULL ? NULL : PyDict_GetItemWithError(e, f_entity_name);
        if (name == NULL || !PyUnicode_CheckExact(type) || PyDict_SetItem(names, type, name) < 0)
            Py_CLEAR(names);
    }
    if (names != NULL && (items = PyDict_Items(names)) != NULL && PyList_Sort(items) == 0)
        entity = PyList_AsTuple(items);
    Py_XDECREF(names);
    Py_XDECREF(items);
    return entity;
}

/* ClientQuotaRecord (spec: (fallback,)): a value set in image.client_quotas[entity]
 * (set_inner); v: remove, key, value, entity. A value removed is the reference's. */
static int quota_core(PyObject *spec, PyObject *b, PyObject *const *v)
{
    if (v[0] != Py_False)
        return 0;
    PyObject *entity = quota_entity(v[3]);
    if (entity == NULL)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *out = set_inner(b, s_client_quotas, entity, v[1], v[2]);
    Py_XDECREF(out);
    return out == NULL ? -1 : 1;
}

static PyObject *quota_handler(PyObject *spec, PyObject *const *args, Py_ssize_t nargs)
{
    return core_handler(H_QUOTA, 1, spec, args, nargs);
}

/* What apply_fields needs to know of (key, its decoder `dec`) in `bf`, from the run's
 * handler table. 0, or -1 on error. */
static int fields_plan(const Plain *pl, long key, PyObject *dec, ByFields *bf)
{
    static PyCFunction fns[H_KINDS] = {
        (PyCFunction)(void (*)(void))put_handler, (PyCFunction)(void (*)(void))drop_handler,
        (PyCFunction)(void (*)(void))scalar_handler, (PyCFunction)(void (*)(void))quota_handler};
    static const Py_ssize_t sizes[H_KINDS] = {6, 4, 3, 1};  /* their specs' sizes */
    bf->state = -1;
    if (fields_c == NULL || tomb == NULL)
        return 0;
    PyObject *k = PyLong_FromLong(key);
    PyObject *h = k == NULL ? NULL : PyDict_GetItemWithError(pl->handlers, k);  /* borrowed */
    Py_XDECREF(k);
    if (h == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyCFunction_Check(h))
        return 0;
    int kind = 0;
    while (kind < H_KINDS && PyCFunction_GET_FUNCTION(h) != fns[kind])
        kind++;
    PyObject *spec = kind < H_KINDS ? PyCFunction_GET_SELF(h) : NULL;
    if (spec == NULL || !PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != sizes[kind])
        return 0;
    PyObject *names[MAX_WANTED];
    int n = wanted_fields(kind, spec, names);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        Py_ssize_t at = fields_index(dec, names[i], &bf->total);
        if (at < 0 || bf->total > MAX_FIELDS)
            return 0;  /* not a compiled decoder, or a field its message does not have */
        bf->at[i] = (int8_t)at;
    }
    bf->kind = kind;
    bf->nwanted = n;
    bf->spec = Py_NewRef(spec);
    bf->state = 1;
    return 0;
}

/* The record `r` read by its decoder's fields mode (no dict) and applied by its handler's
 * core, when its kind's handler is one of those (fields_plan): 1 when applied, 0 when it
 * is the dict way's (not such a handler, bytes the fields mode leaves, a case the core
 * leaves to the Python handler: nothing changed), -1 on error; *counted as apply_value's
 * *reached (the core counts as the handler). */
static int apply_fields(const Plain *pl, ByFields *bf, PyObject *dec, const uint8_t *buf,
                        const Rec *r, int *counted)
{
    if (bf->state == 0 && fields_plan(pl, r->key, dec, bf) < 0)
        return -1;
    if (bf->state != 1)
        return 0;
    PyObject *vals[MAX_FIELDS], *v[MAX_WANTED];
    int got = fields_c(dec, buf, r->body, r->vend, vals, bf->total);
    if (got <= 0)
        return got;
    for (int i = 0; i < bf->nwanted; i++)
        v[i] = vals[bf->at[i]];
    got = handler_core(bf->kind, bf->spec, pl->b, v);
    for (Py_ssize_t i = 0; i < bf->total; i++)
        Py_DECREF(vals[i]);
    *counted = got != 0;
    return got;
}

/* ------------------------------------------------- other kinds read from their bytes */

/* What run reads from the bytes of a one-record batch, as read_change does partition
 * changes: the record kinds whose compiled handler's common case needs only scalars. Each
 * reader takes the encoding Kafka writes (tagged fields known at the version, ascending,
 * each once, every varint in its shortest form, sizes exact, nothing after them) of a
 * record in its handler's common case, and gives 1; for anything else 0 and nothing held:
 * the compiled decoder and the handler (or its reference) read it and say what. */
#define CONFIG_KEY 4          /* ConfigRecord */
#define BROKER_CHANGE_KEY 17  /* BrokerRegistrationChangeRecord */

/* A BrokerRegistrationChangeRecord of version `ver` (0-3) whose log dirs are absent or
 * empty and cordoned log dirs absent or null, fenced -1..1 and controlled shutdown 0..1. */
static int read_broker_change(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, long ver,
                              int32_t *bid, int64_t *epoch, long *fenced, long *shutdown)
{
    uint32_t count, tag, size;
    if (ver < 0 || ver > 3 || end - pos < 12)
        return 0;
    *bid = be32(buf + pos);
    *epoch = be64(buf + pos + 4);
    *fenced = *shutdown = 0;
    pos += 12;
    if (!uvarint_short(buf, &pos, end, &count) || count > 4)
        return 0;
    long last = -1;
    for (uint32_t k = 0; k < count; k++) {
        /* tag t is known from version t on; each here is one byte */
        if (!uvarint_short(buf, &pos, end, &tag) || tag > 3 || (long)tag <= last ||
                (long)tag > ver || !uvarint_short(buf, &pos, end, &size) || size != 1 ||
                pos >= end)
            return 0;
        last = tag;
        int8_t x = (int8_t)buf[pos++];
        if (tag == 0 && x >= -1 && x <= 1)
            *fenced = x;
        else if (tag == 1 && x >= 0 && x <= 1)
            *shutdown = x;
        else if (!(tag == 2 && x == 1) && !(tag == 3 && x == 0))
            return 0;  /* an unknown state, log dirs given, cordoned ones given */
    }
    return pos == end;
}

/* A compact string (not null) inside buf[*pos:end], *pos moved past it: strict UTF-8, as
 * the decoders read it (`kept`: the one kept for its bytes, kept_name). NULL with no error
 * for anything else. */
static PyObject *compact_string(const uint8_t *buf, Py_ssize_t *pos, Py_ssize_t end, int kept)
{
    uint32_t n;
    if (!uvarint_short(buf, pos, end, &n) || n == 0 || (Py_ssize_t)(n - 1) > end - *pos)
        return NULL;
    const uint8_t *p = buf + *pos;
    *pos += (Py_ssize_t)(n - 1);
    if (kept)
        return kept_name(p, (Py_ssize_t)(n - 1));
    PyObject *str = PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)(n - 1), NULL);
    if (str == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
        PyErr_Clear();  /* not UTF-8: the decoder refuses it, and says so */
    return str;
}

/* A ConfigRecord of version 0 that sets a value (not null): v = (resource type, resource
 * name, name, value), new references. -1 on error. */
static int read_config(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, long ver,
                       PyObject **v)
{
    v[0] = v[1] = v[2] = v[3] = NULL;
    if (ver != 0 || end - pos < 1)
        return 0;
    v[0] = PyLong_FromLong((int8_t)buf[pos++]);
    for (int i = 1; i < 4 && v[i - 1] != NULL; i++)
        v[i] = compact_string(buf, &pos, end, i < 3);  /* names repeat: kept; values made */
    if (v[3] != NULL && pos < end && buf[pos] == 0 && pos + 1 == end)
        return 1;  /* no tagged fields, nothing after */
    for (int i = 0; i < 4; i++)
        Py_CLEAR(v[i]);
    return PyErr_Occurred() ? -1 : 0;
}

#define REGISTER_KEY 0  /* RegisterBrokerRecord */

/* A struct of a compact array skipped: `strings` compact strings (not null), 4 bytes of
 * fixed fields, its tagged fields; 0 when it is not one inside [*pos, end). Its strings are
 * not checked as UTF-8: only bytes equal to those of a registration that decoded are
 * taken (register_bytes). */
static int skip_struct(const uint8_t *buf, Py_ssize_t *pos, Py_ssize_t end, int strings)
{
    uint32_t n, count, tag, size;
    for (int i = 0; i < strings; i++) {
        if (!uvarint_short(buf, pos, end, &n) || n == 0 || (Py_ssize_t)(n - 1) > end - *pos)
            return 0;
        *pos += (Py_ssize_t)(n - 1);
    }
    if (end - *pos < 4)
        return 0;
    *pos += 4;
    if (!uvarint_short(buf, pos, end, &count))
        return 0;
    for (uint32_t k = 0; k < count; k++) {
        if (!uvarint_short(buf, pos, end, &tag) || !uvarint_short(buf, pos, end, &size) ||
                size > (uint64_t)(end - *pos))
            return 0;
        *pos += (Py_ssize_t)size;
    }
    return 1;
}

/* A compact array of `strings`-string structs skipped (skip_struct); 0 when not one. */
static int skip_structs(const uint8_t *buf, Py_ssize_t *pos, Py_ssize_t end, int strings)
{
    uint32_t n;
    if (!uvarint_short(buf, pos, end, &n) || n == 0)
        return 0;
    for (uint32_t i = 1; i < n; i++)
        if (!skip_struct(buf, pos, end, strings))
            return 0;
    return 1;
}

/* Where a RegisterBrokerRecord of version `ver` (0-4), its body buf[pos:end], holds its
 * endpoints and features: *section..*section_end, *rest after them; 0 when its bytes are
 * not so framed. */
static int register_section(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, long ver,
                            Py_ssize_t *section, Py_ssize_t *section_end)
{
    Py_ssize_t fixed = 4 + (ver >= 2) + 16 + 8;  /* id, migrating (v2+), incarnation, epoch */
    if (ver < 0 || ver > 4 || end - pos < fixed)
        return 0;
    pos += fixed;
    *section = pos;
    if (!skip_structs(buf, &pos, end, 2) || !skip_structs(buf, &pos, end, 1))
        return 0;
    *section_end = pos;
    return 1;
}

/* A RegisterBrokerRecord's fields but its endpoints and features, as the compiled handler
 * takes them (at most one log dir, no cordoned ones), read from its bytes into v (by
 * BrokerRegistration's field order; v[3] and v[4] left NULL), new references: 1; 0 for
 * anything else (nothing held), -1 on error. `rest`: where its rack begins. */
static int read_register(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t rest, Py_ssize_t end,
                         long ver, PyObject **v)
{
    uint32_t n, count, tag, size;
    for (int i = 0; i < 11; i++)
        v[i] = NULL;
    v[0] = PyLong_FromLong(be32(buf + pos));
    v[8] = PyBool_FromLong(ver >= 2 && buf[pos + 4] != 0);
    pos += 4 + (ver >= 2);
    v[2] = PyBytes_FromStringAndSize((const char *)buf + pos, 16);
    v[1] = PyLong_FromLongLong(be64(buf + pos + 16));
    if (v[0] == NULL || v[1] == NULL || v[2] == NULL || v[8] == NULL)
        goto error;
    pos = rest;
    if (!uvarint_short(buf, &pos, end, &n) || (Py_ssize_t)n - 1 > end - pos)
        goto refuse;
    if (n == 0) {  /* null */
        v[5] = Py_NewRef(Py_None);
    } else if ((v[5] = PyUnicode_DecodeUTF8((const char *)buf + pos, (Py_ssize_t)n - 1,
                                            NULL)) == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            goto error;
        PyErr_Clear();
        goto refuse;
    } else {
        pos += (Py_ssize_t)n - 1;
    }
    if (end - pos < 1 + (ver >= 1))
        goto refuse;
    v[6] = PyBool_FromLong(buf[pos++] != 0);
    v[7] = PyBool_FromLong(ver >= 1 && buf[pos] != 0);
    pos += ver >= 1;
    v[10] = Py_NewRef(Py_None);
    if (!uvarint_short(buf, &pos, end, &count) || count > 2)
        goto refuse;
    long last = -1;
    for (uint32_t k = 0; k < count; k++) {
        /* LogDirs (tag 0, v3+): at most one; CordonedLogDirs (tag 1, v4+): null */
        if (!uvarint_short(buf, &pos, end, &tag) || tag > 1 || (long)tag <= last ||
                (long)tag + 3 > ver || !uvarint_short(buf, &pos, end, &size) ||
                size > (uint64_t)(end - pos))
            goto refuse;
        last = tag;
        Py_ssize_t stop = pos + (Py_ssize_t)size, at = pos;
        if (tag == 1) {
            if (size != 1 || buf[pos] != 0)
                goto refuse;
        } else if (!uvarint_short(buf, &at, stop, &n) || n == 0 || n > 2) {
            goto refuse;
        } else if ((v[9] = compact_array(buf, pos, stop, 16)) == NULL) {
            goto refuse_or_error;
        }
        pos = stop;
    }
    if (pos != end)
        goto refuse;
    if (v[9] == NULL)
        v[9] = PyList_New(0);
    for (int i = 0; i < 11; i++)
        if (i != 3 && i != 4 && v[i] == NULL)
            goto error;
    return 1;
refuse_or_error:
    if (PyErr_Occurred())
        goto error;
refuse:
    for (int i = 0; i < 11; i++)
        Py_CLEAR(v[i]);
    return PyErr_Occurred() ? -1 : 0;
error:
    for (int i = 0; i < 11; i++)
        Py_CLEAR(v[i]);
    return -1;
}

/* The registrations run applied last, by broker id: (the bytes of its endpoints and
 * features, the listeners and supported features dicts made of them). A registration's
 * dicts are never changed in place, so a registration in the image that holds those very
 * dicts holds what those bytes decode to. Bounded: emptied when it holds REGS_KEPT. */
#define REGS_KEPT 4096
static PyObject *reg_sections = NULL;
static PyObject *registration_of(PyTypeObject *type, PyObject *offsets, PyObject **v);
static PyObject *register_broker_handler(PyObject *spec, PyObject *const *args,
                                         Py_ssize_t nargs);

/* Remembers the endpoints and features bytes buf[section:section_end] of broker `bid`'s
 * registration, the one in `brokers` now (an instance of the class of `spec`, the
 * register_broker handler's); 0, or -1 on error. */
static int remember_section(PyObject *spec, PyObject *brokers, PyObject *bid,
                            const uint8_t *buf, Py_ssize_t section, Py_ssize_t section_end)
{
    PyObject *reg = PyDict_CheckExact(brokers) ? PyDict_GetItemWithError(brokers, bid) : NULL;
    if (reg == NULL || Py_TYPE(reg) != (PyTypeObject *)PyTuple_GET_ITEM(spec, 0))
        return PyErr_Occurred() ? -1 : 0;
    const Py_ssize_t *at = (const Py_ssize_t *)PyBytes_AS_STRING(PyTuple_GET_ITEM(spec, 1));
    PyObject *listeners = *(PyObject **)((char *)reg + at[3]);
    PyObject *supported = *(PyObject **)((char *)reg + at[4]);
    if (listeners == NULL || supported == NULL)
        return 0;
    if (reg_sections == NULL && (reg_sections = PyDict_New()) == NULL)
        return -1;
    if (PyDict_GET_SIZE(reg_sections) >= REGS_KEPT)
        PyDict_Clear(reg_sections);
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)buf + section,
                                                section_end - section);
    PyObject *kept = bytes == NULL ? NULL : Py_BuildValue("(NOO)", bytes, listeners, supported);
    int bad = kept == NULL || PyDict_SetItem(reg_sections, bid, kept) < 0;
    Py_XDECREF(kept);
    return bad ? -1 : 0;
}

/* Whether broker `old`'s registration (an instance of the class of `spec`, the
 * register_broker handler's) holds the dicts remembered for `bid` with the bytes
 * buf[section:section_end]: the remembered (bytes, listeners, supported) (borrowed), or
 * NULL (with an error, or none). */
static PyObject *same_section(PyObject *spec, PyObject *old, PyObject *bid, const uint8_t *buf,
                              Py_ssize_t section, Py_ssize_t section_end)
{
    PyObject *kept = old == NULL || reg_sections == NULL ||
                     Py_TYPE(old) != (PyTypeObject *)PyTuple_GET_ITEM(spec, 0) ? NULL :
                     PyDict_GetItemWithError(reg_sections, bid);
    if (kept == NULL)
        return NULL;
    const Py_ssize_t *at = (const Py_ssize_t *)PyBytes_AS_STRING(PyTuple_GET_ITEM(spec, 1));
    PyObject *bytes = PyTuple_GET_ITEM(kept, 0);
    if (PyBytes_GET_SIZE(bytes) != section_end - section ||
            memcmp(PyBytes_AS_STRING(bytes), buf + section, (size_t)(section_end - section)) ||
            *(PyObject **)((char *)old + at[3]) != PyTuple_GET_ITEM(kept, 1) ||
            *(PyObject **)((char *)old + at[4]) != PyTuple_GET_ITEM(kept, 2))
        return NULL;
    return kept;
}

/* A RegisterBrokerRecord framed as `r`: a re-registration whose endpoints and features
 * are the bytes of the broker's registration in the image (same_section) is made from its
 * other fields (read_register) and that registration's dicts, as the handler (`spec`: its
 * own) would share them, without decoding them; any other is decoded and applied as any
 * record (apply_one), then its bytes remembered. As apply_bytes. */
static int register_bytes(const Plain *pl, PyObject *spec, const uint8_t *buf, const Rec *r,
                          int *reached)
{
    Py_ssize_t section, section_end;
    *reached = 0;
    if (!register_section(buf, r->body, r->vend, r->ver, &section, &section_end))
        return 0;
    PyObject *bid = PyLong_FromLong(be32(buf + r->body)), *brokers = NULL, *v[11];
    Builder s = {NULL, NULL, NULL};
    int got = -1;
    if (bid == NULL || builder_of(pl->b, &s) < 0 ||
            (brokers = attr(s.image, s_brokers)) == NULL)
        goto done;
    PyObject *old = PyDict_CheckExact(brokers) ? PyDict_GetItemWithError(brokers, bid) : NULL;
    PyObject *kept = old == NULL ? NULL :
                     same_section(spec, old, bid, buf, section, section_end);
    if (PyErr_Occurred())
        goto done;
    if (kept != NULL) {
        Py_INCREF(kept);  /* held: what follows allocates, and the table may be emptied */
        if ((got = read_register(buf, r->body, section_end, r->vend, r->ver, v)) <= 0) {
            Py_DECREF(kept);
            goto done;
        }
        v[3] = Py_NewRef(PyTuple_GET_ITEM(kept, 1));
        v[4] = Py_NewRef(PyTuple_GET_ITEM(kept, 2));
        Py_DECREF(kept);
        *reached = 1;
        PyObject *reg = registration_of((PyTypeObject *)PyTuple_GET_ITEM(spec, 0),
                                        PyTuple_GET_ITEM(spec, 1), v);
        got = reg == NULL || builder_put(&s, s_brokers, bid, reg) < 0 ? -1 : 1;
        Py_XDECREF(reg);
        goto done;
    }
    builder_release(&s);
    Py_CLEAR(brokers);
    if ((got = apply_one(pl, buf, r, reached)) <= 0)
        goto done;
    if (builder_of(pl->b, &s) < 0 || (brokers = attr(s.image, s_brokers)) == NULL ||
            remember_section(spec, brokers, bid, buf, section, section_end) < 0)
        got = -1;
done:
    builder_release(&s);
    Py_XDECREF(brokers);
    Py_XDECREF(bid);
    return got;
}

/* What run asks about `key` (Fast), its compiled handler being `fn` and its readable
 * versions 0..maxver. 0, or -1 on error. */
static int fast_kind(const Plain *pl, long key, PyCFunction fn, long maxver, Fast *f)
{
    f->asked = 1;
    f->vers = 0;
    PyObject *k = PyLong_FromLong(key);
    PyObject *h = k == NULL ? NULL : PyDict_GetItemWithError(pl->handlers, k);
    Py_XDECREF(k);
    if (h == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyCFunction_Check(h) || check == NULL || PyCFunction_GET_FUNCTION(h) != fn ||
            (key == PARTITION_CHANGE && partition_type == NULL))
        return 0;
    for (long ver = 0; ver <= maxver; ver++) {
        PyObject *dec = decoder_of(pl->decoders, pl->decoder_fn, key, ver);
        if (dec == NULL)
            return -1;
        if (check(dec, (const unsigned char *)"", 0, 0) >= 0)  /* -1: not compiled */
            f->vers |= 1u << ver;
        Py_DECREF(dec);
    }
    f->spec = Py_XNewRef(PyCFunction_GET_SELF(h));
    return 0;
}

/* The record framed as `r` (of a one-record batch outside a transaction) applied from its
 * bytes when its kind is one run reads so (a partition change, a broker's change, a config
 * set) and its reader takes it: 1 when applied, 0 when it is the decoder's and its
 * handler's to take (nothing done), -1 on error; *reached as apply_value's. */
static int apply_bytes(const Plain *pl, const uint8_t *buf, const Rec *r, int *reached)
{
    static const long keys[FAST_KINDS] = {PARTITION_CHANGE, BROKER_CHANGE_KEY, CONFIG_KEY,
                                          REGISTER_KEY};
    static const long maxver[FAST_KINDS] = {2, 3, 0, 4};
    PyCFunction fns[FAST_KINDS] = {
        (PyCFunction)(void (*)(void))partition_change,
        (PyCFunction)(void (*)(void))broker_change_handler,
        (PyCFunction)(void (*)(void))config_handler,
        (PyCFunction)(void (*)(void))register_broker_handler};
    *reached = 0;
    int i = 0;
    while (i < FAST_KINDS && keys[i] != r->key)
        i++;
    if (i == FAST_KINDS || r->ver < 0 || r->ver > maxver[i])
        return 0;
    Fast *f = &pl->found->fast[i];
    if (!f->asked && fast_kind(pl, keys[i], fns[i], maxver[i], f) < 0)
        return -1;
    if (!(f->vers & (1u << r->ver)))
        return 0;
    PyObject *v[D_FIELDS], *out = NULL;
    int got;
    if (i == FAST_REGISTER)
        return register_bytes(pl, f->spec, buf, r, reached);
    if (i == FAST_CHANGE) {
        if ((got = read_change(buf, r->body, r->vend, r->ver, v)) <= 0)
            return got;
        *reached = 1;
        PyObject *off = PyLong_FromLongLong(r->off);
        out = off == NULL ? NULL : change_partition(pl->b, v, off);
        Py_XDECREF(off);
        for (int j = 0; j < D_FIELDS; j++)
            Py_DECREF(v[j]);
    } else if (i == FAST_BROKER_CHANGE) {
        int32_t bid;
        int64_t epoch;
        long fenced, shutdown;
        if (!read_broker_change(buf, r->body, r->vend, r->ver, &bid, &epoch, &fenced, &shutdown))
            return 0;
        PyObject *id = PyLong_FromLong(bid), *ep = PyLong_FromLongLong(epoch);
        got = id == NULL || ep == NULL ? -1 :
              broker_change_apply(f->spec, pl->b, id, ep, fenced, shutdown);
        Py_XDECREF(id);
        Py_XDECREF(ep);
        *reached = got > 0;
        return got;  /* 0: not registered, or another epoch: the handler's reference says so */
    } else {
        if ((got = read_config(buf, r->body, r->vend, r->ver, v)) <= 0)
            return got;
        *reached = 1;
        PyObject *items[2] = {v[0], v[1]};  /* tuple_of takes them */
        out = set_inner(pl->b, s_configs, tuple_of(2, items), v[2], v[3]);
        Py_DECREF(v[2]);
        Py_DECREF(v[3]);
    }
    if (out == NULL)
        return -1;
    Py_DECREF(out);
    return 1;
}

/* bytes_values(key, buf, pos, end, ver) -> the fields of a BrokerRegistrationChangeRecord
 * (key 17), ConfigRecord (key 4) or RegisterBrokerRecord (key 0: all but its endpoints
 * and features, and "section", their bytes) as run reads them from the body buf[pos:end]
 * (the decoder's keys), or None where it leaves the record to the decoder: for tests,
 * which compare it with the decoder. */
static PyObject *bytes_values(PyObject *self, PyObject *args)
{
    long key, ver;
    Py_buffer view;
    Py_ssize_t pos, end;
    if (!PyArg_ParseTuple(args, "ly*nnl", &key, &view, &pos, &end, &ver))
        return NULL;
    PyObject *out = NULL;
    if (pos < 0 || end < pos || end > view.len) {
        PyErr_SetString(PyExc_ValueError, "pos and end inside buf");
    } else if (key == BROKER_CHANGE_KEY) {
        int32_t bid;
        int64_t epoch;
        long fenced, shutdown;
        if (read_broker_change(view.buf, pos, end, ver, &bid, &epoch, &fenced, &shutdown))
            out = Py_BuildValue("{s:i,s:L,s:l,s:l}", "brokerId", bid, "brokerEpoch",
                                (long long)epoch, "fenced", fenced, "inControlledShutdown",
                                shutdown);
        else
            out = Py_NewRef(Py_None);
    } else if (key == CONFIG_KEY) {
        PyObject *v[4];
        int got = read_config(view.buf, pos, end, ver, v);
        if (got > 0) {
            out = Py_BuildValue("{s:N,s:N,s:N,s:N}", "resourceType", v[0], "resourceName", v[1],
                                "name", v[2], "value", v[3]);
        } else if (got == 0) {
            out = Py_NewRef(Py_None);
        }
    } else if (key == REGISTER_KEY) {
        PyObject *v[11];
        Py_ssize_t section, section_end;
        int got = register_section(view.buf, pos, end, ver, &section, &section_end) ?
                  read_register(view.buf, pos, section_end, end, ver, v) : 0;
        if (got > 0) {
            out = Py_BuildValue(
                "{s:N,s:N,s:N,s:y#,s:N,s:N,s:N,s:N,s:N,s:N}", "brokerId", v[0],
                "brokerEpoch", v[1], "incarnationId", v[2], "section",
                (const char *)view.buf + section, section_end - section, "rack", v[5],
                "fenced", v[6], "inControlledShutdown", v[7], "isMigratingZkBroker", v[8],
                "logDirs", v[9], "cordonedLogDirs", v[10]);
        } else if (got == 0) {
            out = Py_NewRef(Py_None);
        }
    } else {
        PyErr_SetString(PyExc_ValueError, "bytes_values: key 0, 4 or 17");
    }
    PyBuffer_Release(&view);
    return out;
}

/* The listeners of a registration: {name: Endpoint(name, host, port, securityProtocol)} of
 * the record's endPoints (a later one of a name replaces an earlier); NULL with no error
 * when an item is not such a struct. */
static PyObject *endpoints(PyObject *items, PyObject *cls, PyObject *fields, PyObject *offsets)
{
    if (!PyList_CheckExact(items))
        return NULL;
    PyObject *out = PyDict_New();
    for (Py_ssize_t i = 0; out != NULL && i < PyList_GET_SIZE(items); i++) {
        PyObject *e = PyList_GET_ITEM(items, i), *v[16], *ep = NULL;
        int n = (int)PyTuple_GET_SIZE(fields);  /* 1..16 (make_handler, class_offsets) */
        if (PyDict_CheckExact(e) && record_fields(e, &PyTuple_GET_ITEM(fields, 0), n, v) > 0)
            ep = slots_value(v, cls, offsets);
        /* keyed by its name, the first field */
        if (ep == NULL || PyDict_SetItem(out, v[0], ep) < 0)
            Py_CLEAR(out);
        Py_XDECREF(ep);
    }
    return out;
}

/* The supported features of a registration: {name: (min, max)} of the record's features;
 * NULL with no error when an item is not such a struct. */
static PyObject *features(PyObject *items)
{
    if (!PyList_CheckExact(items))
        return NULL;
    PyObject *out = PyDict_New();
    for (Py_ssize_t i = 0; out != NULL && i < PyList_GET_SIZE(items); i++) {
        PyObject *f = PyList_GET_ITEM(items, i);
        PyObject *name = NULL, *lo = NULL, *hi = NULL, *range = NULL;
        if (PyDict_CheckExact(f)) {
            name = PyDict_GetItemWithError(f, f_feature_name);
            lo = name == NULL ? NULL : PyDict_GetItemWithError(f, f_min_version);
            hi = lo == NULL ? NULL : PyDict_GetItemWithError(f, f_max_version);
        }
        if (hi != NULL) {
            Py_INCREF(lo);
            Py_INCREF(hi);
            PyObject *pair[2] = {lo, hi};
            range = tuple_of(2, pair);
        }
        if (range == NULL || PyDict_SetItem(out, name, range) < 0)
            Py_CLEAR(out);
        Py_XDECREF(range);
    }
    return out;
}

/* Whether the dicts a and b hold the same keys with values equal slot by slot: each value of
 * a an instance of `cls` (exactly) with the slots at `at[0..n-1]`, compared by
 * PyObject_RichCompareBool (a dataclass's __eq__ is Python code); any other value by
 * ==. 1, 0, or -1 on error. */
static int same_slots(PyObject *a, PyObject *b, PyTypeObject *cls, const Py_ssize_t *at,
                      Py_ssize_t n)
{
    if (!PyDict_CheckExact(a) || !PyDict_CheckExact(b) || PyDict_GET_SIZE(a) != PyDict_GET_SIZE(b))
        return a == b ? 1 : PyObject_RichCompareBool(a, b, Py_EQ);
    Py_ssize_t pos = 0;
    PyObject *key, *x;
    while (PyDict_Next(a, &pos, &key, &x)) {
        PyObject *y = PyDict_GetItemWithError(b, key);
        if (y == NULL)
            return PyErr_Occurred() ? -1 : 0;
        if (x == y)
            continue;
        if (Py_TYPE(x) != cls || Py_TYPE(y) != cls) {
            int eq = PyObject_RichCompareBool(x, y, Py_EQ);
            if (eq <= 0)
                return eq;
            continue;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *u = *(PyObject **)((char *)x + at[i]), *v = *(PyObject **)((char *)y + at[i]);
            int eq = u == NULL || v == NULL ? u == v : PyObject_RichCompareBool(u, v, Py_EQ);
            if (eq <= 0)
                return eq;
        }
    }
    return 1;
}

/* A re-registration's listeners and supported features (slots 3 and 4 of `reg`) replaced by
 * those of the broker's registration in the image when equal: one dict for every
 * registration of the same endpoints and features, as copies of a registration share them
 * already (a registration's dicts are never changed in place). `endpoint` and `ep_offsets`:
 * the Endpoint class and its slots' offsets. 0, or -1 on error. */
static int share_unchanged(const Builder *s, PyObject *bid, PyObject *reg, PyTypeObject *type,
                           const Py_ssize_t *at, PyTypeObject *endpoint, PyObject *ep_offsets)
{
    PyObject *brokers = attr(s->image, s_brokers);
    if (brokers == NULL)
        return -1;
    PyObject *old = PyDict_CheckExact(brokers) ? PyDict_GetItemWithError(brokers, bid) : NULL;
    int bad = old == NULL && PyErr_Occurred();
    if (old != NULL && Py_TYPE(old) == type) {
        for (int i = 3; i <= 4 && !bad; i++) {
            PyObject **mine = (PyObject **)((char *)reg + at[i]);
            PyObject *theirs = *(PyObject **)((char *)old + at[i]);
            int eq = theirs == NULL ? 0 : i == 4 ?
                PyObject_RichCompareBool(*mine, theirs, Py_EQ) :
                same_slots(*mine, theirs, endpoint, (const Py_ssize_t *)PyBytes_AS_STRING(ep_offsets),
                           PyBytes_GET_SIZE(ep_offsets) / (Py_ssize_t)sizeof(Py_ssize_t));
            bad = eq < 0;
            if (eq > 0) {
                Py_INCREF(theirs);
                Py_SETREF(*mine, theirs);
            }
        }
    }
    Py_DECREF(brokers);
    return bad ? -1 : 0;
}

/* A BrokerRegistration of the values v (its 11 fields in order, new references, taken
 * even on error): an instance of `type`, its slots at `offsets` (a register_broker
 * handler's spec: setup_handlers' class when it was made); NULL on error. */
static PyObject *registration_of(PyTypeObject *type, PyObject *offsets, PyObject **v)
{
    PyObject *reg = !PyBytes_Check(offsets) ||
                    PyBytes_GET_SIZE(offsets) != 11 * (Py_ssize_t)sizeof(Py_ssize_t) ?
                    NULL : type->tp_alloc(type, 0);
    if (reg == NULL) {
        for (int i = 0; i < 11; i++)
            Py_DECREF(v[i]);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "BrokerRegistration has 11 fields");
        return NULL;
    }
    const Py_ssize_t *at = (const Py_ssize_t *)PyBytes_AS_STRING(offsets);
    for (int i = 0; i < 11; i++)
        *(PyObject **)((char *)reg + at[i]) = v[i];
    return reg;
}

/* RegisterBrokerRecord (spec: (BrokerRegistration, its field offsets, Endpoint, the
 * endpoint fields, their offsets, fallback)): b.put("brokers", id, BrokerRegistration(...))
 * for a registration of at most one log dir and no cordoned ones (their order is the
 * reference's: Kafka's Uuid order). */
static PyObject *register_broker_handler(PyObject *spec, PyObject *const *args,
                                         Py_ssize_t nargs)
{
    if (!handler_args(spec, nargs, args, 6))
        return NULL;
    PyObject *d = args[1];
    PyObject *v[11];  /* the record's values, in BrokerRegistration's field order */
    PyObject *const keys[11] = {f_broker_id, f_broker_epoch, f_incarnation, f_endpoints,
                                f_features, f_rack, f_fenced, f_shutdown, f_migrating,
                                f_log_dirs, f_cordoned};
    int got = record_fields(d, keys, 11, v);
    if (got <= 0)
        return got < 0 ? NULL : fall_back(spec, args);
    if (v[10] != Py_None || !PyList_CheckExact(v[9]) || PyList_GET_SIZE(v[9]) > 1)
        return fall_back(spec, args);
    PyObject *listeners = endpoints(v[3], PyTuple_GET_ITEM(spec, 2), PyTuple_GET_ITEM(spec, 3),
                                    PyTuple_GET_ITEM(spec, 4));
    PyObject *supported = listeners == NULL ? NULL : features(v[4]);
    PyObject *dirs = supported == NULL ? NULL : PyList_GetSlice(v[9], 0, 1);
    if (dirs == NULL) {
        Py_XDECREF(listeners);
        Py_XDECREF(supported);
        return PyErr_Occurred() ? NULL : fall_back(spec, args);
    }
    for (int i = 0; i < 11; i++)
        if (i != 3 && i != 4 && i != 9)
            Py_INCREF(v[i]);  /* the three made here are new already */
    v[3] = listeners;
    v[4] = supported;
    v[9] = dirs;
    const Py_ssize_t *at = (const Py_ssize_t *)PyBytes_AS_STRING(PyTuple_GET_ITEM(spec, 1));
    PyTypeObject *type = (PyTypeObject *)PyTuple_GET_ITEM(spec, 0);
    PyObject *reg = registration_of(type, PyTuple_GET_ITEM(spec, 1), v);
    if (reg == NULL)
        return NULL;
    PyObject *result = NULL;
    Builder s = {NULL, NULL, NULL};
    if (builder_of(args[0], &s) == 0 && share_unchanged(&s, v[0], reg, type, at, (PyTypeObject *)PyTuple_GET_ITEM(spec, 2),
                                    PyTuple_GET_ITEM(spec, 4)) == 0 &&
            builder_put(&s, s_brokers, v[0], reg) == 0) {
        result = Py_None;
        Py_INCREF(result);
    }
    builder_release(&s);
    Py_DECREF(reg);
    return result;
}

static PyMethodDef handler_defs[] = {
    {"put", (PyCFunction)(void (*)(void))put_handler, METH_FASTCALL, NULL},
    {"drop", (PyCFunction)(void (*)(void))drop_handler, METH_FASTCALL, NULL},
    {"scalar", (PyCFunction)(void (*)(void))scalar_handler, METH_FASTCALL, NULL},
    {"broker_change", (PyCFunction)(void (*)(void))broker_change_handler, METH_FASTCALL, NULL},
    {"config", (PyCFunction)(void (*)(void))config_handler, METH_FASTCALL, NULL},
    {"register_broker", (PyCFunction)(void (*)(void))register_broker_handler, METH_FASTCALL,
     NULL},
    {"client_quota", (PyCFunction)(void (*)(void))quota_handler, METH_FASTCALL, NULL},
};

/* handler(kind, spec) -> a handler (builder, record, offset) for image.replay.HANDLERS.
 *
 * kind "put": spec (map name, key fields, cls, cls's field names, value fields, fallback),
 * cls a slots class whose fields are made of the value fields in order; "drop": (map name,
 * key fields, said, fallback); "scalar": (image attribute, field, fallback);
 * "broker_change", "config", "client_quota": (fallback,). Key fields: a tuple of one or two record field
 * names. `fallback`: the Python handler, which gets what the compiled one does not take. */
static PyObject *make_handler(PyObject *self, PyObject *args)
{
    const char *kind;
    PyObject *spec;
    if (!PyArg_ParseTuple(args, "sO!", &kind, &PyTuple_Type, &spec))
        return NULL;
    if (tomb == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "setup_handlers first");
        return NULL;
    }
    for (size_t i = 0; i < sizeof handler_defs / sizeof handler_defs[0]; i++) {
        if (strcmp(kind, handler_defs[i].ml_name) != 0)
            continue;
        PyObject *bound = NULL;
        if (i == 0) {  /* put: the slot offsets of cls's fields, one a value field */
            PyObject *cls, *names, *values, *keys, *map, *fallback, *offsets;
            if (!PyArg_ParseTuple(spec, "UO!O!O!O!O", &map, &PyTuple_Type, &keys, &PyType_Type,
                                  &cls, &PyTuple_Type, &names, &PyTuple_Type, &values,
                                  &fallback))
                return NULL;
            if (PyTuple_GET_SIZE(names) != PyTuple_GET_SIZE(values) ||
                    PyTuple_GET_SIZE(keys) < 1 || PyTuple_GET_SIZE(keys) > 2) {
                PyErr_SetString(PyExc_ValueError, "put: a value field for each slot, one or "
                                "two key fields");
                return NULL;
            }
            if ((offsets = class_offsets(cls, names)) == NULL)
                return NULL;
            bound = Py_BuildValue("(OOOOOO)", map, keys, cls, values, offsets, fallback);
            Py_DECREF(offsets);
        } else if (i == 3 || i == 5) {
            /* broker_change: (fallback,); register_broker: (fallback, Endpoint, its names,
             * the record's endpoint fields), with setup_handlers' BrokerRegistration */
            PyObject *fallback, *cls = NULL, *names = NULL, *values = NULL, *offsets = NULL;
            if (!PyArg_ParseTuple(spec, i == 3 ? "O" : "OO!O!O!", &fallback, &PyType_Type, &cls,
                                  &PyTuple_Type, &names, &PyTuple_Type, &values))
                return NULL;
            if (broker_offsets == NULL) {
                PyErr_SetString(PyExc_RuntimeError, "setup_handlers first");
                return NULL;
            }
            if (i == 3) {
                bound = Py_BuildValue("(OO)", broker_offsets, fallback);
            } else if (PyTuple_GET_SIZE(names) != PyTuple_GET_SIZE(values) ||
                       PyTuple_GET_SIZE(values) < 1) {
                PyErr_SetString(PyExc_ValueError, "register_broker: a field for each slot");
            } else if ((offsets = class_offsets(cls, names)) != NULL) {
                bound = Py_BuildValue("(OOOOOO)", broker_type, broker_offsets, cls, values,
                                      offsets, fallback);
                Py_DECREF(offsets);
            }
        } else {
            bound = spec;
            Py_INCREF(bound);
        }
        if (bound == NULL)
            return NULL;
        PyObject *fn = PyCFunction_New(&handler_defs[i], bound);
        Py_DECREF(bound);
        return fn;
    }
    PyErr_Format(PyExc_ValueError, "no handler kind %s", kind);
    return NULL;
}

/* setup_handlers(TOMB, BrokerRegistration, its field names): the journal's removal mark,
 * the registrations' class, and the names the handlers use. */
static PyObject *setup_handlers(PyObject *self, PyObject *args)
{
    PyObject *marker, *cls, *fields;
    if (!PyArg_ParseTuple(args, "OO!O!", &marker, &PyType_Type, &cls, &PyTuple_Type, &fields))
        return NULL;
    if (PyTuple_GET_SIZE(fields) != 11) {
        PyErr_SetString(PyExc_ValueError, "BrokerRegistration has 11 fields");
        return NULL;
    }
    PyObject *offsets = class_offsets(cls, fields);
    if (offsets == NULL)
        return NULL;
    Py_XSETREF(broker_offsets, offsets);
    Py_INCREF(cls);
    Py_XSETREF(broker_type, (PyTypeObject *)cls);
    const char *names[] = {"writable", "broker", "maps", "log", "values", "resets", "epoch",
                           "fenced", "in_controlled_shutdown", "brokers", "configs",
                           "brokerId", "brokerEpoch", "fenced", "inControlledShutdown",
                           "logDirs", "cordonedLogDirs", "resourceType", "resourceName",
                           "name", "value", "incarnationId", "endPoints", "features", "rack",
                           "isMigratingZkBroker", "name", "minSupportedVersion",
                           "maxSupportedVersion", "client_quotas", "entityType", "entityName",
                           "remove", "key", "entity"};
    PyObject **slots[] = {&s_writable, &s_broker_fn, &s_maps, &s_log_fn, &s_values, &s_resets,
                          &s_epoch_attr, &s_fenced, &s_shutdown, &s_brokers, &s_configs,
                          &f_broker_id, &f_broker_epoch, &f_fenced, &f_shutdown, &f_log_dirs,
                          &f_cordoned, &f_resource_type, &f_resource_name, &f_name, &f_value,
                          &f_incarnation, &f_endpoints, &f_features, &f_rack, &f_migrating,
                          &f_feature_name, &f_min_version, &f_max_version, &s_client_quotas,
                          &f_entity_type, &f_entity_name, &f_remove, &f_key, &f_entity};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (*slots[i] == NULL && (*slots[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return NULL;
    if (s_image == NULL && (s_image = PyUnicode_InternFromString("image")) == NULL)
        return NULL;
    if (s_owned == NULL && (s_owned = PyUnicode_InternFromString("_owned")) == NULL)
        return NULL;
    Py_INCREF(marker);
    Py_XSETREF(tomb, marker);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ column facts */

/* The signed integer at items[i] of a buffer of `width` bytes an item (2, 4 or 8). */
static inline int64_t item_at(const void *items, Py_ssize_t width, Py_ssize_t i)
{
    const char *at = (const char *)items + i * width;  /* memcpy: any alignment */
    if (width == 8) {
        int64_t x;
        memcpy(&x, at, 8);
        return x;
    }
    if (width == 4) {
        int32_t x;
        memcpy(&x, at, 4);
        return x;
    }
    int16_t x;
    memcpy(&x, at, 2);
    return x;
}

/* A header column (an array of signed integers: h, i, l or q) taken as a buffer; 0 (no
 * error set) when it is not one. */
static int signed_column(PyObject *col, Py_buffer *view)
{
    if (PyObject_GetBuffer(col, view, PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        return 0;
    }
    const char *f = view->format;
    int ok = f != NULL && f[0] != '\0' && f[1] == '\0' && strchr("hilq", f[0]) != NULL &&
             (view->itemsize == 2 || view->itemsize == 4 || view->itemsize == 8);
    if (!ok)
        PyBuffer_Release(view);
    return ok;
}

/* bounds(column) -> (min, max), None for an empty column or one it does not take (an array
 * of signed integers: h, i, l or q): min() and max() of it, in one pass and without an int
 * object an item. */
static PyObject *bounds(PyObject *self, PyObject *col)
{
    Py_buffer v;
    if (!signed_column(col, &v))
        Py_RETURN_NONE;
    Py_ssize_t n = v.len / v.itemsize;
    if (n == 0) {
        PyBuffer_Release(&v);
        Py_RETURN_NONE;
    }
    int64_t lo = item_at(v.buf, v.itemsize, 0), hi = lo;
    for (Py_ssize_t i = 1; i < n; i++) {
        int64_t x = item_at(v.buf, v.itemsize, i);
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
    }
    PyBuffer_Release(&v);
    return Py_BuildValue("(LL)", (long long)lo, (long long)hi);
}

/* ascending(column) -> whether no item is less than the one before; None for a column it
 * does not take (as bounds). */
static PyObject *ascending(PyObject *self, PyObject *col)
{
    Py_buffer v;
    if (!signed_column(col, &v))
        Py_RETURN_NONE;
    Py_ssize_t n = v.len / v.itemsize;
    int up = 1;
    for (Py_ssize_t i = 1; i < n && up; i++)
        up = item_at(v.buf, v.itemsize, i - 1) <= item_at(v.buf, v.itemsize, i);
    PyBuffer_Release(&v);
    return PyBool_FromLong(up);
}

/* ------------------------------------------------------------------ one-NoOp batches */

/* kept(n, skipped) -> bytes: the indices 0..n-1 but those in `skipped` (a list of ints, in
 * any order; ones outside 0..n-1 are passed over), and always n-1, in order, as native
 * int64s (array("q") reads them): cleanwalk.plan's batches to hand out. */
static PyObject *kept(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "kept(n, skipped: list)");
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[0]);
    if (n < 0)
        return PyErr_Occurred() ? NULL : PyBytes_FromStringAndSize(NULL, 0);
    uint8_t *skip = PyMem_Calloc((size_t)n + 1, 1);
    if (skip == NULL)
        return PyErr_NoMemory();
    Py_ssize_t count = n;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(args[1]); i++) {
        Py_ssize_t at = PyLong_AsSsize_t(PyList_GET_ITEM(args[1], i));
        if (at == -1 && PyErr_Occurred()) {
            PyMem_Free(skip);
            return NULL;
        }
        if (at >= 0 && at < n - 1 && !skip[at]) {
            skip[at] = 1;
            count--;
        }
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int64_t));
    if (out != NULL) {
        int64_t *to = (int64_t *)PyBytes_AS_STRING(out);
        for (Py_ssize_t i = 0; i < n; i++)
            if (!skip[i])
                *to++ = (int64_t)i;
    }
    PyMem_Free(skip);
    return out;
}

/* noop_batches(data, starts, length, attrs, count, last_delta, n, noop_key[, as_plan])
 *     -> [index], or the plan (bytes of int64)
 *
 * cleanwalk._noops_one_by_one over range(n) (the reference): the indices, ascending, of the
 * first n batches (header columns as the fast walk's arrays: q, i, h, i, i) that are plain
 * (no codec, not control), hold one record with last offset delta 0, have a records section
 * of at most NOOP_SECTION bytes inside `data`, and whose one record frames (parse_record:
 * offset 0, timestamp 0, no length limit) as a NoOpRecord (key `noop_key` in the frame
 * header's 3-byte form). With `as_plan` true: the plan of the n batches instead (kept's,
 * of those indices: every batch but those, the last one always in), without the list. None
 * for arguments it does not take (the reference runs). A section that is byte for byte the
 * last one found a NoOp is one without framing it again (a quiet log's NoOps are alike). */
#define NOOP_SECTION 24
static PyObject *noop_batches(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    static const Py_ssize_t width[5] = {8, 4, 2, 4, 4};
    if ((nargs != 8 && nargs != 9) || !PyBytes_CheckExact(args[0]))
        Py_RETURN_NONE;
    Py_ssize_t n = PyLong_AsSsize_t(args[6]);
    long noop_key = PyLong_AsLong(args[7]);
    int as_plan = nargs == 9 ? PyObject_IsTrue(args[8]) : 0;
    if (as_plan < 0 || PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_buffer v[5];
    int held = 0, fits = n >= 0;
    for (; held < 5 && fits; held++) {
        if (PyObject_GetBuffer(args[1 + held], &v[held], PyBUF_FORMAT) < 0) {
            PyErr_Clear();
            break;
        }
        fits = v[held].itemsize == width[held] && v[held].len / width[held] >= n;
    }
    PyObject *out = NULL;
    if (held == 5 && fits) {
        const uint8_t *buf = (const uint8_t *)PyBytes_AS_STRING(args[0]);
        Py_ssize_t size = PyBytes_GET_SIZE(args[0]);
        const int64_t *starts = v[0].buf;
        const int32_t *length = v[1].buf, *count = v[3].buf, *delta = v[4].buf;
        const int16_t *attrs = v[2].buf;
        int64_t *plan = NULL;
        Py_ssize_t planned = 0;
        const uint8_t *last = NULL;  /* the last section found a NoOp, and its size */
        Py_ssize_t last_size = -1;
        if (as_plan) {
            out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
            plan = out == NULL ? NULL : (int64_t *)PyBytes_AS_STRING(out);
        } else {
            out = PyList_New(0);
        }
        for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
            int noop = 0;
            if (length[i] <= NOOP_SECTION + MIN_BATCH_LENGTH && !(attrs[i] & 0x27) &&
                    count[i] == 1 && delta[i] == 0) {
                int64_t pos = starts[i] + HEADER_SIZE, end = starts[i] + LOG_OVERHEAD + length[i];
                if (end > size)
                    end = size;  /* as the reference's slice is cut */
                if (starts[i] >= 0 && pos <= end) {  /* else an empty section: no record */
                    Py_ssize_t at = (Py_ssize_t)pos, k = (Py_ssize_t)(end - pos);
                    Rec r;
                    noop = (k == last_size && memcmp(buf + pos, last, (size_t)k) == 0) ||
                           (parse_record(buf, &at, (Py_ssize_t)end, 0, 0, 0, INT64_MAX, &r) &&
                            r.key == noop_key);
                    if (noop) {
                        last = buf + pos;
                        last_size = k;
                    }
                }
            }
            if (as_plan) {
                if (!noop || i == n - 1)
                    plan[planned++] = (int64_t)i;
            } else if (noop) {
                PyObject *index = PyLong_FromSsize_t(i);
                if (index == NULL || PyList_Append(out, index) < 0)
                    Py_CLEAR(out);
                Py_XDECREF(index);
            }
        }
        if (out != NULL && as_plan &&
                _PyBytes_Resize(&out, planned * (Py_ssize_t)sizeof(int64_t)) < 0)
            out = NULL;
    }
    for (int c = 0; c < held; c++)
        PyBuffer_Release(&v[c]);
    if (out == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return out;
}

/* ------------------------------------------------------------------ module */

/* crc32c(data, start, end) with the CRC function given (the dispatching one or the tables). */
static PyObject *crc_with(PyObject *args, uint32_t (*fn)(const uint8_t *, Py_ssize_t))
{
    Py_buffer view;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "y*nn", &view, &start, &end))
        return NULL;
    if (start < 0 || end > view.len || start > end) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "range outside the buffer");
        return NULL;
    }
    uint32_t c = fn((const uint8_t *)view.buf + start, end - start);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

static PyObject *crc(PyObject *self, PyObject *args)
{
    return crc_with(args, crc32c);
}

static PyObject *crc_portable(PyObject *self, PyObject *args)
{
    return crc_with(args, crc32c_tables);
}

static PyObject *crc_hardware_used(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(crc_hardware);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(data, pos, limit) -> (starts, base, length, epoch, crc, attrs, last_delta, "
     "base_ts, max_ts, count, magic, good, follows) as native columns, or None (unclean)"},
    {"frame", (PyCFunction)(void (*)(void))frame, METH_FASTCALL,
     "frame(buf, pos, end, count, base, base_ts, shape, control, batch_size) -> the records "
     "(framing.frame), "
     "or None"},
    {"crc32c", crc, METH_VARARGS, "crc32c(data, start, end) -> int"},
    {"crc32c_portable", crc_portable, METH_VARARGS,
     "crc32c_portable(data, start, end) -> int: the table-driven reference (for tests)"},
    {"crc32c_hardware", crc_hardware_used, METH_NOARGS,
     "crc32c_hardware() -> whether crc32c uses the CPU's crc32 instruction"},
    {"decode", (PyCFunction)(void (*)(void))decode, METH_FASTCALL,
     "decode(data, pos, end, count, base, base_ts, lo, hi, batch_size, ctx) -> (decoded, "
     "last) or None"},
    {"check", (PyCFunction)(void (*)(void))check_batches, METH_FASTCALL,
     "check(data, heads, lo, hi, ctx) -> the first batch of lo..hi-1 the reference must read"},
    {"check_section", (PyCFunction)(void (*)(void))check_section, METH_FASTCALL,
     "check_section(data, pos, end, count, base, base_ts, batch_size, ctx) -> decodes "
     "cleanly?"},
    {"setup_partitions", setup_partitions, METH_VARARGS,
     "setup_partitions(Partition, field_names, MIGRATING_DIR): the class changes make"},
    {"partition_change", (PyCFunction)(void (*)(void))partition_change, METH_FASTCALL,
     "partition_change(builder, record, offset): a PartitionChangeRecord applied"},
    {"change_values", change_values, METH_VARARGS,
     "change_values(buf, pos, end, ver) -> a PartitionChangeRecord's fields as read from its "
     "bytes by the run loop, or None where the decoder reads it (for tests)"},
    {"bytes_values", bytes_values, METH_VARARGS,
     "bytes_values(key, buf, pos, end, ver) -> a broker change's or config's fields as read "
     "from its bytes by the run loop, or None where the decoder reads it (for tests)"},
    {"kept", (PyCFunction)(void (*)(void))kept, METH_FASTCALL,
     "kept(n, skipped) -> the indices below n but the skipped ones, and n-1, as int64 bytes"},
    {"txn_span", txn_span, METH_VARARGS,
     "txn_span(decoded, i) -> the end of the records from i a metadata transaction keeps"},
    {"read_attr", read_attr, METH_VARARGS,
     "read_attr(obj, name) -> obj.name as the compiled handlers read it (for tests)"},
    {"elr_held", elr_held, METH_O,
     "elr_held(partitions) -> the ids of the partitions that may hold ELR or last known ELR "
     "(the others hold none and decode cleanly)"},
    {"put_partitions", (PyCFunction)(void (*)(void))put_partitions, METH_FASTCALL,
     "put_partitions(decoded, i, topic_fn, noted, unknown_fn) -> (next, stored)"},
    {"setup_handlers", setup_handlers, METH_VARARGS,
     "setup_handlers(TOMB, BrokerRegistration, its field names): before handler()"},
    {"handler", make_handler, METH_VARARGS,
     "handler(kind, spec) -> a compiled record handler (put, drop, scalar, broker_change, "
     "config) falling back to spec's last item"},
    {"bounds", bounds, METH_O, "bounds(column) -> (min, max) of an array of signed integers, "
     "or None"},
    {"ascending", ascending, METH_O, "ascending(column) -> no item below the one before? "
     "(or None)"},
    {"noop_batches", (PyCFunction)(void (*)(void))noop_batches, METH_FASTCALL,
     "noop_batches(data, starts, length, attrs, count, last_delta, n, noop_key) -> indices "
     "of the one-NoOp batches among the first n, or None"},
    {"run", (PyCFunction)(void (*)(void))run, METH_FASTCALL,
     "run(data, cols, plan, k, upto, skip_below, ctx) -> (k, since, applied, why) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cwalk", "A clean segment's walk and framing in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__cwalk(void)
{
    crc_init();
#ifdef HAVE_SSE42_CRC
    __builtin_cpu_init();
    crc_hardware = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#endif
    check = (CheckFn)PyCapsule_Import("mdshell.wire._cdecode._check", 0);
    if (check == NULL)
        PyErr_Clear();  /* _cdecode not built: decoders are called for their check mode */
    decode_c = (DecodeFn)PyCapsule_Import("mdshell.wire._cdecode._decode", 0);
    if (decode_c == NULL)
        PyErr_Clear();  /* not built: every record goes through decode_batch */
    fields_c = (FieldsFn)PyCapsule_Import("mdshell.wire._cdecode._fields", 0);
    fields_index = (FieldsIndexFn)PyCapsule_Import("mdshell.wire._cdecode._fields_index", 0);
    if (fields_c == NULL || fields_index == NULL) {
        PyErr_Clear();  /* an older _cdecode: records are decoded into dicts */
        fields_c = NULL;
    }
    const char *names[] = {"txn", "journal", "offset", "epoch", "time_ms", "at"};
    PyObject **slots[] = {&s_txn, &s_journal, &s_offset, &s_epoch, &s_time_ms, &s_at};
    for (int i = 0; i < 6; i++)
        if ((*slots[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return NULL;
    if (PyType_Ready(&IdSetType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "IdSet", (PyObject *)&IdSetType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
