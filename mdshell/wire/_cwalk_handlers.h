/* The compiled handlers of the other hot record kinds (put, drop, scalar, client quotas,
 * broker changes, configs, registrations) and the builder's copy-on-write rules they follow.
 *
 * Part of _cwalk.c (one compilation unit: it includes the parts in order, each
 * using what the parts before it define). */

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
static const Py_ssize_t spec_size[H_KINDS] = {6, 4, 3, 1};  /* make_handler's spec tuples */
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
static PyObject *core_handler(int kind, PyObject *spec, PyObject *const *args,
                              Py_ssize_t nargs)
{
    if (!handler_args(spec, nargs, args, spec_size[kind]))
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
    return core_handler(H_PUT, spec, args, nargs);
}

static PyObject *drop_handler(PyObject *spec, PyObject *const *args, Py_ssize_t nargs)
{
    return core_handler(H_DROP, spec, args, nargs);
}

static PyObject *scalar_handler(PyObject *spec, PyObject *const *args, Py_ssize_t nargs)
{
    return core_handler(H_SCALAR, spec, args, nargs);
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
    return core_handler(H_QUOTA, spec, args, nargs);
}

/* What apply_fields needs to know of (key, its decoder `dec`) in `bf`, from the run's
 * handler table. 0, or -1 on error. */
static int fields_plan(const Plain *pl, long key, PyObject *dec, ByFields *bf)
{
    static PyCFunction fns[H_KINDS] = {
        (PyCFunction)(void (*)(void))put_handler, (PyCFunction)(void (*)(void))drop_handler,
        (PyCFunction)(void (*)(void))scalar_handler, (PyCFunction)(void (*)(void))quota_handler};
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
    if (spec == NULL || !PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != spec_size[kind])
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
