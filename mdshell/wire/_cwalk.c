/* The walk of a clean log segment and the framing of its records, at C speed.
 *
 * Optional (setup.py): mdshell/wire/cwalk.py says when it is used, and the pure-Python
 * code it stands for gives the same results (tests compare them on every fixture, the
 * corpus and damaged copies). Nothing here judges damage: when anything is not as a clean
 * batch has it, a function returns None and the Python code reads the bytes its own way,
 * so errors and warnings have one source.
 *
 *   scan(data, pos, limit)        the batches from pos on, their headers as columns, how
 *                                 many lead with a right CRC-32C and how many with offsets
 *                                 that follow on
 *   frame(buf, pos, end, count, base, metadata)
 *                                 a batch's records framed: wire.batch.ranges_in
 *   crc32c(data, start, end)      CRC-32C of data[start:end] (for tests)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

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

static uint32_t crc32c(const uint8_t *p, Py_ssize_t n)
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

/* An unsigned varint of at most 5 bytes (the fields framed here are 32-bit), read inside
 * [*p, end); 0 when it is longer or runs past ``end`` (the caller gives up). */
static inline int uvar32(const uint8_t *buf, Py_ssize_t *p, Py_ssize_t end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (*p >= end)
            return 0;
        uint8_t b = buf[(*p)++];
        v |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

static inline int64_t unzig(uint64_t n)
{
    return (int64_t)(n >> 1) ^ -(int64_t)(n & 1);
}

/* (off, vpos, vend[, key, ver, body]) as ranges_in makes them; NULL on no memory. */
static PyObject *record_tuple(int metadata, int64_t off, Py_ssize_t vpos, Py_ssize_t vend,
                              long key, long ver, Py_ssize_t body)
{
    PyObject *t = PyTuple_New(metadata ? 6 : 3);
    if (t == NULL)
        return NULL;
    PyObject *items[6] = {PyLong_FromLongLong(off), PyLong_FromSsize_t(vpos),
                          PyLong_FromSsize_t(vend), NULL, NULL, NULL};
    if (metadata) {
        items[3] = PyLong_FromLong(key);
        items[4] = PyLong_FromLong(ver);
        items[5] = PyLong_FromSsize_t(body);
    }
    for (int i = 0; i < (metadata ? 6 : 3); i++) {
        if (items[i] == NULL) {
            for (int j = 0; j < 6; j++)
                Py_XDECREF(items[j]);
            Py_DECREF(t);
            return NULL;
        }
    }
    for (int i = 0; i < (metadata ? 6 : 3); i++)
        PyTuple_SET_ITEM(t, i, items[i]);
    return t;
}

/* The records of buf[pos:end]: a list of tuples, None when anything is off (or an
 * argument is out of range), NULL on no memory. */
static PyObject *frame_records(const uint8_t *buf, Py_ssize_t len, Py_ssize_t pos,
                               Py_ssize_t end, Py_ssize_t count, long long base, int metadata)
{
    PyObject *out = NULL;
    /* Every read stays inside [pos, end): anything else is left to the Python loop. */
    if (pos < 0 || end > len || pos > end || count < 0 || count > end - pos)
        goto give_up;
    out = PyList_New(count);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint64_t n;
        if (!uvar32(buf, &pos, end, &n))
            goto give_up;
        int64_t length = unzig(n);
        if (length < 1 || length > end - pos)
            goto give_up;
        Py_ssize_t rec_end = pos + (Py_ssize_t)length, p = pos + 1;  /* past attributes */
        /* timestamp delta: a varlong, skipped */
        while (p < rec_end && buf[p] >= 0x80)
            p++;
        if (++p > rec_end || !uvar32(buf, &p, rec_end, &n))
            goto give_up;
        int64_t off;
        if (__builtin_add_overflow((int64_t)base, unzig(n), &off))
            goto give_up;
        if (!uvar32(buf, &p, rec_end, &n))
            goto give_up;
        int64_t klen = unzig(n);
        if (klen > 0) {
            if (klen > rec_end - p)
                goto give_up;
            p += (Py_ssize_t)klen;
        }
        if (!uvar32(buf, &p, rec_end, &n))
            goto give_up;
        int64_t vlen = unzig(n);
        if (vlen > rec_end - p)
            goto give_up;  /* a value past its record: the Python loop says what it is */
        Py_ssize_t vend = vlen >= 0 ? p + (Py_ssize_t)vlen : -1;
        PyObject *t;
        if (metadata && vlen >= 3 && buf[p] == 1 && buf[p + 1] < 0x80 && buf[p + 2] < 0x80)
            t = record_tuple(1, off, p, vend, buf[p + 1], buf[p + 2], p + 3);
        else
            t = record_tuple(metadata, off, p, vend, -1, -1, p);
        if (t == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, t);
        pos = rec_end;
    }
    if (pos != end)
        goto give_up;
    return out;
give_up:
    Py_XDECREF(out);
    Py_RETURN_NONE;
}

/* frame(buf, pos, end, count, base, metadata): called once a batch, so its arguments are
 * taken without PyArg_ParseTuple's format parsing; bytes without the buffer protocol. */
static PyObject *frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "frame(buf, pos, end, count, base, metadata)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    Py_ssize_t count = PyLong_AsSsize_t(args[3]);
    long long base = PyLong_AsLongLong(args[4]);
    int metadata = PyObject_IsTrue(args[5]);
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return NULL;  /* not integers: a caller's mistake */
        PyErr_Clear();
        Py_RETURN_NONE;  /* out of range: the Python loop reads it */
    }
    if (PyBytes_CheckExact(args[0]))
        return frame_records((const uint8_t *)PyBytes_AS_STRING(args[0]),
                             PyBytes_GET_SIZE(args[0]), pos, end, count, base, metadata);
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *out = frame_records(view.buf, view.len, pos, end, count, base, metadata);
    PyBuffer_Release(&view);
    return out;
}

/* ------------------------------------------------------------------ module */

static PyObject *crc(PyObject *self, PyObject *args)
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
    uint32_t c = crc32c((const uint8_t *)view.buf + start, end - start);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(data, pos, limit) -> (starts, base, length, epoch, crc, attrs, last_delta, "
     "base_ts, max_ts, count, magic, good, follows) as native columns, or None (unclean)"},
    {"frame", (PyCFunction)(void (*)(void))frame, METH_FASTCALL,
     "frame(buf, pos, end, count, base, metadata) -> the records' ranges, or None"},
    {"crc32c", crc, METH_VARARGS, "crc32c(data, start, end) -> int"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cwalk", "A clean segment's walk and framing in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__cwalk(void)
{
    crc_init();
    return PyModule_Create(&module);
}
