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
 *   frame(buf, pos, end, count, base, metadata)
 *                                 a batch's records framed: wire.batch.ranges_in
 *   run(...)                      Replayer.apply_run's loop over plain one-record batches
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

/* One framed record, as ranges_in gives it (key and ver -1 when the metadata frame header
 * is not in its 3-byte form). */
typedef struct {
    int64_t off;
    Py_ssize_t vpos, vend, body;
    long key, ver;
} Rec;

/* The record at *pos inside [*pos, end), *pos moved past it; 0 when anything is off (the
 * Python loop then reads it and says what). */
static int parse_record(const uint8_t *buf, Py_ssize_t *at, Py_ssize_t end, long long base,
                        int metadata, Rec *r)
{
    Py_ssize_t pos = *at;
    uint64_t n;
    if (!uvar32(buf, &pos, end, &n))
        return 0;
    int64_t length = unzig(n);
    if (length < 1 || length > end - pos)
        return 0;
    Py_ssize_t rec_end = pos + (Py_ssize_t)length, p = pos + 1;  /* past attributes */
    /* timestamp delta: a varlong, skipped */
    while (p < rec_end && buf[p] >= 0x80)
        p++;
    if (++p > rec_end || !uvar32(buf, &p, rec_end, &n))
        return 0;
    if (__builtin_add_overflow((int64_t)base, unzig(n), &r->off))
        return 0;
    if (!uvar32(buf, &p, rec_end, &n))
        return 0;
    int64_t klen = unzig(n);
    if (klen > 0) {
        if (klen > rec_end - p)
            return 0;
        p += (Py_ssize_t)klen;
    }
    if (!uvar32(buf, &p, rec_end, &n))
        return 0;
    int64_t vlen = unzig(n);
    if (vlen > rec_end - p)
        return 0;  /* a value past its record: the Python loop says what it is */
    r->vpos = p;
    r->vend = vlen >= 0 ? p + (Py_ssize_t)vlen : -1;
    if (metadata && vlen >= 3 && buf[p] == 1 && buf[p + 1] < 0x80 && buf[p + 2] < 0x80) {
        r->key = buf[p + 1];
        r->ver = buf[p + 2];
        r->body = p + 3;
    } else {
        r->key = r->ver = -1;
        r->body = p;
    }
    *at = rec_end;
    return 1;
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
        Rec r;
        if (!parse_record(buf, &pos, end, base, metadata, &r))
            goto give_up;
        PyObject *t = record_tuple(metadata, r.off, r.vpos, r.vend, r.key, r.ver, r.body);
        if (t == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, t);
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

/* ------------------------------------------------------------------ run */

/* Attribute names run() sets and reads, interned at import. */
static PyObject *s_txn, *s_journal, *s_offset, *s_epoch, *s_time_ms, *s_pos, *s_at;

static inline long long item_ll(PyObject *list, Py_ssize_t i)
{
    return PyLong_AsLongLong(PyList_GET_ITEM(list, i));
}

/* Whether the builder is outside a metadata transaction (-1: error). */
static int no_txn(PyObject *b)
{
    PyObject *txn = PyObject_GetAttr(b, s_txn);
    if (txn == NULL)
        return -1;
    int none = txn == Py_None;
    Py_DECREF(txn);
    return none;
}

/* prov.offset, prov.epoch, prov.time_ms = offset, epoch, time_ms (borrowed/new refs as
 * given: ``offset`` is stolen). */
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

/* run(data, cols, plan, k, upto, skip_below, ctx) -> (k, since, applied, why)
 *
 * Replayer.apply_run's loop (image/history.py says what it does and why), for bytes data
 * and a plain builder. ctx: (builder, provenance, plans, plain_kind, every, since,
 * unknown_key, noop_key, replayer). It stops at the first batch it leaves to Python
 * (why 0: k is its index, the NoOps before it passed over already; k == len(plan): none
 * left), or after a batch that makes a history mark due (why 1: k is that batch's index).
 * ``applied``: the records it applied, for builder.records_applied. None for arguments it
 * does not take (the Python loop runs). A handler's exception propagates, with
 * replayer.at naming its batch and (since, applied) left in replayer._run_state. */
static PyObject *run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7 || !PyBytes_CheckExact(args[0]) || !PyTuple_Check(args[1]) ||
        PyTuple_GET_SIZE(args[1]) != 8 || !PyList_Check(args[2]) || !PyTuple_Check(args[6]) ||
        PyTuple_GET_SIZE(args[6]) != 9)
        Py_RETURN_NONE;
    PyObject *data = args[0], *plan = args[2], *ctx = args[6];
    PyObject *cols[8];
    for (int c = 0; c < 8; c++) {
        cols[c] = PyTuple_GET_ITEM(args[1], c);
        if (!PyList_Check(cols[c]))
            Py_RETURN_NONE;
    }
    PyObject *starts = cols[0], *base = cols[1], *length = cols[2], *delta = cols[3];
    PyObject *epoch = cols[4], *max_ts = cols[5], *attrs = cols[6], *count = cols[7];
    PyObject *b = PyTuple_GET_ITEM(ctx, 0), *prov = PyTuple_GET_ITEM(ctx, 1);
    PyObject *plans = PyTuple_GET_ITEM(ctx, 2), *plain_kind = PyTuple_GET_ITEM(ctx, 3);
    PyObject *unknown_key = PyTuple_GET_ITEM(ctx, 6), *replayer = PyTuple_GET_ITEM(ctx, 8);
    if (!PyDict_Check(plans))
        Py_RETURN_NONE;
    Py_ssize_t k = PyLong_AsSsize_t(args[3]);
    int has_upto = args[4] != Py_None;
    long long upto = has_upto ? PyLong_AsLongLong(args[4]) : 0;
    long long skip_below = PyLong_AsLongLong(args[5]);
    long long every = PyLong_AsLongLong(PyTuple_GET_ITEM(ctx, 4));
    long long since = PyLong_AsLongLong(PyTuple_GET_ITEM(ctx, 5));
    long noop_key = PyLong_AsLong(PyTuple_GET_ITEM(ctx, 7));
    if (PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    const uint8_t *buf = (const uint8_t *)PyBytes_AS_STRING(data);
    Py_ssize_t size = PyBytes_GET_SIZE(data), n = PyList_GET_SIZE(plan);
    Py_ssize_t nbatches = PyList_GET_SIZE(starts);
    for (int c = 1; c < 8; c++)
        if (PyList_GET_SIZE(cols[c]) != nbatches)
            Py_RETURN_NONE;
    long long applied = 0;
    int why = 0;
    Py_ssize_t before = k > 0 ? PyLong_AsSsize_t(PyList_GET_ITEM(plan, k - 1)) : -1;

    for (; k < n; k++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyList_GET_ITEM(plan, k));
        if (i < 0 || i >= nbatches || PyErr_Occurred())
            goto fail;
        int free_of_txn = no_txn(b);
        if (free_of_txn < 0)
            goto fail;
        if (i - before > 1 && free_of_txn) {  /* pass_noops: the run's last NoOp */
            Py_ssize_t j = i - 1;
            long long off = item_ll(base, j);
            if (off >= skip_below && (!has_upto || off <= upto)) {
                PyObject *o = PyList_GET_ITEM(base, j);
                Py_INCREF(o);
                if (set_prov(prov, o, PyList_GET_ITEM(epoch, j), PyList_GET_ITEM(max_ts, j)) < 0)
                    goto fail;
            }
        }
        before = i;
        if (item_ll(count, i) != 1 || (item_ll(attrs, i) & 0x27) || !free_of_txn)
            break;  /* compressed, control, several records, a transaction: Python's */
        long long pos = item_ll(starts, i), len = item_ll(length, i);
        Py_ssize_t at = (Py_ssize_t)pos + 61, end = (Py_ssize_t)(pos + 12 + len);
        Rec r;
        if (pos < 0 || end > size || at > end ||
                !parse_record(buf, &at, end, item_ll(base, i), 1, &r) || at != end)
            break;  /* apply_batch frames it the checked way, and says what */
        if (!((skip_below >= 0 && r.off < skip_below) || (has_upto && r.off > upto))) {
            if (r.key != noop_key) {
                if (r.key < 0 || r.vend < 0 || r.off < 0)
                    break;
                PyObject *kobj = PyLong_FromLong(r.key << 7 | r.ver);
                if (kobj == NULL)
                    goto fail;
                PyObject *kind = PyDict_GetItemWithError(plans, kobj);  /* borrowed */
                Py_DECREF(kobj);
                if (kind != NULL)
                    Py_INCREF(kind);
                else if (PyErr_Occurred())
                    goto fail;
                else if ((kind = PyObject_CallFunction(plain_kind, "ll", r.key, r.ver)) == NULL)
                    goto fail;
                if (!PyTuple_Check(kind) || PyTuple_GET_SIZE(kind) != 2) {
                    Py_DECREF(kind);
                    break;  /* not a plain kind */
                }
                PyObject *dargs[3] = {data, PyLong_FromSsize_t(r.body), PyLong_FromSsize_t(r.vend)};
                PyObject *res = NULL;
                if (dargs[1] != NULL && dargs[2] != NULL)
                    res = PyObject_Vectorcall(PyTuple_GET_ITEM(kind, 0), dargs, 3, NULL);
                Py_XDECREF(dargs[1]);
                Py_XDECREF(dargs[2]);
                if (res == NULL) {
                    Py_DECREF(kind);
                    if (PyErr_ExceptionMatches(PyExc_MemoryError))
                        goto fail;
                    PyErr_Clear();
                    break;  /* apply_batch decodes it the checked way */
                }
                PyObject *d = PyTuple_Check(res) && PyTuple_GET_SIZE(res) == 2 ?
                              PyTuple_GET_ITEM(res, 0) : NULL;
                Py_ssize_t got = d ? PyLong_AsSsize_t(PyTuple_GET_ITEM(res, 1)) : -1;
                int tagged = d && PyDict_Check(d) ? PyDict_Contains(d, unknown_key) : -1;
                if (PyErr_Occurred())
                    PyErr_Clear();
                if (d == NULL || got != r.vend || tagged != 0) {
                    /* unknown tags (said once, by the general loop) or anything odd */
                    Py_DECREF(res);
                    Py_DECREF(kind);
                    break;
                }
                PyObject *vpos = PyLong_FromSsize_t(r.vpos);
                int bad = vpos == NULL || PyObject_SetAttr(b, s_pos, vpos) < 0;
                Py_XDECREF(vpos);
                PyObject *handler = PyTuple_GET_ITEM(kind, 1);
                if (!bad && handler != Py_None) {
                    PyObject *offobj = PyLong_FromLongLong(r.off);
                    bad = offobj == NULL ||
                          PyObject_SetAttr(replayer, s_at, PyList_GET_ITEM(plan, k)) < 0;
                    if (!bad) {
                        applied++;
                        since++;
                        PyObject *hargs[3] = {b, d, offobj};
                        PyObject *out = PyObject_Vectorcall(handler, hargs, 3, NULL);
                        bad = out == NULL;
                        Py_XDECREF(out);
                    }
                    Py_XDECREF(offobj);
                }
                Py_DECREF(res);
                Py_DECREF(kind);
                if (bad)
                    goto fail;
            }
            long long last = item_ll(base, i) + item_ll(delta, i);
            if (set_prov(prov, PyLong_FromLongLong(!has_upto || upto >= last ? last : r.off),
                         PyList_GET_ITEM(epoch, i), PyList_GET_ITEM(max_ts, i)) < 0)
                goto fail;
        }
        if (since >= every) {  /* a mark due, if journaled and outside a transaction */
            PyObject *journal = PyObject_GetAttr(b, s_journal);
            if (journal == NULL)
                goto fail;
            int journaled = journal != Py_None;
            Py_DECREF(journal);
            int outside = no_txn(b);
            if (outside < 0)
                goto fail;
            if (journaled && outside) {
                why = 1;
                break;
            }
        }
    }
    return Py_BuildValue("(nLLi)", k, since, applied, why);
fail:
    {
        /* what was applied before the error still counts: the caller adds it */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *state = Py_BuildValue("(LL)", since, applied);
        if (state != NULL) {
            PyObject_SetAttrString(replayer, "_run_state", state);
            Py_DECREF(state);
        }
        PyErr_Clear();
        PyErr_Restore(type, value, tb);
        return NULL;
    }
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
    const char *names[] = {"txn", "journal", "offset", "epoch", "time_ms", "_pos", "at"};
    PyObject **slots[] = {&s_txn, &s_journal, &s_offset, &s_epoch, &s_time_ms, &s_pos, &s_at};
    for (int i = 0; i < 7; i++)
        if ((*slots[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return NULL;
    return PyModule_Create(&module);
}
