/* One pass over a log chunk: where any of a few dozen literal keys starts, and the newline counts.
 *
 * The aho-corasick crate's packed searcher takes at most 64 patterns per pass, so the 87 keys of
 * the rule book cost two passes and a third for the newline count. This searcher does all of it
 * in one: per 32-byte block, a Teddy-style filter (each key's 4-byte fingerprint split into
 * nibbles, looked up with byte shuffles in up to 32 buckets) rejects most positions; a position that
 * passes is looked up by its 4 bytes in a small hash table of the fingerprints, and only a key
 * whose fingerprint equals them is compared in full. Newlines are counted in the same loop, and
 * each reported key start carries the number of newlines before it (a key holds no newline).
 *
 * A key's fingerprint is 4 of its bytes at an offset chosen by the caller (the rarest in log
 * text), not necessarily its first 4. Given the anchors a key stands for (each anchor under one key
 * it holds, with the key's offset in it), a key's start is reported only where one of them is there
 * too, as that anchor's start: a key like '.py", li' (for 'graphs.py", line ') is on every traceback
 * frame, and checking each such line in Python cost 3 s a GiB where a fifth of the lines are frames.
 * Where the CPU has AVX-512BW the filter takes 64 bytes a step (with VBMI, one byte lookup per
 * fingerprint byte instead of two nibble shuffles), else 32 (AVX2). Python's denpex.logs.native builds the tables' inputs and
 * falls back to the crate where this module is missing or the CPU lacks AVX2.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DENPEX_AVX2 1
#include <immintrin.h>
#else
#define DENPEX_AVX2 0
#endif

#define SETS 4        /* of 8 buckets each: one byte shuffle per bucket set, nibble and fingerprint byte */
#define FP 4          /* fingerprint bytes */
#define SLOTS 1024    /* hash table of fingerprints; keys are far fewer */

typedef struct {
    PyObject_HEAD
    Py_ssize_t nkeys;
    PyObject *keys;           /* a tuple of bytes: keeps the key buffers alive */
    const uint8_t **key;
    Py_ssize_t *len;
    Py_ssize_t *off;          /* fingerprint offset in the key */
    int *chain;               /* next key with the same fingerprint, or -1 */
    int slot_key[SLOTS];      /* first key of a fingerprint, or -1 */
    uint32_t slot_fp[SLOTS];
    int nsets;
    uint8_t lo[SETS][FP][32], hi[SETS][FP][32];  /* nibble masks, the 16-byte table twice (per lane) */
    uint8_t full[SETS][FP][128];  /* per byte value (its low 7 bits): the buckets whose fingerprint byte it is */
    PyObject *anchors;        /* a tuple of bytes, or NULL: report key starts as they are */
    Py_ssize_t *first;        /* key i's anchors are first[i] .. first[i + 1] - 1 */
    const uint8_t **anc;
    Py_ssize_t *anc_len, *anc_off;  /* an anchor's length, and the offset of its key in it */
} Searcher;

static uint32_t fp_hash(uint32_t x) { return (x * 2654435761u) >> 22; }

static void Searcher_dealloc(Searcher *self) {
    PyMem_Free((void *)self->key);
    PyMem_Free(self->len);
    PyMem_Free(self->off);
    PyMem_Free(self->chain);
    PyMem_Free(self->first);
    PyMem_Free((void *)self->anc);
    PyMem_Free(self->anc_len);
    PyMem_Free(self->anc_off);
    Py_XDECREF(self->keys);
    Py_XDECREF(self->anchors);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Key i's anchors from anchors_in[i], a sequence of (anchor bytes, offset of key i in it); 0 or -1. */
static int set_anchors(Searcher *self, PyObject *anchors_in, Py_ssize_t n) {
    PyObject *per = PySequence_Tuple(anchors_in);
    if (per == NULL) return -1;
    if (PyTuple_GET_SIZE(per) != n) {
        PyErr_SetString(PyExc_ValueError, "need one sequence of (anchor, offset) pairs per key");
        Py_DECREF(per);
        return -1;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t m = PySequence_Size(PyTuple_GET_ITEM(per, i));
        if (m < 0) {
            Py_DECREF(per);
            return -1;
        }
        total += m;
    }
    PyObject *keep = PyTuple_New(total);
    self->first = PyMem_Calloc((size_t)n + 1, sizeof(Py_ssize_t));
    self->anc = PyMem_Calloc((size_t)total + 1, sizeof(uint8_t *));
    self->anc_len = PyMem_Calloc((size_t)total + 1, sizeof(Py_ssize_t));
    self->anc_off = PyMem_Calloc((size_t)total + 1, sizeof(Py_ssize_t));
    if (keep == NULL || !self->first || !self->anc || !self->anc_len || !self->anc_off) {
        Py_XDECREF(keep);
        Py_DECREF(per);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        self->first[i] = j;
        PyObject *pairs = PySequence_Tuple(PyTuple_GET_ITEM(per, i));
        if (pairs == NULL) goto fail;
        for (Py_ssize_t q = 0; q < PyTuple_GET_SIZE(pairs); q++, j++) {
            PyObject *pair = PyTuple_GET_ITEM(pairs, q), *a;
            Py_ssize_t off;
            if (!PyArg_ParseTuple(pair, "Sn", &a, &off)) {
                Py_DECREF(pairs);
                goto fail;
            }
            Py_ssize_t alen = PyBytes_GET_SIZE(a);
            /* the key must sit inside the anchor at that offset, or a match would be missed */
            if (off < 0 || off + self->len[i] > alen ||
                memcmp(PyBytes_AS_STRING(a) + off, self->key[i], (size_t)self->len[i]) != 0 ||
                memchr(PyBytes_AS_STRING(a), '\n', (size_t)alen) != NULL) {
                PyErr_SetString(PyExc_ValueError, "an anchor must hold its key at the offset given, and no newline");
                Py_DECREF(pairs);
                goto fail;
            }
            Py_INCREF(a);
            PyTuple_SET_ITEM(keep, j, a);
            self->anc[j] = (const uint8_t *)PyBytes_AS_STRING(a);
            self->anc_len[j] = alen;
            self->anc_off[j] = off;
        }
        Py_DECREF(pairs);
    }
    self->first[n] = j;
    self->anchors = keep;
    Py_DECREF(per);
    return 0;
fail:
    Py_DECREF(keep);
    Py_DECREF(per);
    return -1;
}

/* Searcher(keys: sequence of bytes, offsets: sequence of int, buckets: sequence of int in 0..31,
 *          anchors=None: per key, a sequence of (anchor, offset of the key in it)) */
static int Searcher_init(Searcher *self, PyObject *args, PyObject *kwds) {
    PyObject *keys_in, *offs_in, *bucks_in, *anchors_in = Py_None;
    static char *names[] = {"keys", "offsets", "buckets", "anchors", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO|O", names, &keys_in, &offs_in, &bucks_in, &anchors_in))
        return -1;
    if (self->keys != NULL) {
        PyErr_SetString(PyExc_TypeError, "Searcher is already initialised");
        return -1;
    }
    PyObject *keys = PySequence_Tuple(keys_in);
    PyObject *offs = keys ? PySequence_Tuple(offs_in) : NULL;
    PyObject *bucks = offs ? PySequence_Tuple(bucks_in) : NULL;
    if (bucks == NULL) goto fail;
    Py_ssize_t n = PyTuple_GET_SIZE(keys);
    if (n == 0 || n >= SLOTS / 2 || PyTuple_GET_SIZE(offs) != n || PyTuple_GET_SIZE(bucks) != n) {
        PyErr_SetString(PyExc_ValueError, "need 1 to 511 keys, and one offset and one bucket per key");
        goto fail;
    }
    /* a failed earlier __init__ may have left arrays behind */
    PyMem_Free((void *)self->key);
    PyMem_Free(self->len);
    PyMem_Free(self->off);
    PyMem_Free(self->chain);
    PyMem_Free(self->first);
    PyMem_Free((void *)self->anc);
    PyMem_Free(self->anc_len);
    PyMem_Free(self->anc_off);
    self->first = NULL;
    self->anc = NULL;
    self->anc_len = self->anc_off = NULL;
    self->key = PyMem_Calloc((size_t)n, sizeof(uint8_t *));
    self->len = PyMem_Calloc((size_t)n, sizeof(Py_ssize_t));
    self->off = PyMem_Calloc((size_t)n, sizeof(Py_ssize_t));
    self->chain = PyMem_Calloc((size_t)n, sizeof(int));
    if (!self->key || !self->len || !self->off || !self->chain) {
        PyErr_NoMemory();
        goto fail;
    }
    for (int s = 0; s < SLOTS; s++) self->slot_key[s] = -1;
    self->nsets = 0;
    memset(self->lo, 0, sizeof(self->lo));
    memset(self->hi, 0, sizeof(self->hi));
    memset(self->full, 0, sizeof(self->full));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyTuple_GET_ITEM(keys, i);
        if (!PyBytes_Check(k)) {
            PyErr_SetString(PyExc_TypeError, "keys must be bytes");
            goto fail;
        }
        Py_ssize_t len = PyBytes_GET_SIZE(k);
        Py_ssize_t off = PyLong_AsSsize_t(PyTuple_GET_ITEM(offs, i));
        long b = PyLong_AsLong(PyTuple_GET_ITEM(bucks, i));
        if (PyErr_Occurred()) goto fail;
        if (off < 0 || off + FP > len || b < 0 || b >= 8 * SETS) {
            PyErr_SetString(PyExc_ValueError, "a key needs 4 bytes from its offset, and a bucket 0-31");
            goto fail;
        }
        const uint8_t *kb = (const uint8_t *)PyBytes_AS_STRING(k);
        if (memchr(kb, '\n', (size_t)len) != NULL) {
            PyErr_SetString(PyExc_ValueError, "a key holds no newline");
            goto fail;
        }
        self->key[i] = kb;
        self->len[i] = len;
        self->off[i] = off;
        uint32_t fp;
        memcpy(&fp, kb + off, FP);
        uint32_t h = fp_hash(fp);
        while (self->slot_key[h] >= 0 && self->slot_fp[h] != fp) h = (h + 1) & (SLOTS - 1);
        self->chain[i] = self->slot_key[h];
        self->slot_key[h] = (int)i;
        self->slot_fp[h] = fp;
        int set = (int)(b / 8);
        uint8_t bit = (uint8_t)(1u << (b % 8));
        if (set + 1 > self->nsets) self->nsets = set + 1;
        for (int j = 0; j < FP; j++) {
            uint8_t c = kb[off + j];
            self->lo[set][j][c & 15] |= bit;
            self->lo[set][j][16 + (c & 15)] |= bit;
            self->hi[set][j][c >> 4] |= bit;
            self->hi[set][j][16 + (c >> 4)] |= bit;
            self->full[set][j][c & 127] |= bit;
        }
    }
    if (anchors_in != Py_None && set_anchors(self, anchors_in, n) < 0) goto fail;
    self->nkeys = n;
    self->keys = keys;
    Py_DECREF(offs);
    Py_DECREF(bucks);
    return 0;
fail:
    Py_XDECREF(keys);
    Py_XDECREF(offs);
    Py_XDECREF(bucks);
    return -1;
}

/* Every key whose fingerprint sits at pos: append its start and the newlines before it. */
static int verify(Searcher *t, const uint8_t *buf, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t nl,
                  PyObject *starts, PyObject *nls) {
    uint32_t x;
    memcpy(&x, buf + pos, FP);
    uint32_t h = fp_hash(x);
    while (t->slot_key[h] >= 0) {
        if (t->slot_fp[h] == x) {
            for (int i = t->slot_key[h]; i >= 0; i = t->chain[i]) {
                Py_ssize_t st = pos - t->off[i];
                if (st < 0 || st + t->len[i] > n || memcmp(buf + st, t->key[i], (size_t)t->len[i]) != 0) continue;
                if (t->anchors != NULL) {  /* the first of its anchors that is there, else nothing */
                    Py_ssize_t j = t->first[i];
                    for (; j < t->first[i + 1]; j++) {
                        Py_ssize_t as = st - t->anc_off[j];
                        if (as >= 0 && as + t->anc_len[j] <= n && memcmp(buf + as, t->anc[j], (size_t)t->anc_len[j]) == 0)
                            break;
                    }
                    if (j == t->first[i + 1]) continue;
                    st -= t->anc_off[j];
                }
                PyObject *a = PyLong_FromSsize_t(st), *b = PyLong_FromSsize_t(nl);
                int bad = a == NULL || b == NULL || PyList_Append(starts, a) < 0 || PyList_Append(nls, b) < 0;
                Py_XDECREF(a);
                Py_XDECREF(b);
                if (bad) return -1;
            }
            return 0;
        }
        h = (h + 1) & (SLOTS - 1);
    }
    return 0;
}

/* Positions from p on, one at a time (the tail of a chunk, or every position without AVX2). */
static int scan_scalar(Searcher *t, const uint8_t *buf, Py_ssize_t n, Py_ssize_t p, Py_ssize_t *nl,
                       PyObject *starts, PyObject *nls) {
    for (; p < n; p++) {
        if (p + FP <= n) {
            int pass = 0;
            for (int s = 0; s < t->nsets && !pass; s++) {
                uint8_t m = 0xFF;
                for (int j = 0; j < FP; j++) m &= t->lo[s][j][buf[p + j] & 15] & t->hi[s][j][buf[p + j] >> 4];
                pass = m != 0;
            }
            if (pass && verify(t, buf, n, p, *nl, starts, nls) < 0) return -1;
        }
        if (buf[p] == '\n') (*nl)++;
    }
    return 0;
}

#if DENPEX_AVX2
__attribute__((target("avx2,popcnt,bmi")))
static int scan_avx2(Searcher *t, const uint8_t *buf, Py_ssize_t n, Py_ssize_t *nl_out,
                     PyObject *starts, PyObject *nls) {
    const __m256i low = _mm256_set1_epi8(0x0F);
    const __m256i newline = _mm256_set1_epi8('\n');
    const int S = t->nsets;
    __m256i lo[SETS][FP], hi[SETS][FP];
    for (int s = 0; s < S; s++)
        for (int j = 0; j < FP; j++) {
            lo[s][j] = _mm256_loadu_si256((const __m256i *)t->lo[s][j]);
            hi[s][j] = _mm256_loadu_si256((const __m256i *)t->hi[s][j]);
        }
    Py_ssize_t p = 0, nl = 0;
    for (; p + 32 + FP - 1 <= n; p += 32) {
        __m256i l[FP], h[FP];
        for (int j = 0; j < FP; j++) {  /* unrolled by the compiler: FP is a constant */
            __m256i v = _mm256_loadu_si256((const __m256i *)(buf + p + j));
            l[j] = _mm256_and_si256(v, low);
            h[j] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
        }
        __m256i v0 = _mm256_loadu_si256((const __m256i *)(buf + p));
        __m256i hit = _mm256_setzero_si256();
        for (int s = 0; s < S; s++) {  /* a tree of ANDs, not a chain: the four bytes in parallel */
            __m256i a = _mm256_and_si256(_mm256_shuffle_epi8(lo[s][0], l[0]), _mm256_shuffle_epi8(hi[s][0], h[0]));
            __m256i b = _mm256_and_si256(_mm256_shuffle_epi8(lo[s][1], l[1]), _mm256_shuffle_epi8(hi[s][1], h[1]));
            __m256i c = _mm256_and_si256(_mm256_shuffle_epi8(lo[s][2], l[2]), _mm256_shuffle_epi8(hi[s][2], h[2]));
            __m256i d = _mm256_and_si256(_mm256_shuffle_epi8(lo[s][3], l[3]), _mm256_shuffle_epi8(hi[s][3], h[3]));
            hit = _mm256_or_si256(hit, _mm256_and_si256(_mm256_and_si256(a, b), _mm256_and_si256(c, d)));
        }
        unsigned nlmask = (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v0, newline));
        if (!_mm256_testz_si256(hit, hit)) {
            unsigned cand = ~(unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(hit, _mm256_setzero_si256()));
            while (cand) {
                int k = __builtin_ctz(cand);
                cand &= cand - 1;
                Py_ssize_t before = nl + __builtin_popcount(nlmask & ((1u << k) - 1u));
                if (verify(t, buf, n, p + k, before, starts, nls) < 0) return -1;
            }
        }
        nl += __builtin_popcount(nlmask);
    }
    *nl_out = nl;
    return scan_scalar(t, buf, n, p, nl_out, starts, nls);
}

/* scan_avx2 with 64 bytes a step: the same shuffles (within each 16-byte lane) on twice the bytes. */
__attribute__((target("avx512f,avx512bw,popcnt,bmi")))
static int scan_avx512(Searcher *t, const uint8_t *buf, Py_ssize_t n, Py_ssize_t *nl_out,
                       PyObject *starts, PyObject *nls) {
    const __m512i low = _mm512_set1_epi8(0x0F);
    const __m512i newline = _mm512_set1_epi8('\n');
    const int S = t->nsets;
    __m512i lo[SETS][FP], hi[SETS][FP];
    for (int s = 0; s < S; s++)
        for (int j = 0; j < FP; j++) {
            lo[s][j] = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)t->lo[s][j]));
            hi[s][j] = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)t->hi[s][j]));
        }
    Py_ssize_t p = 0, nl = 0;
    for (; p + 64 + FP - 1 <= n; p += 64) {
        __m512i l[FP], h[FP];
        for (int j = 0; j < FP; j++) {
            __m512i v = _mm512_loadu_si512((const void *)(buf + p + j));
            l[j] = _mm512_and_si512(v, low);
            h[j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
        }
        __m512i hit = _mm512_setzero_si512();
        for (int s = 0; s < S; s++) {
            __m512i a = _mm512_and_si512(_mm512_shuffle_epi8(lo[s][0], l[0]), _mm512_shuffle_epi8(hi[s][0], h[0]));
            __m512i b = _mm512_and_si512(_mm512_shuffle_epi8(lo[s][1], l[1]), _mm512_shuffle_epi8(hi[s][1], h[1]));
            __m512i c = _mm512_and_si512(_mm512_shuffle_epi8(lo[s][2], l[2]), _mm512_shuffle_epi8(hi[s][2], h[2]));
            __m512i d = _mm512_and_si512(_mm512_shuffle_epi8(lo[s][3], l[3]), _mm512_shuffle_epi8(hi[s][3], h[3]));
            hit = _mm512_or_si512(hit, _mm512_and_si512(_mm512_and_si512(a, b), _mm512_and_si512(c, d)));
        }
        unsigned long long nlmask = _mm512_cmpeq_epi8_mask(_mm512_loadu_si512((const void *)(buf + p)), newline);
        unsigned long long cand = _mm512_test_epi8_mask(hit, hit);
        while (cand) {
            int k = __builtin_ctzll(cand);
            cand &= cand - 1;
            Py_ssize_t before = nl + __builtin_popcountll(nlmask & ((1ull << k) - 1ull));
            if (verify(t, buf, n, p + k, before, starts, nls) < 0) return -1;
        }
        nl += __builtin_popcountll(nlmask);
    }
    *nl_out = nl;
    return scan_scalar(t, buf, n, p, nl_out, starts, nls);
}

/* scan_avx512 with one 128-entry byte lookup (VBMI's two-table permute) per fingerprint byte in place of
   two nibble shuffles: half the permutes, and a bucket passes only bytes its keys hold (the nibble masks
   pass every mix of a bucket's low and high nibbles). A byte >= 0x80 looks up its low 7 bits: a false
   candidate at most, which verify() rejects. Same process, 1 MiB chunks of the bench logs, CPU s/GiB:
   0.30 -> 0.24 (gen_log), 0.39 -> 0.33 (NCCL-dense); verify() calls 162k -> 82k per 128 MiB (gen_log). */
__attribute__((target("avx512f,avx512bw,avx512vbmi,popcnt,bmi")))
static int scan_vbmi(Searcher *t, const uint8_t *buf, Py_ssize_t n, Py_ssize_t *nl_out,
                     PyObject *starts, PyObject *nls) {
    const __m512i newline = _mm512_set1_epi8('\n');
    const int S = t->nsets;
    __m512i ta[SETS][FP], tb[SETS][FP];
    for (int s = 0; s < S; s++)
        for (int j = 0; j < FP; j++) {
            ta[s][j] = _mm512_loadu_si512((const void *)t->full[s][j]);
            tb[s][j] = _mm512_loadu_si512((const void *)(t->full[s][j] + 64));
        }
    Py_ssize_t p = 0, nl = 0;
    for (; p + 64 + FP - 1 <= n; p += 64) {
        __m512i v[FP];
        for (int j = 0; j < FP; j++) v[j] = _mm512_loadu_si512((const void *)(buf + p + j));
        __m512i hit = _mm512_setzero_si512();
        for (int s = 0; s < S; s++) {
            __m512i a = _mm512_permutex2var_epi8(ta[s][0], v[0], tb[s][0]);
            __m512i b = _mm512_permutex2var_epi8(ta[s][1], v[1], tb[s][1]);
            __m512i c = _mm512_permutex2var_epi8(ta[s][2], v[2], tb[s][2]);
            __m512i d = _mm512_permutex2var_epi8(ta[s][3], v[3], tb[s][3]);
            hit = _mm512_or_si512(hit, _mm512_and_si512(_mm512_and_si512(a, b), _mm512_and_si512(c, d)));
        }
        unsigned long long nlmask = _mm512_cmpeq_epi8_mask(v[0], newline);
        unsigned long long cand = _mm512_test_epi8_mask(hit, hit);
        while (cand) {
            int k = __builtin_ctzll(cand);
            cand &= cand - 1;
            Py_ssize_t before = nl + __builtin_popcountll(nlmask & ((1ull << k) - 1ull));
            if (verify(t, buf, n, p + k, before, starts, nls) < 0) return -1;
        }
        nl += __builtin_popcountll(nlmask);
    }
    *nl_out = nl;
    return scan_scalar(t, buf, n, p, nl_out, starts, nls);
}

static int have_avx512(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

static int have_vbmi(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vbmi");
}

static int have_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("bmi");
}
#endif

static int use_avx2 = 0;
static int use_avx512 = 0;
static int use_vbmi = 0;
static int have_bmi2 = 0;  /* loud_avx512 spreads dword bits with pdep */

/* args[0] as a read-only buffer and its length, cut to args[1] when given and in range (scan, loud). On
   error nothing is held. */
static int buffer_and_length(PyObject *const *args, Py_ssize_t nargs, Py_buffer *view, Py_ssize_t *n) {
    if (PyObject_GetBuffer(args[0], view, PyBUF_SIMPLE) < 0) return -1;
    *n = view->len;
    if (nargs == 2) {
        Py_ssize_t limit = PyLong_AsSsize_t(args[1]);
        if (limit == -1 && PyErr_Occurred()) {
            PyBuffer_Release(view);
            return -1;
        }
        if (limit >= 0 && limit < *n) *n = limit;
    }
    return 0;
}

static PyObject *Searcher_scan(Searcher *self, PyObject *const *args, Py_ssize_t nargs) {
    if (self->keys == NULL) {
        PyErr_SetString(PyExc_TypeError, "Searcher was not initialised");
        return NULL;
    }
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "scan(buffer[, length])");
        return NULL;
    }
    Py_buffer view;
    Py_ssize_t n;
    if (buffer_and_length(args, nargs, &view, &n) < 0) return NULL;
    PyObject *starts = PyList_New(0), *nls = PyList_New(0);
    Py_ssize_t total = 0;
    int rc = -1;
    if (starts != NULL && nls != NULL) {
#if DENPEX_AVX2
        if (use_vbmi)
            rc = scan_vbmi(self, (const uint8_t *)view.buf, n, &total, starts, nls);
        else if (use_avx512)
            rc = scan_avx512(self, (const uint8_t *)view.buf, n, &total, starts, nls);
        else if (use_avx2)
            rc = scan_avx2(self, (const uint8_t *)view.buf, n, &total, starts, nls);
        else
#endif
            rc = scan_scalar(self, (const uint8_t *)view.buf, n, 0, &total, starts, nls);
    }
    PyBuffer_Release(&view);
    if (rc < 0) {
        Py_XDECREF(starts);
        Py_XDECREF(nls);
        return NULL;
    }
    return Py_BuildValue("(NNn)", starts, nls, total);
}

static PyMethodDef Searcher_methods[] = {
    {"scan", (PyCFunction)(void (*)(void))Searcher_scan, METH_FASTCALL,
     "scan(buffer[, length]) -> (starts, newlines before each start, newlines in all)\n\n"
     "Starts come in the order of their fingerprints, so a start can precede the one before it by\n"
     "less than a key's length; a position where two keys start is reported once per key."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject SearcherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "denpex.logs._teddy.Searcher",
    .tp_basicsize = sizeof(Searcher),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Searcher(keys, offsets, buckets): literal keys with their fingerprint offsets and buckets",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Searcher_init,
    .tp_dealloc = (destructor)Searcher_dealloc,
    .tp_methods = Searcher_methods,
};

/* loud(buffer[, length]) -> offset of the first byte where a line may hold a first-error candidate, or -1.
 *
 * denpex.logs.first_error skips a chunk whose lines cannot change its answer; this is the part of that
 * test that literal keys cannot express (the literal shapes are a Searcher's keys). It is a superset,
 * byte by byte, of what the pass's patterns need in the cleaned text: bytes the cleaning removes or
 * changes (control bytes, ESC, the C1 CSI/OSC forms, a colour code left without its ESC: removing
 * them can join two pieces into a new word); an ERROR / FATAL / CRITICAL level word (not followed by
 * [A-Za-z0-9_]); a glog or bracketed E/F level ("E1201 ", "[E:", "E file.cc:12]", "x E 2024-");
 * "error" in any case followed by the separators of an error code and a digit; "(" two digits ")".
 * A byte >= 0x80 stands for any non-ASCII character (a Unicode digit, space or non-word character),
 * so every test passes on it where the pattern could. */
enum { C_NONE = 0, C_DIRTY, C_C2, C_BRACKET, C_E, C_F, C_C, C_LOWE, C_PAREN };
static uint8_t loud_class[256];

static void loud_init(void) {
    for (int b = 0; b < 0x20; b++) loud_class[b] = C_DIRTY;
    loud_class['\t'] = loud_class['\n'] = loud_class['\r'] = C_NONE;
    loud_class[0x7f] = C_DIRTY;
    loud_class[0xc2] = C_C2;
    loud_class['['] = C_BRACKET;
    loud_class['E'] = C_E;
    loud_class['F'] = C_F;
    loud_class['C'] = C_C;
    loud_class['e'] = C_LOWE;
    loud_class['('] = C_PAREN;
}

static int is_digitish(uint8_t b) { return (b >= '0' && b <= '9') || b >= 0x80; }
static int is_word(uint8_t b) {
    return (b >= '0' && b <= '9') || (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || b == '_';
}
static int is_space(uint8_t b) { return b == ' ' || b == '\t' || b == '\r' || b == '\n'; }
static int is_pathish(uint8_t b) {
    return is_word(b) || b == '.' || b == '/' || b == '<' || b == '>' || b == '-' || b >= 0x80;
}
static int ci_eq(const uint8_t *p, const char *lower, Py_ssize_t k) {
    for (Py_ssize_t j = 0; j < k; j++)
        if ((p[j] | 0x20) != (uint8_t)lower[j]) return 0;
    return 1;
}

/* the level word w (of length k) at i, not followed by a word byte */
static int level_at(const uint8_t *buf, Py_ssize_t n, Py_ssize_t i, const char *w, Py_ssize_t k) {
    return i + k <= n && memcmp(buf + i, w, (size_t)k) == 0 && (i + k == n || !is_word(buf[i + k]));
}

/* glog-like E/F level at i (buf[i] is 'E' or 'F') */
static int glog_at(const uint8_t *buf, Py_ssize_t n, Py_ssize_t i) {
    Py_ssize_t j = i + 1;
    int wide = 0;
    while (j < n && is_digitish(buf[j])) wide |= buf[j++] >= 0x80;
    if (j - i - 1 >= 3 && (wide || (j < n && is_space(buf[j])))) return 1;  /* E1201 08:15:03 ..., [E1201 */
    if (wide && j - i - 1 >= 2) return 1;
    if (i + 1 < n && buf[i + 1] == ' ') {  /* [x E 2024-...] */
        j = i + 2;
        while (j < n && is_digitish(buf[j])) j++;
        if (j - i - 2 >= 4 && j < n && buf[j] == '-') return 1;
    }
    if (i + 1 < n && (buf[i + 1] == ' ' || buf[i + 1] == '\t' || buf[i + 1] >= 0x80)) {  /* E file.cc:12] */
        j = i + 2;
        Py_ssize_t from = j;
        while (j < n && is_pathish(buf[j])) j++;
        if (j > from || buf[i + 1] >= 0x80) {
            if (j < n && buf[j] == ':') {
                Py_ssize_t d = ++j;
                while (j < n && is_digitish(buf[j])) j++;
                if (j > d && j < n && buf[j] == ']') return 1;
            }
        }
    }
    return 0;
}

/* "error" (any case) at i, then the separators an error code allows, then a digit */
static int error_code_at(const uint8_t *buf, Py_ssize_t n, Py_ssize_t i) {
    if (i + 5 > n || !ci_eq(buf + i, "error", 5)) return 0;
    Py_ssize_t j = i + 5;
    while (j < n) {
        uint8_t b = buf[j];
        if (b >= 0x80 || (b >= '0' && b <= '9')) return 1;
        if (b == ' ' || b == '\t' || b == ':' || b == '=' || b == '#' || b == '(' || b == '-') {
            j++;
        } else if (j + 4 <= n && ci_eq(buf + j, "code", 4)) {
            j += 4;
        } else {
            return 0;
        }
    }
    return 0;
}

/* the test at position i, whose byte is of a class other than C_NONE */
static int loud_at(const uint8_t *buf, Py_ssize_t n, Py_ssize_t i) {
    switch (loud_class[buf[i]]) {
    case C_DIRTY:
        return 1;
    case C_C2:
        return i + 1 < n && (buf[i + 1] == 0x9b || buf[i + 1] == 0x9d);
    case C_BRACKET: {
        Py_ssize_t j = i + 1;
        while (j < n && (is_digitish(buf[j]) || buf[j] == ';')) j++;
        if (j < n && (buf[j] == 'm' || buf[j] == 'K')) return 1;  /* [0m, [1;31m, [K */
        return i + 2 < n && (buf[i + 1] == 'E' || buf[i + 1] == 'F') && buf[i + 2] == ':';
    }
    case C_E:
        return level_at(buf, n, i, "ERROR", 5) || glog_at(buf, n, i) || error_code_at(buf, n, i);
    case C_F:
        return level_at(buf, n, i, "FATAL", 5) || glog_at(buf, n, i);
    case C_C:
        return level_at(buf, n, i, "CRITICAL", 8);
    case C_LOWE:
        return error_code_at(buf, n, i);
    case C_PAREN: {
        Py_ssize_t j = i + 1;
        while (j < n && is_digitish(buf[j])) j++;
        return j - i - 1 >= 2 && j < n && buf[j] == ')';
    }
    default:
        return 0;
    }
}

static Py_ssize_t loud_scalar(const uint8_t *buf, Py_ssize_t n, Py_ssize_t i) {
    for (; i < n; i++)
        if (loud_class[buf[i]] != C_NONE && loud_at(buf, n, i)) return i;
    return -1;
}

#if DENPEX_AVX2
/* Per 32-byte block, the positions where loud_at can hold (a superset), then loud_at at each. The
 * byte and the byte after it are classified by nibble lookups (as the key search does), each class a
 * bit: for the byte, a control byte, DEL, 0xC2, '[', '(', E/F/C; for the byte after, what can follow
 * each of those. "erro" in any case is found with 4-byte compares at the four offsets. */
static uint8_t lt0_lo[32], lt0_hi[32], lt1_lo[32], lt1_hi[32];

enum { K_CTL0 = 1, K_CTL1 = 2, K_DEL = 4, K_C2 = 8, K_BR = 16, K_PAREN = 32, K_EFC = 64 };
enum { F_DIGIT = 1, F_HIGH = 2, F_SEMI = 4, F_M = 8, F_KEF = 16, F_SPACE = 32, F_RA = 64 };

static void rect(uint8_t *lo, uint8_t *hi, const char *his, const char *los, uint8_t bit) {
    for (const char *h = his; *h; h++) hi[(*h <= '9' ? *h - '0' : *h - 'a' + 10)] |= bit;
    for (const char *l = los; *l; l++) lo[(*l <= '9' ? *l - '0' : *l - 'a' + 10)] |= bit;
}

static void loud_tables(void) {
    uint8_t lo[16] = {0}, hi[16] = {0}, lo1[16] = {0}, hi1[16] = {0};
    rect(lo, hi, "0", "012345678bcef", K_CTL0);          /* 0x00-0x0F but tab, newline, CR */
    rect(lo, hi, "1", "0123456789abcdef", K_CTL1);       /* 0x10-0x1F */
    rect(lo, hi, "7", "f", K_DEL);
    rect(lo, hi, "c", "2", K_C2);
    rect(lo, hi, "5", "b", K_BR);                        /* [ */
    rect(lo, hi, "2", "8", K_PAREN);                     /* ( */
    rect(lo, hi, "4", "356", K_EFC);                     /* C E F */
    rect(lo1, hi1, "3", "0123456789", F_DIGIT);
    rect(lo1, hi1, "89abcdef", "0123456789abcdef", F_HIGH);
    rect(lo1, hi1, "3", "b", F_SEMI);                    /* ; */
    rect(lo1, hi1, "6", "d", F_M);                       /* m */
    rect(lo1, hi1, "4", "56b", F_KEF);                   /* E F K */
    rect(lo1, hi1, "02", "09", F_SPACE);                 /* space, tab (and NUL, ')') */
    rect(lo1, hi1, "45", "12", F_RA);                    /* A R (and B, Q) */
    for (int i = 0; i < 16; i++) {
        lt0_lo[i] = lt0_lo[i + 16] = lo[i];
        lt0_hi[i] = lt0_hi[i + 16] = hi[i];
        lt1_lo[i] = lt1_lo[i + 16] = lo1[i];
        lt1_hi[i] = lt1_hi[i + 16] = hi1[i];
    }
}

__attribute__((target("avx2,bmi")))
static Py_ssize_t loud_avx2(const uint8_t *buf, Py_ssize_t n) {
#define B(c) _mm256_set1_epi8((char)(c))
    const __m256i zero = _mm256_setzero_si256(), nib = B(0x0F);
    const __m256i t0l = _mm256_loadu_si256((const __m256i *)lt0_lo), t0h = _mm256_loadu_si256((const __m256i *)lt0_hi);
    const __m256i t1l = _mm256_loadu_si256((const __m256i *)lt1_lo), t1h = _mm256_loadu_si256((const __m256i *)lt1_hi);
    const __m256i fold = _mm256_set1_epi32(0x20202020), erro = _mm256_set1_epi32(0x6f727265); /* "erro" */
    Py_ssize_t p = 0;
    for (; p + 32 + 4 <= n; p += 32) {
        __m256i v0 = _mm256_loadu_si256((const __m256i *)(buf + p));
        __m256i v1 = _mm256_loadu_si256((const __m256i *)(buf + p + 1));
        __m256i c0 = _mm256_and_si256(_mm256_shuffle_epi8(t0l, _mm256_and_si256(v0, nib)),
                                      _mm256_shuffle_epi8(t0h, _mm256_and_si256(_mm256_srli_epi16(v0, 4), nib)));
        __m256i c1 = _mm256_and_si256(_mm256_shuffle_epi8(t1l, _mm256_and_si256(v1, nib)),
                                      _mm256_shuffle_epi8(t1h, _mm256_and_si256(_mm256_srli_epi16(v1, 4), nib)));
        /* what may follow: '[' a digit, >= 0x80, ';', m, K, E, F; '(' a digit or >= 0x80; C/E/F a digit,
         * >= 0x80, space, tab, A or R */
        __m256i br = _mm256_and_si256(c1, B(F_DIGIT | F_HIGH | F_SEMI | F_M | F_KEF));
        __m256i pa = _mm256_and_si256(c1, B(F_DIGIT | F_HIGH));
        __m256i ef = _mm256_and_si256(c1, B(F_DIGIT | F_HIGH | F_SPACE | F_RA));
        /* per byte: its class bits where the byte after allows them */
        __m256i keep = _mm256_or_si256(B(K_CTL0 | K_CTL1 | K_DEL | K_C2),
                                       _mm256_or_si256(_mm256_andnot_si256(_mm256_cmpeq_epi8(br, zero), B(K_BR)),
                                                       _mm256_andnot_si256(_mm256_cmpeq_epi8(pa, zero), B(K_PAREN))));
        keep = _mm256_or_si256(keep, _mm256_andnot_si256(_mm256_cmpeq_epi8(ef, zero), B(K_EFC)));
        unsigned cand = ~(unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_and_si256(c0, keep), zero));
        for (int k = 0; k < 4; k++) {  /* "erro" (any case) at p + k + 4j */
            __m256i w = _mm256_loadu_si256((const __m256i *)(buf + p + k));
            unsigned e = (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi32(_mm256_or_si256(w, fold), erro));
            cand |= (e & 0x11111111u) << k;
        }
        while (cand) {
            int k = __builtin_ctz(cand);
            cand &= cand - 1;
            if (loud_at(buf, n, p + k)) return p + k;
        }
    }
#undef B
    return loud_scalar(buf, n, p);
}
/* loud_avx2 with 64 bytes a step and mask registers (same classes, same answer): on the benign-error and
   coloured logs the loop itself, not loud_at, was most of the first-error pass's quiet test. */
__attribute__((target("avx512f,avx512bw,bmi,bmi2")))
static Py_ssize_t loud_avx512(const uint8_t *buf, Py_ssize_t n) {
#define B(c) _mm512_set1_epi8((char)(c))
    const __m512i nib = B(0x0F);
    const __m512i t0l = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)lt0_lo));
    const __m512i t0h = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)lt0_hi));
    const __m512i t1l = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)lt1_lo));
    const __m512i t1h = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)lt1_hi));
    const __m512i fold = _mm512_set1_epi32(0x20202020), erro = _mm512_set1_epi32(0x6f727265); /* "erro" */
    Py_ssize_t p = 0;
    for (; p + 64 + 4 <= n; p += 64) {
        __m512i v0 = _mm512_loadu_si512((const void *)(buf + p));
        __m512i v1 = _mm512_loadu_si512((const void *)(buf + p + 1));
        __m512i c0 = _mm512_and_si512(_mm512_shuffle_epi8(t0l, _mm512_and_si512(v0, nib)),
                                      _mm512_shuffle_epi8(t0h, _mm512_and_si512(_mm512_srli_epi16(v0, 4), nib)));
        __m512i c1 = _mm512_and_si512(_mm512_shuffle_epi8(t1l, _mm512_and_si512(v1, nib)),
                                      _mm512_shuffle_epi8(t1h, _mm512_and_si512(_mm512_srli_epi16(v1, 4), nib)));
        __mmask64 br = _mm512_test_epi8_mask(c1, B(F_DIGIT | F_HIGH | F_SEMI | F_M | F_KEF));
        __mmask64 pa = _mm512_test_epi8_mask(c1, B(F_DIGIT | F_HIGH));
        __mmask64 ef = _mm512_test_epi8_mask(c1, B(F_DIGIT | F_HIGH | F_SPACE | F_RA));
        unsigned long long cand = _mm512_test_epi8_mask(c0, B(K_CTL0 | K_CTL1 | K_DEL | K_C2))
                                  | (_mm512_test_epi8_mask(c0, B(K_BR)) & br)
                                  | (_mm512_test_epi8_mask(c0, B(K_PAREN)) & pa)
                                  | (_mm512_test_epi8_mask(c0, B(K_EFC)) & ef);
        for (int k = 0; k < 4; k++) {  /* "erro" (any case) at p + k + 4j: dword j's bit to byte 4j's */
            __m512i w = _mm512_loadu_si512((const void *)(buf + p + k));
            unsigned e = (unsigned)_mm512_cmpeq_epi32_mask(_mm512_or_si512(w, fold), erro);
            cand |= _pdep_u64(e, 0x1111111111111111ull) << k;
        }
        while (cand) {
            int k = __builtin_ctzll(cand);
            cand &= cand - 1;
            if (loud_at(buf, n, p + k)) return p + k;
        }
    }
#undef B
    return loud_scalar(buf, n, p);
}
#endif

static Py_ssize_t loud_scan(const uint8_t *buf, Py_ssize_t n) {
#if DENPEX_AVX2
    if (use_avx512 && have_bmi2) return loud_avx512(buf, n);
    if (use_avx2) return loud_avx2(buf, n);
#endif
    return loud_scalar(buf, n, 0);
}

/* Whether a line of buf (a run of bytes without a newline, at either end too) is over 65,536 bytes. */
static int has_long_line_scalar(const uint8_t *buf, Py_ssize_t n) {
    for (const uint8_t *q = buf; q < buf + n;) {
        const uint8_t *nl = memchr(q, '\n', (size_t)(buf + n - q));
        if (((nl ? nl : buf + n) - q) > 65536) return 1;
        q = nl ? nl + 1 : buf + n;
    }
    return 0;
}

#if DENPEX_AVX2
/* The same from each 64-byte block's first and last newline: a memchr per line (a few thousand per MiB)
   was half of unansi's time on a coloured log. */
__attribute__((target("avx512f,avx512bw,bmi,lzcnt")))
static int has_long_line_avx512(const uint8_t *buf, Py_ssize_t n) {
    const __m512i newline = _mm512_set1_epi8('\n');
    Py_ssize_t last = -1, p = 0;  /* the last newline so far */
    for (; p + 64 <= n; p += 64) {
        unsigned long long m = _mm512_cmpeq_epi8_mask(_mm512_loadu_si512((const void *)(buf + p)), newline);
        if (m) {
            if (p + __builtin_ctzll(m) - last - 1 > 65536) return 1;
            last = p + 63 - __builtin_clzll(m);
        }
    }
    for (; p < n; p++)
        if (buf[p] == '\n') {
            if (p - last - 1 > 65536) return 1;
            last = p;
        }
    return n - last - 1 > 65536;
}
#endif

static int has_long_line(const uint8_t *buf, Py_ssize_t n) {
#if DENPEX_AVX2
    if (use_avx512) return has_long_line_avx512(buf, n);
#endif
    return has_long_line_scalar(buf, n);
}

/* unansi(buffer[, out]) -> the bytes without their escape sequences (or, written into out, their length), or None.
 *
 * What normalise._ANSI removes from each line, where that is exact byte by byte: a CSI (ESC [, then
 * bytes 0x30-0x3F, then 0x20-0x2F, then a final byte 0x40-0x7E) and a two-byte ESC form (ESC and a
 * byte 0x40-0x5A or 0x5C-0x5F). None where a line holds anything else that the cleaning treats
 * differently: an OSC (ESC ]), an ESC that starts no sequence, the C1 forms (UTF-8 C2 9B / C2 9D),
 * or a line over 65,536 bytes (the scanner reads such a line in windows, which may cut a sequence).
 * loud() and the shape keys are then asked about the cleaned bytes; newlines stay where they were. */
static PyObject *unansi(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "unansi(buffer[, out])");
        return NULL;
    }
    Py_buffer view, into;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const uint8_t *buf = (const uint8_t *)view.buf;
    Py_ssize_t n = view.len;
    PyObject *out = NULL;
    uint8_t *o;
    if (nargs == 2) {  /* into a buffer the caller keeps: no fresh megabyte (and its page faults) per chunk */
        if (PyObject_GetBuffer(args[1], &into, PyBUF_WRITABLE) < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
        if (into.len < n) {
            PyBuffer_Release(&into);
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError, "unansi: out is shorter than the buffer");
            return NULL;
        }
        o = (uint8_t *)into.buf;
    } else {
        out = PyBytes_FromStringAndSize(NULL, n);
        if (out == NULL) {
            PyBuffer_Release(&view);
            return NULL;
        }
        o = (uint8_t *)PyBytes_AS_STRING(out);
    }
    Py_ssize_t w = 0, i = 0;
    int ok = 1;
    /* first over the raw bytes: the C1 forms, and every line's length */
    for (const uint8_t *q = memchr(buf, 0xc2, (size_t)n); ok && q != NULL;
         q = q + 1 < buf + n ? memchr(q + 1, 0xc2, (size_t)(buf + n - q - 1)) : NULL)
        if (q + 1 < buf + n && (q[1] == 0x9b || q[1] == 0x9d)) ok = 0;
    if (ok && has_long_line(buf, n)) ok = 0;
    while (ok && i < n) {
        const uint8_t *esc = memchr(buf + i, 0x1b, (size_t)(n - i));
        Py_ssize_t stop = esc ? esc - buf : n;
        memcpy(o + w, buf + i, (size_t)(stop - i));
        w += stop - i;
        if (esc == NULL) break;
        Py_ssize_t j = stop + 1;
        if (j < n && buf[j] == '[') {
            j++;
            while (j < n && buf[j] >= 0x30 && buf[j] <= 0x3f) j++;
            while (j < n && buf[j] >= 0x20 && buf[j] <= 0x2f) j++;
            if (j >= n || buf[j] < 0x40 || buf[j] > 0x7e) {
                ok = 0;
                break;
            }
            i = j + 1;
        } else if (j < n && ((buf[j] >= 0x40 && buf[j] <= 0x5a) || (buf[j] >= 0x5c && buf[j] <= 0x5f)) && buf[j] != ']') {
            i = j + 1;
        } else {
            ok = 0;
        }
    }
    PyBuffer_Release(&view);
    if (out == NULL) {
        PyBuffer_Release(&into);
        if (!ok) Py_RETURN_NONE;
        return PyLong_FromSsize_t(w);
    }
    if (!ok) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    if (_PyBytes_Resize(&out, w) < 0) return NULL;
    return out;
}

static PyObject *loud(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "loud(buffer[, length])");
        return NULL;
    }
    Py_buffer view;
    Py_ssize_t n;
    if (buffer_and_length(args, nargs, &view, &n) < 0) return NULL;
    Py_ssize_t at;
    Py_BEGIN_ALLOW_THREADS
    at = loud_scan((const uint8_t *)view.buf, n);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(at);
}

static PyObject *simd(PyObject *module, PyObject *unused) { return PyBool_FromLong(use_avx2); }

static int best_level = 0;  /* 0 one position at a time, 1 AVX2, 2 AVX-512BW, 3 with VBMI: what the CPU has */

/* level([n]) -> the level Searcher.scan uses (0 scalar, 1 AVX2, 2 AVX-512BW, 3 AVX-512 VBMI); with n, use
   at most n (tests compare them; loud() takes its AVX-512 loop at level 2 or more, AVX2 at 1). */
static PyObject *level(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "level([n])");
        return NULL;
    }
    if (nargs == 1) {
        long want = PyLong_AsLong(args[0]);
        if (want == -1 && PyErr_Occurred()) return NULL;
        int lv = want < best_level ? (int)(want < 0 ? 0 : want) : best_level;
        use_avx2 = lv >= 1;
        use_avx512 = lv >= 2;
        use_vbmi = lv >= 3;
    }
    return PyLong_FromLong(use_vbmi ? 3 : use_avx512 ? 2 : use_avx2 ? 1 : 0);
}

static PyMethodDef module_methods[] = {
    {"simd", simd, METH_NOARGS, "Whether scans use AVX2 (else one position at a time)."},
    {"level", (PyCFunction)(void (*)(void))level, METH_FASTCALL,
     "level([n]) -> the SIMD level of Searcher.scan (0 scalar, 1 AVX2, 2 AVX-512BW, 3 VBMI); with n, use at most n"},
    {"unansi", (PyCFunction)(void (*)(void))unansi, METH_FASTCALL,
     "unansi(buffer[, out]) -> its bytes without CSI and two-byte ESC sequences, or None where that is not\n"
     "exact; with out (a writable buffer at least as long), they are written there and their length returned"},
    {"loud", (PyCFunction)(void (*)(void))loud, METH_FASTCALL,
     "loud(buffer[, length]) -> offset of the first byte where a first-error candidate may start, or -1"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef teddy_module = {PyModuleDef_HEAD_INIT, "denpex.logs._teddy", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit__teddy(void) {
#if DENPEX_AVX2
    use_avx2 = have_avx2();
    use_avx512 = use_avx2 && have_avx512() && getenv("DENPEX_NO_AVX512") == NULL;
    use_vbmi = use_avx512 && have_vbmi();
    __builtin_cpu_init();
    have_bmi2 = __builtin_cpu_supports("bmi2");
#endif
    best_level = use_vbmi ? 3 : use_avx512 ? 2 : use_avx2 ? 1 : 0;
    loud_init();
#if DENPEX_AVX2
    loud_tables();
#endif
    if (PyType_Ready(&SearcherType) < 0) return NULL;
    PyObject *m = PyModule_Create(&teddy_module);
    if (m == NULL) return NULL;
    Py_INCREF(&SearcherType);
    if (PyModule_AddObject(m, "Searcher", (PyObject *)&SearcherType) < 0) {
        Py_DECREF(&SearcherType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
