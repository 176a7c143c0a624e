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
 *
 * One compilation unit in parts, included in this order (each uses what the ones before
 * define): _cwalk_crc.h (CRC-32C, big-endian reads), _cwalk_frame.h (scan, framing),
 * _cwalk_attr.h (slot reads), _cwalk_run.h (the replay loop), _cwalk_partitions.h
 * (undecoded partitions, partition changes, ClearElr), _cwalk_handlers.h (the other
 * handlers), _cwalk_readers.h (kinds read from their bytes, the fields mode),
 * _cwalk_columns.h (column facts, plans, one-NoOp batches); then the module here. Also
 * _kept.h (objects kept by their bytes) and _idset.h (the builder's owned ids).
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

#include "_cwalk_crc.h"
#include "_cwalk_frame.h"
#include "_cwalk_attr.h"
#include "_cwalk_run.h"
#include "_cwalk_partitions.h"
#include "_cwalk_handlers.h"
#include "_cwalk_readers.h"
#include "_cwalk_columns.h"

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
    {"skip_to", skip_to, METH_VARARGS,
     "skip_to(data, offset, first) -> walker.skip_to's answer, or None"},
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
