/* Partitions: undecoded PartitionRecords stored (put_lazy, put_partitions, apply_direct),
 * PartitionChangeRecord read from its bytes and merged (read_change, change_partition),
 * and ClearElrRecord's filter (elr_held).
 *
 * Part of _cwalk.c (one compilation unit: it includes the parts in order, each
 * using what the parts before it define). */

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
static int put_lazy_topic(PutState *st, PyObject *lazy, const uint8_t *p, PyObject *off,
                          PyObject *topic_fn, PyObject *unknown_fn);

static inline int put_lazy(PutState *st, PyObject *lazy, const uint8_t *p, PyObject *off,
                           PyObject *topic_fn, PyObject *unknown_fn, PyObject *noted)
{
    if (st->parts == NULL || memcmp(p + 4, st->tid, 16) != 0) {
        int got = put_lazy_topic(st, lazy, p, off, topic_fn, unknown_fn);
        if (got <= 0)
            return got;
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

/* put_lazy's topic, when it is not the one before: 1 looked up (st holds it), 0 unknown
 * (said by unknown_fn), -1 on error. */
static int put_lazy_topic(PutState *st, PyObject *lazy, const uint8_t *p, PyObject *off,
                          PyObject *topic_fn, PyObject *unknown_fn)
{
    static PyObject *s_partitions = NULL, *s_topic_id = NULL;
    if (s_partitions == NULL && ((s_partitions = PyUnicode_InternFromString("partitions")) == NULL
                                 || (s_topic_id = PyUnicode_InternFromString("id")) == NULL))
        return -1;
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
    return 1;
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
            /* its handler may have removed or made the topic again: the next undecoded
             * partition looks its topic up anew (the reference's runs end here too) */
            put_state_release(&st);
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
    Py_ssize_t body = PyLong_AsSsize_t(PyTuple_GET_ITEM(raw, 1)), end = -1;
    if (!PyErr_Occurred())
        end = PyLong_AsSsize_t(PyTuple_GET_ITEM(raw, 2));
    if (!PyErr_Occurred())
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

/* The header of the next tagged field of a section as Kafka writes it (tags ascending,
 * each at most `max_tag`, shortest varints): its tag and its size, which lies inside
 * [*pos, end); *pos moved past the header, *last (the tag before, -1 at first) to this
 * one. 0 for anything else (the caller refuses the record). */
static inline int next_tag(const uint8_t *buf, Py_ssize_t *pos, Py_ssize_t end,
                           uint32_t max_tag, long *last, uint32_t *tag, uint32_t *size)
{
    if (!uvarint_short(buf, pos, end, tag) || *tag > max_tag || (long)*tag <= *last ||
            !uvarint_short(buf, pos, end, size) || *size > (uint64_t)(end - *pos))
        return 0;
    *last = (long)*tag;
    return 1;
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
        if (!next_tag(buf, &pos, end, 8, &last, &tag, &size) || tag_since[tag] > ver)
            goto refuse;
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
        if (!next_tag(buf, &pos, end, 2, &last, &tag, &size) || (tag > 0 && ver < 2))
            return 0;
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
            Py_INCREF(raw);  /* held: b.decoded is Python code */
            p = PyObject_CallMethodOneArg(b, s_decoded, raw);
            if (p != NULL && keep_decoded(raw, p) < 0)
                Py_CLEAR(p);
            Py_DECREF(raw);
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
