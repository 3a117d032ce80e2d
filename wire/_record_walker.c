/* wire._record_walker: the per-record loops of RecordBatch v2, in C.
 *
 * Everything else in wire/ works per batch; these loops are the only place where
 * the work grows with the records in a batch (keys must be read to compact a log
 * or to hand rows to Spark). In Python they cost ~3 us a record, which bounded the
 * cleaner and the pipeline; here they cost tens of nanoseconds.
 *
 * One parser, parse_record(), walks a record of an uncompressed records section
 * and checks every varint and length against the record and the section; the
 * exported functions differ only in what they build from it:
 *
 *   decode_records(data, count, base_offset, base_ts, max_ts, log_append, Record)
 *       -> list[Record]                      (every field, headers included)
 *   decode_columns(data, count, base_offset, base_ts, max_ts, log_append,
 *                  start_offset, end_offset, value_lengths)
 *       -> (offsets, timestamps, keys, values or their lengths, headers | None)   (for Arrow)
 *   record_layouts(data, count)
 *       -> list[(start, end, body, offset_delta, key, value_is_null)]
 *   record_keys_and_offsets(data, count, base_offset, start_offset)
 *       -> (keys, offsets)                   (keyed records at or above start)
 *   rebuild_records(data, spans, base_ts, new_base_ts, max_ts, log_append)
 *       -> (records bytes, max timestamp)    (survivors re-based on a new base timestamp)
 *
 * Malformed input raises wire.errors.CorruptRecordError, never reads outside the
 * buffer, and allocates nothing before the declared count has been checked
 * against the bytes available.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* The smallest record: length, attributes, timestampDelta, offsetDelta,
 * keyLength(-1), valueLength(-1), headerCount: one byte each. */
#define MIN_RECORD_SIZE 7
#define MAX_VARINT_BYTES 5   /* int32, as Kafka's ByteUtils.readVarint */
#define MAX_VARLONG_BYTES 10 /* int64 */

static PyObject *CorruptRecordError;

typedef struct {
    Py_ssize_t start;      /* the length varint */
    Py_ssize_t body;       /* the attributes byte */
    Py_ssize_t end;        /* one past the record */
    int64_t ts_delta;
    Py_ssize_t ts_end;     /* one past the timestampDelta (where offsetDelta starts) */
    int64_t off_delta;
    Py_ssize_t key_pos;
    int64_t key_len;       /* -1: null key */
    Py_ssize_t val_pos;
    int64_t val_len;       /* -1: null value */
    Py_ssize_t hdr_pos;    /* first header, after the count */
    int64_t hdr_count;
} record_t;

static int corrupt(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg != NULL) {
        PyErr_SetObject(CorruptRecordError, msg);
        Py_DECREF(msg);
    }
    return -1;
}

/* Unsigned LEB128 at d[*p..limit); bits past 64 are dropped, as Java's readVarlong does. */
static inline int read_uvarint(const uint8_t *d, Py_ssize_t *p, Py_ssize_t limit, int max_bytes, uint64_t *out) {
    Py_ssize_t q = *p;
    if (q < limit && d[q] < 0x80) { /* the common one-byte case */
        *out = d[q];
        *p = q + 1;
        return 0;
    }
    uint64_t v = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (q >= limit)
            return corrupt("truncated varint in record");
        uint8_t b = d[q++];
        if (shift < 64)
            v |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *out = v;
            *p = q;
            return 0;
        }
        shift += 7;
    }
    return corrupt("varint longer than %d bytes in record", max_bytes);
}

static inline int read_zigzag(const uint8_t *d, Py_ssize_t *p, Py_ssize_t limit, int max_bytes, int64_t *out) {
    uint64_t v = 0;
    if (read_uvarint(d, p, limit, max_bytes, &v) < 0)
        return -1;
    *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
    return 0;
}

/* Walk the record at *p. Header fields are checked only when `headers` is set;
 * callers that copy records through (the cleaner) need only the key and value. */
static int parse_record(const uint8_t *d, Py_ssize_t n, Py_ssize_t *p, record_t *r, int headers) {
    Py_ssize_t q = *p;
    int64_t length;
    r->start = q;
    if (read_zigzag(d, &q, n, MAX_VARINT_BYTES, &length) < 0)
        return -1;
    if (length < MIN_RECORD_SIZE - 1 || length > n - q)
        return corrupt("invalid record length %lld", (long long)length);
    Py_ssize_t end = q + (Py_ssize_t)length;
    r->body = q;
    r->end = end;
    q += 1; /* attributes: unused in v2 */
    if (read_zigzag(d, &q, end, MAX_VARLONG_BYTES, &r->ts_delta) < 0)
        return -1;
    r->ts_end = q;
    if (read_zigzag(d, &q, end, MAX_VARINT_BYTES, &r->off_delta) < 0 ||
        read_zigzag(d, &q, end, MAX_VARINT_BYTES, &r->key_len) < 0)
        return -1;
    if (r->key_len < -1)
        return corrupt("invalid key length %lld", (long long)r->key_len);
    if (r->key_len > end - q)
        return corrupt("key length %lld runs past the record", (long long)r->key_len);
    r->key_pos = q;
    if (r->key_len > 0)
        q += (Py_ssize_t)r->key_len;
    if (read_zigzag(d, &q, end, MAX_VARINT_BYTES, &r->val_len) < 0)
        return -1;
    if (r->val_len < -1)
        return corrupt("invalid value length %lld", (long long)r->val_len);
    if (r->val_len > end - q)
        return corrupt("value length %lld runs past the record", (long long)r->val_len);
    r->val_pos = q;
    if (r->val_len > 0)
        q += (Py_ssize_t)r->val_len;
    if (!headers) {
        r->hdr_pos = -1;
        r->hdr_count = -1;
        *p = end;
        return 0;
    }
    if (read_zigzag(d, &q, end, MAX_VARINT_BYTES, &r->hdr_count) < 0)
        return -1;
    if (r->hdr_count < 0 || r->hdr_count * 2 > end - q)
        return corrupt("invalid header count %lld", (long long)r->hdr_count);
    r->hdr_pos = q;
    for (int64_t i = 0; i < r->hdr_count; i++) {
        int64_t hk = 0, hv = 0;
        if (read_zigzag(d, &q, end, MAX_VARINT_BYTES, &hk) < 0)
            return -1;
        if (hk < 0 || hk > end - q)
            return corrupt("invalid header key length %lld", (long long)hk);
        q += (Py_ssize_t)hk;
        if (read_zigzag(d, &q, end, MAX_VARINT_BYTES, &hv) < 0)
            return -1;
        if (hv < -1)
            return corrupt("invalid header value length %lld", (long long)hv);
        if (hv > end - q)
            return corrupt("header value length %lld runs past the record", (long long)hv);
        if (hv > 0)
            q += (Py_ssize_t)hv;
    }
    if (q != end)
        return corrupt("invalid record size: expected %lld bytes in record payload, read %lld",
                       (long long)length, (long long)(length - (end - q)));
    *p = end;
    return 0;
}

static int check_count(Py_ssize_t count, Py_ssize_t n) {
    if (count < 0 || count > n / MIN_RECORD_SIZE)
        return corrupt("records count %zd cannot fit in %zd bytes of record data", count, n);
    return 0;
}

static int check_consumed(Py_ssize_t p, Py_ssize_t n, Py_ssize_t count) {
    if (p != n)
        return corrupt("%zd bytes left over after the declared %zd records", n - p, count);
    return 0;
}

static PyObject *bytes_or_none(const uint8_t *d, Py_ssize_t pos, int64_t len) {
    if (len < 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)d + pos, (Py_ssize_t)len);
}

/* list[tuple[str, bytes | None]] of a record parsed with headers. */
static PyObject *build_headers(const uint8_t *d, const record_t *r) {
    PyObject *list = PyList_New((Py_ssize_t)r->hdr_count);
    if (list == NULL)
        return NULL;
    Py_ssize_t q = r->hdr_pos;
    for (int64_t i = 0; i < r->hdr_count; i++) {
        int64_t hk = 0, hv = 0;
        /* Already validated by parse_record: these reads cannot fail. */
        read_zigzag(d, &q, r->end, MAX_VARINT_BYTES, &hk);
        PyObject *key = PyUnicode_DecodeUTF8((const char *)d + q, (Py_ssize_t)hk, "strict");
        if (key == NULL) {
            Py_DECREF(list);
            if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                PyErr_Clear();
                corrupt("record header key is not valid UTF-8");
            }
            return NULL;
        }
        q += (Py_ssize_t)hk;
        read_zigzag(d, &q, r->end, MAX_VARINT_BYTES, &hv);
        PyObject *value = bytes_or_none(d, q, hv);
        if (value == NULL) {
            Py_DECREF(key);
            Py_DECREF(list);
            return NULL;
        }
        if (hv > 0)
            q += (Py_ssize_t)hv;
        PyObject *pair = PyTuple_Pack(2, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (pair == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, pair);
    }
    return list;
}

static PyObject *new_int64(int64_t v) { return PyLong_FromLongLong((long long)v); }

/* base + delta wrapping at 64 bits as Java's long arithmetic does (signed overflow is
 * undefined in C, and a corrupt batch can declare any base). */
static inline int64_t add_wrapping(int64_t base, int64_t delta) { return (int64_t)((uint64_t)base + (uint64_t)delta); }

/* -- one object per record ------------------------------------------------------------- */

typedef PyObject *(*build_fn)(const uint8_t *d, const record_t *r, void *ctx);

/* The walk decode_records and record_layouts share: `build` makes each record's object. */
static PyObject *map_records(const Py_buffer *view, Py_ssize_t count, int headers, build_fn build, void *ctx) {
    const uint8_t *d = view->buf;
    Py_ssize_t n = view->len;
    if (check_count(count, n) < 0)
        return NULL;
    PyObject *out = PyList_New(count);
    if (out == NULL)
        return NULL;
    Py_ssize_t p = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        record_t r;
        if (parse_record(d, n, &p, &r, headers) < 0)
            goto fail;
        PyObject *item = build(d, &r, ctx);
        if (item == NULL)
            goto fail;
        PyList_SET_ITEM(out, i, item);
    }
    if (check_consumed(p, n, count) < 0)
        goto fail;
    return out;
fail:
    Py_DECREF(out); /* unset items are NULL, which a list's dealloc skips */
    return NULL;
}

/* -- decode_records -------------------------------------------------------------------- */

typedef struct {
    int64_t base_offset, base_ts, max_ts;
    int log_append;
    PyObject *record_type;
} batch_ctx;

static PyObject *build_record(const uint8_t *d, const record_t *r, void *ctx) {
    const batch_ctx *b = ctx;
    PyObject *fields[5];
    fields[0] = new_int64(add_wrapping(b->base_offset, r->off_delta));
    fields[1] = new_int64(b->log_append ? b->max_ts : add_wrapping(b->base_ts, r->ts_delta));
    fields[2] = bytes_or_none(d, r->key_pos, r->key_len);
    fields[3] = bytes_or_none(d, r->val_pos, r->val_len);
    fields[4] = build_headers(d, r);
    PyObject *rec = NULL;
    if (fields[0] && fields[1] && fields[2] && fields[3] && fields[4])
        rec = PyObject_Vectorcall(b->record_type, fields, 5, NULL);
    for (int k = 0; k < 5; k++)
        Py_XDECREF(fields[k]);
    return rec;
}

static PyObject *decode_records(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, base_ts, max_ts;
    int log_append;
    PyObject *record_type;
    if (!PyArg_ParseTuple(args, "y*nLLLpO:decode_records", &view, &count, &base_offset, &base_ts, &max_ts,
                          &log_append, &record_type))
        return NULL;
    batch_ctx ctx = {base_offset, base_ts, max_ts, log_append, record_type};
    PyObject *out = map_records(&view, count, 1, build_record, &ctx);
    PyBuffer_Release(&view);
    return out;
}

/* -- decode_columns -------------------------------------------------------------------- */

static PyObject *decode_columns(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, base_ts, max_ts, start_offset, end_offset;
    int log_append, value_lengths;
    if (!PyArg_ParseTuple(args, "y*nLLLpLLp:decode_columns", &view, &count, &base_offset, &base_ts, &max_ts,
                          &log_append, &start_offset, &end_offset, &value_lengths))
        return NULL;
    const uint8_t *d = view.buf;
    Py_ssize_t n = view.len;
    PyObject *offsets = NULL, *timestamps = NULL, *keys = NULL, *values = NULL, *headers = NULL, *out = NULL;
    Py_ssize_t p = 0;
    int any_headers = 0;
    if (check_count(count, n) < 0)
        goto done;
    if (!(offsets = PyList_New(0)) || !(timestamps = PyList_New(0)) || !(keys = PyList_New(0)) ||
        !(values = PyList_New(0)) || !(headers = PyList_New(0)))
        goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        record_t r;
        if (parse_record(d, n, &p, &r, 1) < 0)
            goto done;
        int64_t offset = add_wrapping(base_offset, r.off_delta);
        if (offset < start_offset || offset >= end_offset)
            continue;
        PyObject *o = new_int64(offset);
        PyObject *t = new_int64(log_append ? max_ts : add_wrapping(base_ts, r.ts_delta));
        PyObject *k = bytes_or_none(d, r.key_pos, r.key_len);
        /* Lengths instead of values when only sizes are wanted (the audit): no copy. */
        PyObject *v = value_lengths ? new_int64(r.val_len) : bytes_or_none(d, r.val_pos, r.val_len);
        PyObject *h;
        if (r.hdr_count > 0) {
            h = build_headers(d, &r);
            any_headers = 1;
        } else {
            h = Py_None;
            Py_INCREF(h);
        }
        int bad = !o || !t || !k || !v || !h || PyList_Append(offsets, o) < 0 || PyList_Append(timestamps, t) < 0 ||
                  PyList_Append(keys, k) < 0 || PyList_Append(values, v) < 0 || PyList_Append(headers, h) < 0;
        Py_XDECREF(o);
        Py_XDECREF(t);
        Py_XDECREF(k);
        Py_XDECREF(v);
        Py_XDECREF(h);
        if (bad)
            goto done;
    }
    if (check_consumed(p, n, count) < 0)
        goto done;
    out = Py_BuildValue("(OOOOO)", offsets, timestamps, keys, values, any_headers ? headers : Py_None);
done:
    Py_XDECREF(offsets);
    Py_XDECREF(timestamps);
    Py_XDECREF(keys);
    Py_XDECREF(values);
    Py_XDECREF(headers);
    PyBuffer_Release(&view);
    return out;
}

/* -- record_layouts -------------------------------------------------------------------- */

static PyObject *build_layout(const uint8_t *d, const record_t *r, void *ctx) {
    /* Filled directly, not through Py_BuildValue: this runs once per record of every batch
     * the cleaner reads, and parsing a format string each time was a tenth of its time. A
     * tuple left part-filled by an error frees the items it holds (the others are NULL). */
    PyObject *t = PyTuple_New(6);
    if (t == NULL)
        return NULL;
    PyObject *items[6];
    items[0] = PyLong_FromSsize_t(r->start);
    items[1] = items[0] ? PyLong_FromSsize_t(r->end) : NULL;
    items[2] = items[1] ? PyLong_FromSsize_t(r->body) : NULL;
    items[3] = items[2] ? new_int64(r->off_delta) : NULL;
    items[4] = items[3] ? bytes_or_none(d, r->key_pos, r->key_len) : NULL;
    items[5] = items[4] ? Py_NewRef(r->val_len < 0 ? Py_True : Py_False) : NULL;
    for (int k = 0; k < 6; k++)
        PyTuple_SET_ITEM(t, k, items[k]);
    if (items[5] == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    return t;
}

static PyObject *record_layouts(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "y*n:record_layouts", &view, &count))
        return NULL;
    PyObject *out = map_records(&view, count, 0, build_layout, NULL);
    PyBuffer_Release(&view);
    return out;
}

/* -- record_keys_and_offsets ----------------------------------------------------------- */

static PyObject *record_keys_and_offsets(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, start_offset;
    if (!PyArg_ParseTuple(args, "y*nLL:record_keys_and_offsets", &view, &count, &base_offset, &start_offset))
        return NULL;
    const uint8_t *d = view.buf;
    Py_ssize_t n = view.len;
    PyObject *keys = NULL, *offsets = NULL, *out = NULL;
    if (check_count(count, n) < 0)
        goto done;
    if (!(keys = PyList_New(0)) || !(offsets = PyList_New(0)))
        goto done;
    Py_ssize_t p = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        record_t r;
        if (parse_record(d, n, &p, &r, 0) < 0)
            goto done;
        int64_t offset = add_wrapping(base_offset, r.off_delta);
        if (r.key_len < 0 || offset < start_offset)
            continue;
        PyObject *k = bytes_or_none(d, r.key_pos, r.key_len);
        PyObject *o = new_int64(offset);
        int bad = !k || !o || PyList_Append(keys, k) < 0 || PyList_Append(offsets, o) < 0;
        Py_XDECREF(k);
        Py_XDECREF(o);
        if (bad)
            goto done;
    }
    if (check_consumed(p, n, count) < 0)
        goto done;
    out = PyTuple_Pack(2, keys, offsets);
done:
    Py_XDECREF(keys);
    Py_XDECREF(offsets);
    PyBuffer_Release(&view);
    return out;
}

/* -- rebuild_records ------------------------------------------------------------------- */

static Py_ssize_t put_uvarint(uint8_t *o, uint64_t v) {
    Py_ssize_t i = 0;
    while (v >= 0x80) {
        o[i++] = (uint8_t)(v & 0x7F) | 0x80;
        v >>= 7;
    }
    o[i++] = (uint8_t)v;
    return i;
}

/* The survivors (record starts and ends from record_layouts) re-encoded against a new
 * base timestamp: only the timestampDelta changes, so the rest of each record is copied. */
static PyObject *rebuild_records(PyObject *self, PyObject *args) {
    Py_buffer view;
    PyObject *spans;
    long long base_ts, new_base, max_ts;
    int log_append;
    if (!PyArg_ParseTuple(args, "y*OLLLp:rebuild_records", &view, &spans, &base_ts, &new_base, &max_ts, &log_append))
        return NULL;
    const uint8_t *d = view.buf;
    Py_ssize_t n = view.len;
    PyObject *seq = NULL, *body = NULL, *out = NULL;
    Py_ssize_t *bounds = NULL; /* start, end of each span */
    seq = PySequence_Fast(spans, "spans must be a sequence");
    if (seq == NULL)
        goto done;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    bounds = PyMem_New(Py_ssize_t, 2 * (size_t)m + 1);
    if (bounds == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* A new timestampDelta is at most 10 bytes and the length varint grows by at most 5. */
    Py_ssize_t capacity = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        Py_ssize_t start, end;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "nn", &start, &end))
            goto done;
        if (start < 0 || end > n || start >= end) {
            PyErr_SetString(PyExc_ValueError, "record span outside the records section");
            goto done;
        }
        bounds[2 * i] = start;
        bounds[2 * i + 1] = end;
        capacity += end - start + 15;
    }
    body = PyBytes_FromStringAndSize(NULL, capacity);
    if (body == NULL)
        goto done;
    uint8_t *o = (uint8_t *)PyBytes_AS_STRING(body);
    Py_ssize_t w = 0;
    int64_t largest = INT64_MIN;
    for (Py_ssize_t i = 0; i < m; i++) {
        Py_ssize_t p = bounds[2 * i], end = bounds[2 * i + 1];
        record_t r;
        if (parse_record(d, end, &p, &r, 0) < 0 || p != end)
            goto done;
        int64_t ts = log_append ? max_ts : add_wrapping(base_ts, r.ts_delta);
        if (ts > largest)
            largest = ts;
        int64_t delta = (int64_t)((uint64_t)ts - (uint64_t)new_base);
        uint8_t ts_buf[10];
        Py_ssize_t ts_len = put_uvarint(ts_buf, ((uint64_t)delta << 1) ^ (uint64_t)(delta >> 63));
        Py_ssize_t rest = end - r.ts_end; /* offsetDelta onwards, copied as is */
        int64_t length = 1 + ts_len + rest;
        w += put_uvarint(o + w, ((uint64_t)length << 1) ^ (uint64_t)(length >> 63));
        o[w++] = d[r.body];
        memcpy(o + w, ts_buf, (size_t)ts_len);
        w += ts_len;
        memcpy(o + w, d + r.ts_end, (size_t)rest);
        w += rest;
    }
    if (_PyBytes_Resize(&body, w) < 0)
        goto done;
    out = Py_BuildValue("(OL)", body, (long long)(m ? largest : max_ts));
done:
    PyMem_Free(bounds);
    Py_XDECREF(body);
    Py_XDECREF(seq);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"decode_records", decode_records, METH_VARARGS, "Every record of an uncompressed records section."},
    {"decode_columns", decode_columns, METH_VARARGS,
     "Columns of the records in [start_offset, end_offset) of an uncompressed records section."},
    {"record_layouts", record_layouts, METH_VARARGS, "Spans, offset deltas and keys of every record."},
    {"record_keys_and_offsets", record_keys_and_offsets, METH_VARARGS,
     "Keys and absolute offsets of the keyed records at or above start_offset."},
    {"rebuild_records", rebuild_records, METH_VARARGS, "Records re-encoded against a new base timestamp."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "wire._record_walker", "RecordBatch v2 per-record loops in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__record_walker(void) {
    PyObject *errors = PyImport_ImportModule("wire.errors");
    if (errors == NULL)
        return NULL;
    CorruptRecordError = PyObject_GetAttrString(errors, "CorruptRecordError");
    Py_DECREF(errors);
    if (CorruptRecordError == NULL)
        return NULL;
    return PyModule_Create(&module);
}
