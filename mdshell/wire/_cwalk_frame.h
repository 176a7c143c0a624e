/* The clean walk's header scan (scan) and the framing of a batch's records (parse_record,
 * frame_records, frame).
 *
 * Part of _cwalk.c (one compilation unit: it includes the parts in order, each
 * using what the parts before it define). */

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
        /* cleanwalk._follow_on's rule: no batch ends before it starts, each holds as many
         * records as offsets, and each starts at the offset after the last of the one
         * before */
        int64_t next;
        if (follows < 0 && (delta[i] < 0 || (int64_t)count[i] != (int64_t)delta[i] + 1 ||
                (i > 0 && (
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

/* skip_to's answer (controls cut to `kept`; `controls` is taken). */
static PyObject *skip_result(PyObject *controls, Py_ssize_t pos, Py_ssize_t kept, int has_last,
                             int64_t last, int32_t epoch)
{
    if (PyList_SetSlice(controls, kept, PyList_GET_SIZE(controls), NULL) < 0) {
        Py_DECREF(controls);
        return NULL;
    }
    if (!has_last)
        return Py_BuildValue("(nNOO)", pos, controls, Py_None, Py_None);
    return Py_BuildValue("(nNLi)", pos, controls, (long long)last, (int)epoch);
}

/* skip_to(data, offset, first) -> (pos, [control batch positions], last, epoch), or None
 *
 * walker.skip_to_python (the reference), the same answer: where the first batch reaching
 * `offset` starts, the control batches before it, the last offset and leader epoch passed
 * over (None: none); only headers read, and anything odd (a length that does not fit, a
 * magic other than 2, an offset not following on from `first` or the batch before) stops
 * the skip one batch early. None for what it does not take (not bytes, offsets outside
 * the 64-bit range): the reference runs. */
static PyObject *skip_to(PyObject *self, PyObject *args)
{
    PyObject *data, *first_obj;
    long long offset;
    if (!PyArg_ParseTuple(args, "OLO", &data, &offset, &first_obj) || !PyBytes_CheckExact(data)) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    int has_expect = first_obj != Py_None;
    int64_t expect = 0;
    if (has_expect) {
        int overflow;
        expect = PyLong_Check(first_obj) ? PyLong_AsLongLongAndOverflow(first_obj, &overflow) : 0;
        if (!PyLong_Check(first_obj) || overflow || (expect == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
    }
    const uint8_t *buf = (const uint8_t *)PyBytes_AS_STRING(data);
    Py_ssize_t size = PyBytes_GET_SIZE(data), pos = 0, limit = size - HEADER_SIZE;
    PyObject *controls = PyList_New(0);
    if (controls == NULL)
        return NULL;
    int has_last = 0;
    int64_t last = 0;
    int32_t epoch = 0;
    /* the batch before: its position, controls, and the last offset and epoch before it */
    Py_ssize_t back_pos = 0, back_kept = 0;
    int back_has = 0;
    int64_t back_last = 0;
    int32_t back_epoch = 0;
    while (pos <= limit) {
        const uint8_t *p = buf + pos;
        int64_t base = be64(p), end;
        int32_t length = be32(p + 8), batch_epoch = be32(p + 12), last_delta = be32(p + 23);
        int16_t attrs = be16(p + 21);
        if (length < MIN_BATCH_LENGTH || length > size - pos - LOG_OVERHEAD || p[16] != 2 ||
                (has_expect && base != expect))
            break;
        if (__builtin_add_overflow(base, (int64_t)last_delta, &end) || end == INT64_MAX)
            goto python;  /* beyond the 64-bit range: Python's ints say */
        if (end >= offset)
            return skip_result(controls, pos, PyList_GET_SIZE(controls), has_last, last, epoch);
        back_pos = pos;
        back_kept = PyList_GET_SIZE(controls);
        back_has = has_last;
        back_last = last;
        back_epoch = epoch;
        if (attrs & 0x20) {
            PyObject *at = PyLong_FromSsize_t(pos);
            if (at == NULL || PyList_Append(controls, at) < 0) {
                Py_XDECREF(at);
                Py_DECREF(controls);
                return NULL;
            }
            Py_DECREF(at);
        }
        has_last = 1;
        last = end;
        epoch = batch_epoch;
        has_expect = 1;
        expect = end + 1;
        pos += LOG_OVERHEAD + length;
    }
    /* the end, or a zero-filled (preallocated) tail: its first byte 0 and each byte equal
     * to the one after it (one memcmp, not a loop over what may be gigabytes) */
    int zeros = pos >= size ||
                (buf[pos] == 0 && memcmp(buf + pos, buf + pos + 1, (size_t)(size - pos - 1)) == 0);
    if (zeros)
        return skip_result(controls, size, PyList_GET_SIZE(controls), has_last, last, epoch);
    return skip_result(controls, back_pos, back_kept, back_has, back_last, back_epoch);
python:
    Py_DECREF(controls);
    Py_RETURN_NONE;
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
 * `count` is one the section of [pos, end) may hold: at least 1, as Kafka's reader asks). */
static inline int section_ok(Py_ssize_t pos, Py_ssize_t end, Py_ssize_t len, long long count,
                             int64_t base)
{
    int64_t last;
    return pos >= 0 && end <= len && pos <= end && count >= 1 && count <= end - pos &&
           !__builtin_add_overflow(base, (int64_t)(count - 1), &last);
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
