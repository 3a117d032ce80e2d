/* cleaner._offset_map: the SkimpyOffsetMap's hot loops (MD5 of each key, open-addressing
 * probe) in C. The table itself is a buffer SkimpyOffsetMap owns (an anonymous mapping); these
 * functions only read and write its slots, so its layout is the Python class's contract:
 *
 *   slot i = bytes [24 i, 24 i + 24): MD5(key) (16 bytes) then the offset (int64, big-endian);
 *   all-zero = empty. Attempt a probes the slot at
 *   ((be32(digest[min(a, 12)]) + max(0, a - 12)) & 0x7fffffff) % slots,
 *   as Kafka's SkimpyOffsetMap.positionOf.
 *
 * MD5 is written out here (RFC 1321) rather than called through hashlib: the call per
 * key is what made pass 1 slow, and linking OpenSSL would make the build depend on its
 * headers. Tests check it against hashlib.
 *
 * Both loops take keys CHUNK at a time: the chunk's digests first, keys of one block
 * LANES at a time in the lanes of a vector (one MD5 is a chain of 64 dependent steps, so
 * a lone key leaves the CPU idle), then a prefetch of each key's first slot, then the
 * probes in key order. The map is larger than the caches, so a probe is a trip to memory;
 * prefetched, the chunk's trips overlap instead of following one another.
 *
 *   md5(data) -> bytes
 *   put_keys(buf, slots, entries, limit, keys, offsets) -> (stored, entries, last_offset, probes)
 *   get_keys(buf, slots, keys) -> (offsets, probes)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define HASH_SIZE 16
#define BYTES_PER_ENTRY 24

static PyObject *OffsetMapFullError;

/* -- MD5 (RFC 1321) ------------------------------------------------------------------------ */

/* The four rounds unrolled as RFC 1321 lays them out: one OP per operation, the
 * constants being floor(abs(sin(i + 1)) * 2^32). The same list serves the one-key block
 * (uint32_t words) and the LANES-key block (vectors of words), through STEP. */
#define F(x, y, z) (((x) & (y)) | (~(x) & (z)))
#define G(x, y, z) (((x) & (z)) | ((y) & ~(z)))
#define H(x, y, z) ((x) ^ (y) ^ (z))
#define I(x, y, z) ((y) ^ ((x) | ~(z)))
#define STEP(f, a, b, c, d, x, t, s)          \
    do {                                      \
        (a) += f((b), (c), (d)) + (x) + (t);  \
        (a) = ((a) << (s)) | ((a) >> (32 - (s))); \
        (a) += (b);                           \
    } while (0)

#define MD5_OPS(OP)                          \
    OP(F, a, b, c, d, 0, 0xd76aa478u, 7);    \
    OP(F, d, a, b, c, 1, 0xe8c7b756u, 12);   \
    OP(F, c, d, a, b, 2, 0x242070dbu, 17);   \
    OP(F, b, c, d, a, 3, 0xc1bdceeeu, 22);   \
    OP(F, a, b, c, d, 4, 0xf57c0fafu, 7);    \
    OP(F, d, a, b, c, 5, 0x4787c62au, 12);   \
    OP(F, c, d, a, b, 6, 0xa8304613u, 17);   \
    OP(F, b, c, d, a, 7, 0xfd469501u, 22);   \
    OP(F, a, b, c, d, 8, 0x698098d8u, 7);    \
    OP(F, d, a, b, c, 9, 0x8b44f7afu, 12);   \
    OP(F, c, d, a, b, 10, 0xffff5bb1u, 17);  \
    OP(F, b, c, d, a, 11, 0x895cd7beu, 22);  \
    OP(F, a, b, c, d, 12, 0x6b901122u, 7);   \
    OP(F, d, a, b, c, 13, 0xfd987193u, 12);  \
    OP(F, c, d, a, b, 14, 0xa679438eu, 17);  \
    OP(F, b, c, d, a, 15, 0x49b40821u, 22);  \
                                             \
    OP(G, a, b, c, d, 1, 0xf61e2562u, 5);    \
    OP(G, d, a, b, c, 6, 0xc040b340u, 9);    \
    OP(G, c, d, a, b, 11, 0x265e5a51u, 14);  \
    OP(G, b, c, d, a, 0, 0xe9b6c7aau, 20);   \
    OP(G, a, b, c, d, 5, 0xd62f105du, 5);    \
    OP(G, d, a, b, c, 10, 0x02441453u, 9);   \
    OP(G, c, d, a, b, 15, 0xd8a1e681u, 14);  \
    OP(G, b, c, d, a, 4, 0xe7d3fbc8u, 20);   \
    OP(G, a, b, c, d, 9, 0x21e1cde6u, 5);    \
    OP(G, d, a, b, c, 14, 0xc33707d6u, 9);   \
    OP(G, c, d, a, b, 3, 0xf4d50d87u, 14);   \
    OP(G, b, c, d, a, 8, 0x455a14edu, 20);   \
    OP(G, a, b, c, d, 13, 0xa9e3e905u, 5);   \
    OP(G, d, a, b, c, 2, 0xfcefa3f8u, 9);    \
    OP(G, c, d, a, b, 7, 0x676f02d9u, 14);   \
    OP(G, b, c, d, a, 12, 0x8d2a4c8au, 20);  \
                                             \
    OP(H, a, b, c, d, 5, 0xfffa3942u, 4);    \
    OP(H, d, a, b, c, 8, 0x8771f681u, 11);   \
    OP(H, c, d, a, b, 11, 0x6d9d6122u, 16);  \
    OP(H, b, c, d, a, 14, 0xfde5380cu, 23);  \
    OP(H, a, b, c, d, 1, 0xa4beea44u, 4);    \
    OP(H, d, a, b, c, 4, 0x4bdecfa9u, 11);   \
    OP(H, c, d, a, b, 7, 0xf6bb4b60u, 16);   \
    OP(H, b, c, d, a, 10, 0xbebfbc70u, 23);  \
    OP(H, a, b, c, d, 13, 0x289b7ec6u, 4);   \
    OP(H, d, a, b, c, 0, 0xeaa127fau, 11);   \
    OP(H, c, d, a, b, 3, 0xd4ef3085u, 16);   \
    OP(H, b, c, d, a, 6, 0x04881d05u, 23);   \
    OP(H, a, b, c, d, 9, 0xd9d4d039u, 4);    \
    OP(H, d, a, b, c, 12, 0xe6db99e5u, 11);  \
    OP(H, c, d, a, b, 15, 0x1fa27cf8u, 16);  \
    OP(H, b, c, d, a, 2, 0xc4ac5665u, 23);   \
                                             \
    OP(I, a, b, c, d, 0, 0xf4292244u, 6);    \
    OP(I, d, a, b, c, 7, 0x432aff97u, 10);   \
    OP(I, c, d, a, b, 14, 0xab9423a7u, 15);  \
    OP(I, b, c, d, a, 5, 0xfc93a039u, 21);   \
    OP(I, a, b, c, d, 12, 0x655b59c3u, 6);   \
    OP(I, d, a, b, c, 3, 0x8f0ccc92u, 10);   \
    OP(I, c, d, a, b, 10, 0xffeff47du, 15);  \
    OP(I, b, c, d, a, 1, 0x85845dd1u, 21);   \
    OP(I, a, b, c, d, 8, 0x6fa87e4fu, 6);    \
    OP(I, d, a, b, c, 15, 0xfe2ce6e0u, 10);  \
    OP(I, c, d, a, b, 6, 0xa3014314u, 15);   \
    OP(I, b, c, d, a, 13, 0x4e0811a1u, 21);  \
    OP(I, a, b, c, d, 4, 0xf7537e82u, 6);    \
    OP(I, d, a, b, c, 11, 0xbd3af235u, 10);  \
    OP(I, c, d, a, b, 2, 0x2ad7d2bbu, 15);   \
    OP(I, b, c, d, a, 9, 0xeb86d391u, 21)

#define MESSAGE_STEP(f, a, b, c, d, k, t, s) STEP(f, a, b, c, d, m[k], t, s)

static const uint32_t MD5_INIT[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};

static inline uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void md5_block(uint32_t h[4], const uint8_t *p) {
    uint32_t m[16];
    for (int i = 0; i < 16; i++)
        m[i] = le32(p + 4 * i);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
    MD5_OPS(MESSAGE_STEP);
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
}

/* MD5's padding of a message of `len` < 56 bytes: its one and only block. */
static void pad_one_block(const uint8_t *data, Py_ssize_t len, uint8_t block[64]) {
    memcpy(block, data, (size_t)len);
    block[len] = 0x80;
    memset(block + len + 1, 0, (size_t)(56 - len - 1));
    uint64_t bits = (uint64_t)len * 8;
    for (int k = 0; k < 8; k++)
        block[56 + k] = (uint8_t)(bits >> (8 * k));
}

static void put_digest(const uint32_t h[4], uint8_t out[HASH_SIZE]) {
    for (int k = 0; k < 4; k++) {
        out[4 * k] = (uint8_t)h[k];
        out[4 * k + 1] = (uint8_t)(h[k] >> 8);
        out[4 * k + 2] = (uint8_t)(h[k] >> 16);
        out[4 * k + 3] = (uint8_t)(h[k] >> 24);
    }
}

/* LANES messages of one block each (< 56 bytes), hashed side by side: word i of every
 * message in one vector, each OP then working on all of them at once. */
#define LANES 8
#define ONE_BLOCK_MAX 55
typedef uint32_t lanes_t __attribute__((vector_size(4 * LANES)));

static void md5_lanes(const uint8_t *const data[LANES], const Py_ssize_t len[LANES], uint8_t *const out[LANES]) {
    uint8_t blocks[LANES][64];
    for (int l = 0; l < LANES; l++)
        pad_one_block(data[l], len[l], blocks[l]);
    lanes_t m[16];
    for (int i = 0; i < 16; i++)
        for (int l = 0; l < LANES; l++)
            m[i][l] = le32(blocks[l] + 4 * i);
    lanes_t zero = {0};
    lanes_t a = zero + MD5_INIT[0], b = zero + MD5_INIT[1], c = zero + MD5_INIT[2], d = zero + MD5_INIT[3];
    MD5_OPS(MESSAGE_STEP);
    a += MD5_INIT[0];
    b += MD5_INIT[1];
    c += MD5_INIT[2];
    d += MD5_INIT[3];
    for (int l = 0; l < LANES; l++) {
        uint32_t h[4] = {a[l], b[l], c[l], d[l]};
        put_digest(h, out[l]);
    }
}

static void md5(const uint8_t *data, Py_ssize_t len, uint8_t out[HASH_SIZE]) {
    uint32_t h[4] = {MD5_INIT[0], MD5_INIT[1], MD5_INIT[2], MD5_INIT[3]};
    Py_ssize_t i = 0;
    for (; len - i >= 64; i += 64)
        md5_block(h, data + i);
    uint8_t tail[128];
    Py_ssize_t rest = len - i;
    memcpy(tail, data + i, (size_t)rest);
    tail[rest] = 0x80;
    Py_ssize_t padded = rest + 1 + 8 <= 64 ? 64 : 128;
    memset(tail + rest + 1, 0, (size_t)(padded - rest - 1));
    uint64_t bits = (uint64_t)len * 8;
    for (int k = 0; k < 8; k++)
        tail[padded - 8 + k] = (uint8_t)(bits >> (8 * k));
    md5_block(h, tail);
    if (padded == 128)
        md5_block(h, tail + 64);
    put_digest(h, out);
}

/* -- probing ------------------------------------------------------------------------------- */

static inline uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline int slot_is_empty(const uint8_t *slot) {
    static const uint8_t zero[BYTES_PER_ENTRY];
    return memcmp(slot, zero, BYTES_PER_ENTRY) == 0;
}

/* The slot holding `digest`, or the empty slot where it would go; NULL when every probe
 * up to slots + 12 attempts hit another key (a full table). */
static uint8_t *find_slot(uint8_t *table, Py_ssize_t slots, const uint8_t *digest, long long *probes) {
    for (Py_ssize_t attempt = 0; attempt <= slots + 12; attempt++) {
        uint32_t probe = attempt <= 12 ? be32(digest + attempt) : be32(digest + 12) + (uint32_t)(attempt - 12);
        uint8_t *slot = table + ((Py_ssize_t)(probe & 0x7fffffffu) % slots) * BYTES_PER_ENTRY;
        if (memcmp(slot, digest, HASH_SIZE) == 0 || slot_is_empty(slot))
            return slot;
        (*probes)++;
    }
    return NULL;
}

static inline void put_be64(uint8_t *p, int64_t v) {
    for (int k = 7; k >= 0; k--) {
        p[k] = (uint8_t)v;
        v = (int64_t)((uint64_t)v >> 8);
    }
}

static inline int64_t get_be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int k = 0; k < 8; k++)
        v = (v << 8) | p[k];
    return (int64_t)v;
}

static int table_of(Py_buffer *view, Py_ssize_t slots) {
    if (slots < 1 || view->len < slots * BYTES_PER_ENTRY) {
        PyErr_SetString(PyExc_ValueError, "offset map buffer is smaller than its slots");
        return -1;
    }
    return 0;
}

static int key_bytes(PyObject *key, const uint8_t **data, Py_ssize_t *len) {
    if (!PyBytes_Check(key)) {
        PyErr_SetString(PyExc_TypeError, "offset map keys must be bytes");
        return -1;
    }
    *data = (const uint8_t *)PyBytes_AS_STRING(key);
    *len = PyBytes_GET_SIZE(key);
    return 0;
}

/* -- a chunk of keys ------------------------------------------------------------------------ */

#define CHUNK 32

/* digests[j] = MD5(keys[first + j]) for j < n (n <= CHUNK), then a prefetch of each one's
 * first slot, so that the probes that follow find it in cache. */
static int hash_chunk(PyObject *keys, Py_ssize_t first, Py_ssize_t n, const uint8_t *table, Py_ssize_t slots,
                      uint8_t digests[CHUNK][HASH_SIZE]) {
    const uint8_t *lane_data[LANES];
    Py_ssize_t lane_len[LANES];
    uint8_t *lane_out[LANES];
    int lanes = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        const uint8_t *k;
        Py_ssize_t klen;
        if (key_bytes(PyList_GET_ITEM(keys, first + j), &k, &klen) < 0)
            return -1;
        if (klen > ONE_BLOCK_MAX) {
            md5(k, klen, digests[j]);
            continue;
        }
        lane_data[lanes] = k;
        lane_len[lanes] = klen;
        lane_out[lanes] = digests[j];
        if (++lanes == LANES) {
            md5_lanes(lane_data, lane_len, lane_out);
            lanes = 0;
        }
    }
    for (int l = 0; l < lanes; l++)  /* too few left to fill the lanes */
        md5(lane_data[l], lane_len[l], lane_out[l]);
    for (Py_ssize_t j = 0; j < n; j++) {
        const uint8_t *slot = table + ((Py_ssize_t)(be32(digests[j]) & 0x7fffffffu) % slots) * BYTES_PER_ENTRY;
        __builtin_prefetch(slot, 1);
        __builtin_prefetch(slot + BYTES_PER_ENTRY - 1, 1);  /* a slot may straddle two lines */
    }
    return 0;
}

/* -- exported -------------------------------------------------------------------------------- */

static PyObject *py_md5(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*:md5", &view))
        return NULL;
    uint8_t digest[HASH_SIZE];
    md5(view.buf, view.len, digest);
    PyBuffer_Release(&view);
    return PyBytes_FromStringAndSize((const char *)digest, HASH_SIZE);
}

/* keys[i] -> offsets[i] in order while the table holds fewer than `limit` entries,
 * checked before every put as Kafka's buildOffsetMapForSegment does. */
static PyObject *put_keys(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t slots, entries, limit;
    PyObject *keys, *offsets;
    if (!PyArg_ParseTuple(args, "w*nnnO!O!:put_keys", &view, &slots, &entries, &limit, &PyList_Type, &keys,
                          &PyList_Type, &offsets))
        return NULL;
    PyObject *out = NULL;
    Py_ssize_t stored = 0;
    long long probes = 0;
    int64_t last = 0;
    int have_last = 0;
    if (table_of(&view, slots) < 0)
        goto done;
    if (PyList_GET_SIZE(keys) != PyList_GET_SIZE(offsets)) {
        PyErr_SetString(PyExc_ValueError, "keys and offsets differ in length");
        goto done;
    }
    uint8_t *table = view.buf;
    Py_ssize_t n = PyList_GET_SIZE(keys);
    if (limit > slots)
        limit = slots;
    uint8_t digests[CHUNK][HASH_SIZE];
    while (stored < n && entries < limit) {
        Py_ssize_t chunk = n - stored < CHUNK ? n - stored : CHUNK;
        if (hash_chunk(keys, stored, chunk, table, slots, digests) < 0)
            goto done;
        /* In key order, the limit checked before every put: past it, the chunk's remaining
         * digests go unused. */
        for (Py_ssize_t j = 0; j < chunk && entries < limit; j++, stored++) {
            int64_t offset = PyLong_AsLongLong(PyList_GET_ITEM(offsets, stored));
            if (offset == -1 && PyErr_Occurred())
                goto done;
            uint8_t *slot = find_slot(table, slots, digests[j], &probes);
            if (slot == NULL) {
                PyErr_SetString(OffsetMapFullError, "no free slot in the offset map");
                goto done;
            }
            if (memcmp(slot, digests[j], HASH_SIZE) != 0) {
                memcpy(slot, digests[j], HASH_SIZE);
                entries++;
            }
            put_be64(slot + HASH_SIZE, offset);
            last = offset;
            have_last = 1;
        }
    }
    /* (stored, entries, the last offset put or None, probes) */
    PyObject *last_obj = have_last ? PyLong_FromLongLong(last) : Py_NewRef(Py_None);
    if (last_obj != NULL)
        out = Py_BuildValue("(nnNL)", stored, entries, last_obj, probes);
done:
    PyBuffer_Release(&view);
    return out;
}

static PyObject *get_keys(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t slots;
    PyObject *keys;
    if (!PyArg_ParseTuple(args, "y*nO!:get_keys", &view, &slots, &PyList_Type, &keys))
        return NULL;
    PyObject *found = NULL, *out = NULL;
    long long probes = 0;
    if (table_of(&view, slots) < 0)
        goto done;
    Py_ssize_t n = PyList_GET_SIZE(keys);
    found = PyList_New(n);
    if (found == NULL)
        goto done;
    uint8_t *table = view.buf;
    uint8_t digests[CHUNK][HASH_SIZE];
    for (Py_ssize_t first = 0; first < n; first += CHUNK) {
        Py_ssize_t chunk = n - first < CHUNK ? n - first : CHUNK;
        if (hash_chunk(keys, first, chunk, table, slots, digests) < 0)
            goto done;
        for (Py_ssize_t j = 0; j < chunk; j++) {
            uint8_t *slot = find_slot(table, slots, digests[j], &probes);
            int64_t offset =
                (slot != NULL && memcmp(slot, digests[j], HASH_SIZE) == 0) ? get_be64(slot + HASH_SIZE) : -1;
            PyObject *o = PyLong_FromLongLong(offset);
            if (o == NULL)
                goto done;
            PyList_SET_ITEM(found, first + j, o);
        }
    }
    out = Py_BuildValue("(OL)", found, probes);
done:
    Py_XDECREF(found);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"md5", py_md5, METH_VARARGS, "MD5 digest of a buffer (the map's key hash)."},
    {"put_keys", put_keys, METH_VARARGS, "Store keys -> offsets until the table reaches `limit` entries."},
    {"get_keys", get_keys, METH_VARARGS, "Latest offsets of keys, -1 where absent."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "cleaner._offset_map", "SkimpyOffsetMap hashing and probing in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__offset_map(void) {
    PyObject *errors = PyImport_ImportModule("cleaner.errors");
    if (errors == NULL)
        return NULL;
    OffsetMapFullError = PyObject_GetAttrString(errors, "OffsetMapFullError");
    Py_DECREF(errors);
    if (OffsetMapFullError == NULL)
        return NULL;
    return PyModule_Create(&module);
}
