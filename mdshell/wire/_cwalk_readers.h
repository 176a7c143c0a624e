/* Record kinds read from the bytes of a one-record batch (broker changes, configs,
 * re-registrations: apply_bytes) and the decoder's fields mode into the handlers' cores
 * (apply_fields).
 *
 * Part of _cwalk.c (one compilation unit: it includes the parts in order, each
 * using what the parts before it define). */

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
        if (!next_tag(buf, &pos, end, 3, &last, &tag, &size) || (long)tag > ver || size != 1)
            return 0;
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
        if (!next_tag(buf, &pos, end, 1, &last, &tag, &size) || (long)tag + 3 > ver)
            goto refuse;
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
