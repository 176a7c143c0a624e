/* The replay loop of a clean stretch (run) and what it applies a record or batch with:
 * decoders found once a run, apply_value, apply_one, txn_keep.
 *
 * Part of _cwalk.c (one compilation unit: it includes the parts in order, each
 * using what the parts before it define). */

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

/* Frame the `count` metadata records of data[pos:end] into a buffer of Recs (grown as
 * needed); 1 when they frame, 0 when the reference must read them (it says what), -1 no
 * memory. */
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
 * noop_key, partition_key, replayer, handlers, unknown_key, unknown_tags, controls,
 * payload_fn, control_fn). A control batch is passed over, its control records
 * (control_fn(data, start)) appended to the list `controls` (pass_control); a compressed
 * batch's records are read from payload_fn(data, start), its records section decompressed
 * (None: left to Python).
 * It stops at the first batch it leaves to Python (why 0: k is its index, the NoOps before
 * it passed over already, nothing of it applied; k == len(plan): none left): one whose
 * records the reference must read (it says what is wrong), or
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

/* fn(data, start): what the run's Python helpers are called with (a new reference, NULL
 * on error). */
static PyObject *call_at(PyObject *fn, PyObject *data, int64_t start)
{
    PyObject *at = PyLong_FromLongLong(start);
    if (at == NULL)
        return NULL;
    PyObject *args[2] = {data, at};
    PyObject *got = PyObject_Vectorcall(fn, args, 2, NULL);
    Py_DECREF(at);
    return got;
}

/* A control batch of the run, h's batch i, passed over as the reference passes it: its
 * control records read by control_fn(data, start) (wire.batch.control_records: a list, or
 * None when they do not read as Kafka's reader reads them) and appended to `controls` for
 * the caller (they carry no image change). 1 when noted, 0 when the reference must read
 * it (it says what is wrong; a compressed control batch, which Kafka never writes, too), -1
 * on error. */
static int pass_control(PyObject *control_fn, PyObject *data, int64_t start,
                        PyObject *controls)
{
    PyObject *got = call_at(control_fn, data, start);
    if (got == NULL)
        return -1;
    if (got == Py_None) {
        Py_DECREF(got);
        return 0;
    }
    int bad = !PyList_CheckExact(got) || PyList_Append(controls, got) < 0;
    if (bad && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "control records are a list");
    Py_DECREF(got);
    return bad ? -1 : 1;
}

/* The records section of the compressed batch at `start` of data, decompressed by
 * payload_fn(data, start) (a bytes object, or None when it does not decompress) into
 * *payload (a new reference). 1 when there, 0 when the reference must read the batch
 * (None), -1 on error. */
static int decompressed(PyObject *payload_fn, PyObject *data, int64_t start,
                        PyObject **payload)
{
    PyObject *got = call_at(payload_fn, data, start);
    if (got == NULL)
        return -1;
    if (got == Py_None) {
        Py_DECREF(got);
        return 0;
    }
    if (!PyBytes_CheckExact(got)) {
        Py_DECREF(got);
        PyErr_SetString(PyExc_TypeError, "a decompressed payload is bytes");
        return -1;
    }
    *payload = got;
    return 1;
}

static PyObject *run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7 || !PyBytes_CheckExact(args[0]) || !PyTuple_Check(args[6]) ||
        PyTuple_GET_SIZE(args[6]) != 17)
        Py_RETURN_NONE;
    PyObject *data = args[0], *ctx = args[6];
    PyObject *b = PyTuple_GET_ITEM(ctx, 0), *prov = PyTuple_GET_ITEM(ctx, 1);
    PyObject *decoders = PyTuple_GET_ITEM(ctx, 2), *decoder_fn = PyTuple_GET_ITEM(ctx, 3);
    PyObject *apply = PyTuple_GET_ITEM(ctx, 4), *replayer = PyTuple_GET_ITEM(ctx, 10);
    PyObject *handlers = PyTuple_GET_ITEM(ctx, 11), *unknown_key = PyTuple_GET_ITEM(ctx, 12);
    PyObject *unknown_tags = PyTuple_GET_ITEM(ctx, 13);
    PyObject *controls = PyTuple_GET_ITEM(ctx, 14), *payload_fn = PyTuple_GET_ITEM(ctx, 15);
    PyObject *control_fn = PyTuple_GET_ITEM(ctx, 16);
    if (!PyDict_Check(decoders) || !PyDict_Check(handlers) || !PyList_Check(controls))
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
    PyObject *payload = NULL;  /* the decompressed records of the batch being applied */
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
        Py_CLEAR(payload);
        if (h.attrs[i] & 0x20) {  /* a control batch: its place noted for the caller */
            int noted = pass_control(control_fn, data, h.starts[i], controls);
            if (noted < 0)
                goto fail;
            if (!noted)
                break;  /* the reference reads it, and says what */
            continue;
        }
        /* the batch's records: in data, or its payload decompressed */
        PyObject *bdata = data;
        const uint8_t *bbuf = buf;
        Py_ssize_t bsize = size, at = (Py_ssize_t)h.starts[i] + HEADER_SIZE;
        Py_ssize_t bend = (Py_ssize_t)(h.starts[i] + LOG_OVERHEAD + h.length[i]);
        if (h.attrs[i] & 0x07) {
            int got = decompressed(payload_fn, data, h.starts[i], &payload);
            if (got < 0)
                goto fail;
            if (!got)
                break;  /* the reference decompresses it, and says what is wrong */
            bdata = payload;
            bbuf = (const uint8_t *)PyBytes_AS_STRING(payload);
            bsize = bend = PyBytes_GET_SIZE(payload);
            at = 0;
        }
        int64_t b0 = h.base[i], end_off = h.base[i] + h.delta[i];
        int framed = frame_into(bbuf, bsize, at, bend, h.count[i], b0, h.base_ts[i],
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
            int counted_one = 0, got = apply_bytes(&plain, bbuf, r0, &counted_one);
            if (!got && r0->key != noop_key && r0->key != partition_key &&
                    (r0->key < 23 || r0->key > 25))  /* not a transaction's marker */
                got = apply_one(&plain, bbuf, r0, &counted_one);
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
            int direct = apply_direct(&plain, bdata, recs, (Py_ssize_t)h.count[i], lo, hi, lazy,
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
        PyObject *decoded = decode_batch(bdata, recs, (Py_ssize_t)h.count[i], lo, hi, decoders,
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
    Py_XDECREF(payload);
    PyMem_Free(recs);
    PyBuffer_Release(&planv);
    columns_release(&h);
    decoders_release(&found);
    if (prov_flush(prov, &pv) < 0)
        goto state;
    return Py_BuildValue("(nLLi)", k, since, applied_here, why);
fail:
    plan_at = k < n ? plan[k] : -1;
    Py_XDECREF(payload);
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
