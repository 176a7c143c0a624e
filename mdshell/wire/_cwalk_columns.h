/* Facts of a stretch's header columns (bounds, ascending), its plan (kept) and its one-NoOp
 * batches (noop_batches).
 *
 * Part of _cwalk.c (one compilation unit: it includes the parts in order, each
 * using what the parts before it define). */

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
                    count[i] == 1 && delta[i] == 0 && starts[i] >= 0 && starts[i] <= size) {
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
