/* Objects kept by their bytes, so that a long log's repeated values are made once and
 * found by identity: the 16-byte ids records name topics by (kept_id), the short names
 * configs are set by (kept_name), and a snapshot's partitions decoded on their first
 * change (kept_partition).
 *
 * Each is a direct-mapped table (a slot per hash of the bytes, a newcomer replacing what
 * was there): bounded whatever the log, nothing to clear, and a miss only costs what
 * making the object costs. An object found is equal to the one the bytes would make (the
 * bytes are compared, not only their hash), so a kept object is never a wrong answer,
 * only a shared one: bytes and str are immutable, and the image never changes a
 * Partition in place. Included by _cwalk.c (one compilation unit). */

#define KEPT_SLOTS 4096       /* ids and names kept (a power of two) */
#define KEPT_PARTITIONS 1024  /* decoded partitions kept (a power of two) */
#define KEPT_NAME_MAX 64      /* longer strings are made each time */

/* A hash of n bytes (not for tables an adversary fills: a collision only costs a miss). */
static inline uint64_t kept_hash(const uint8_t *p, Py_ssize_t n, uint64_t seed)
{
    uint64_t h = seed ^ ((uint64_t)n * UINT64_C(0x9E3779B97F4A7C15));
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * UINT64_C(0xFF51AFD7ED558CCD);
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, p, (size_t)n);
    h = (h ^ w) * UINT64_C(0xC4CEB9FE1A85EC53);
    return h ^ (h >> 29);
}

typedef struct {
    uint64_t hash;
    PyObject *obj;  /* bytes of 16 (ids) or an exact str (names); NULL: empty */
} Kept;

static Kept kept_ids[KEPT_SLOTS], kept_names[KEPT_SLOTS];

/* bytes(p[0:16]), the one kept for those bytes when there is one (then kept); a new
 * reference, NULL on error. */
static PyObject *kept_id(const uint8_t *p)
{
    uint64_t h = kept_hash(p, 16, 1);
    Kept *k = &kept_ids[h & (KEPT_SLOTS - 1)];
    if (k->obj != NULL && k->hash == h && memcmp(PyBytes_AS_STRING(k->obj), p, 16) == 0)
        return Py_NewRef(k->obj);
    PyObject *b = PyBytes_FromStringAndSize((const char *)p, 16);
    if (b != NULL) {
        k->hash = h;
        Py_XSETREF(k->obj, Py_NewRef(b));
    }
    return b;
}

/* `key` (an exact bytes of 16: a map's own key, found equal to a kept id) kept in place
 * of the one of its bytes, so the next lookup finds the map's key by identity. */
static void keep_id(PyObject *key)
{
    if (!PyBytes_CheckExact(key) || PyBytes_GET_SIZE(key) != 16)
        return;
    const uint8_t *p = (const uint8_t *)PyBytes_AS_STRING(key);
    uint64_t h = kept_hash(p, 16, 1);
    Kept *k = &kept_ids[h & (KEPT_SLOTS - 1)];
    if (k->obj != key) {
        k->hash = h;
        Py_XSETREF(k->obj, Py_NewRef(key));
    }
}

/* The str of the UTF-8 bytes p[0:n] (strict, as the decoder reads them), the one kept for
 * those bytes when there is one (short ones are kept); a new reference; NULL with no error
 * when they are not UTF-8, NULL with an error on MemoryError. */
static PyObject *kept_name(const uint8_t *p, Py_ssize_t n)
{
    Kept *k = NULL;
    uint64_t h = 0;
    if (n <= KEPT_NAME_MAX) {
        h = kept_hash(p, n, 2);
        k = &kept_names[h & (KEPT_SLOTS - 1)];
        Py_ssize_t size;
        const char *u = k->obj != NULL && k->hash == h ? PyUnicode_AsUTF8AndSize(k->obj, &size)
                                                       : NULL;
        if (u != NULL && size == n && memcmp(u, p, (size_t)n) == 0)
            return Py_NewRef(k->obj);
        if (u == NULL && PyErr_Occurred())
            return NULL;
    }
    PyObject *s = PyUnicode_DecodeUTF8((const char *)p, n, NULL);
    if (s == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            PyErr_Clear();  /* not UTF-8: the decoder refuses it, and says so */
        return NULL;
    }
    if (k != NULL) {
        k->hash = h;
        Py_XSETREF(k->obj, Py_NewRef(s));
    }
    return s;
}

typedef struct {
    uint64_t hash;
    long version;
    PyObject *raw;        /* the record's bytes past its ids (bytes) */
    PyObject *partition;  /* what they decode to; NULL: empty */
} KeptPartition;

static KeptPartition kept_partitions[KEPT_PARTITIONS];

/* The partition kept for a PartitionRecord of `version` whose bytes past its ids are
 * p[0:n] (*hash: their hash, for keep_partition), of class `type`; a new reference, or
 * NULL (no error) when none is. */
static PyObject *kept_partition(const uint8_t *p, Py_ssize_t n, long version,
                                PyTypeObject *type, uint64_t *hash)
{
    uint64_t h = *hash = kept_hash(p, n, 3 + (uint64_t)version);
    KeptPartition *k = &kept_partitions[h & (KEPT_PARTITIONS - 1)];
    if (k->partition != NULL && k->hash == h && k->version == version &&
            Py_TYPE(k->partition) == type && PyBytes_GET_SIZE(k->raw) == n &&
            memcmp(PyBytes_AS_STRING(k->raw), p, (size_t)n) == 0)
        return Py_NewRef(k->partition);
    return NULL;
}

/* `partition`, decoded from those bytes, kept for them (kept_partition's hash); -1 on
 * error. */
static int keep_partition(uint64_t hash, const uint8_t *p, Py_ssize_t n, long version,
                          PyObject *partition)
{
    PyObject *raw = PyBytes_FromStringAndSize((const char *)p, n);
    if (raw == NULL)
        return -1;
    KeptPartition *k = &kept_partitions[hash & (KEPT_PARTITIONS - 1)];
    PyObject *old_raw = k->raw, *old = k->partition;
    k->hash = hash;
    k->version = version;
    k->raw = raw;
    k->partition = Py_NewRef(partition);
    Py_XDECREF(old_raw);  /* after the slot is whole: a decref may free them */
    Py_XDECREF(old);
    return 0;
}
