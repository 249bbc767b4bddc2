/* The near-duplicate fingerprint of tarantula/core/simhash.py in one C pass.
 *
 * fingerprint(html, second, third, min_words) -> int | None gives exactly what
 * simhash.fingerprint_words(simhash.visible_words(html)) gives: the same hidden parts left out,
 * the same text between tags, the same ASCII lower-casing and white space, XXH3 word hashes
 * (xxHash's own header, vendored in _xxhash/ under its BSD licence, as the xxhash package that
 * the Python path calls builds it), the same byte substitutions for a word's second and third
 * place in a shingle, and the same majority per bit. Why by hand: the Python path calls C once
 * a word (the split, the hash) and costs about 0.8 ms a page of 3,400 words; here the page is
 * read once (docs/benchmarks.md). tests/core/test_simhash.py holds the two paths equal.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define XXH_INLINE_ALL
#include "xxhash.h"

/* spread[b]: byte j is bit j of b, so eight bit counters are added in one 64-bit addition. */
static uint64_t spread[256];
/* kind[c]: 1 for ASCII white space (as bytes.split() and the bytes pattern \s take it), 2 for an
 * upper-case ASCII letter; lower[c]: c lower-cased as bytes.lower() does. */
static uint8_t kind[256], lower[256];

/* The places' byte substitutions by byte of a hash: [j][b] is b's substitute in byte j. Made
 * from the caller's 256-byte tables at its first call (simhash._SECOND and _THIRD, constants),
 * with the interpreter's lock held; a call with other tables is refused, so no call reads them
 * while they change. */
static uint64_t second_table[8][256], third_table[8][256];
static uint8_t second_source[256], third_source[256];
static int tables_made = 0;

static int make_tables(const uint8_t *second, const uint8_t *third) {
    if (tables_made)
        return memcmp(second, second_source, 256) == 0 && memcmp(third, third_source, 256) == 0;
    memcpy(second_source, second, 256);
    memcpy(third_source, third, 256);
    for (int j = 0; j < 8; j++)
        for (int b = 0; b < 256; b++) {
            second_table[j][b] = (uint64_t)second[b] << (8 * j);
            third_table[j][b] = (uint64_t)third[b] << (8 * j);
        }
    tables_made = 1;
    return 1;
}

typedef struct {
    uint64_t previous[2][3];       /* the last two words' hashes in each place */
    Py_ssize_t words;
    uint64_t acc[8];               /* bit 8j+m's count of the shingles since the last flush, in byte m of acc[j] */
    unsigned pending;
    uint64_t counts[64];
} Fingerprint;

static inline uint64_t substituted(uint64_t digest_le, uint64_t table[8][256]) {
    uint64_t out = 0;
    for (int j = 0; j < 8; j++)
        out |= table[j][(digest_le >> (8 * j)) & 0xff];
    return out;
}

static void flush(Fingerprint *f) {
    for (int j = 0; j < 8; j++) {
        for (int m = 0; m < 8; m++)
            f->counts[8 * j + m] += (f->acc[j] >> (8 * m)) & 0xff;
        f->acc[j] = 0;
    }
    f->pending = 0;
}

static void add_word(Fingerprint *f, const uint8_t *word, size_t length) {
    /* The Python path reads a word's hash as the little-endian integer of XXH3's canonical
     * (big-endian) digest, so the hash's bytes swapped. */
    uint64_t hash = __builtin_bswap64(XXH3_64bits(word, length));
    uint64_t first = hash, second = substituted(hash, second_table),
             third = substituted(hash, third_table);
    if (f->words >= 2) {
        uint64_t shingle = f->previous[0][0] ^ f->previous[1][1] ^ third;
        for (int j = 0; j < 8; j++)
            f->acc[j] += spread[(shingle >> (8 * j)) & 0xff];
        if (++f->pending == 255)
            flush(f);
    }
    f->previous[0][0] = f->previous[1][0];
    f->previous[0][1] = f->previous[1][1];
    f->previous[0][2] = f->previous[1][2];
    f->previous[1][0] = first;
    f->previous[1][1] = second;
    f->previous[1][2] = third;
    f->words++;
}

/* The words of text[0:length] (text between two tags), lower-cased in place. */
static void add_text(Fingerprint *f, uint8_t *text, size_t length) {
    size_t i = 0;
    while (i < length) {
        while (i < length && kind[text[i]] == 1)
            i++;
        size_t start = i;
        while (i < length && kind[text[i]] != 1) {
            text[i] = lower[text[i]];
            i++;
        }
        if (i > start)
            add_word(f, text + start, i - start);
    }
}

/* Where a hidden part starts at or after `from` (simhash._HIDDEN), and its end marker. */
static const uint8_t *hidden_start(const uint8_t *from, const uint8_t *end, const char **marker,
                                   int *is_tag) {
    static const struct { const char *open, *close; } kinds[] = {
        {"script", "</script"}, {"style", "</style"}, {"template", "</template"}, {"svg", "</svg"},
    };
    const uint8_t *at = from;
    while ((at = memchr(at, '<', end - at)) != NULL) {
        size_t left = end - at - 1;
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            size_t n = strlen(kinds[k].open);
            if (left >= n && memcmp(at + 1, kinds[k].open, n) == 0) {
                *marker = kinds[k].close;
                *is_tag = 1;
                return at;
            }
        }
        if (left >= 3 && memcmp(at + 1, "!--", 3) == 0) {
            *marker = "-->";
            *is_tag = 0;
            return at;
        }
        at++;
    }
    return NULL;
}

/* simhash._shown: the page without its hidden parts, the parts kept joined by a space, written
 * to out (at most length + one byte a part). Returns the length written. */
static size_t shown(const uint8_t *html, size_t length, uint8_t *out) {
    const uint8_t *end = html + length, *done = html;
    uint8_t *o = out;
    int first = 1;
    const char *marker;
    int is_tag;
    const uint8_t *hidden;
    while ((hidden = hidden_start(done, end, &marker, &is_tag)) != NULL) {
        if (!first)
            *o++ = ' ';
        first = 0;
        memcpy(o, done, hidden - done);
        o += hidden - done;
        size_t opened = is_tag ? strlen(marker) - 1 : 4; /* "<script" is "</script" less '/' */
        size_t n = strlen(marker);
        const uint8_t *stop = memmem(hidden + opened, end - hidden - opened, marker, n);
        if (stop == NULL)
            return o - out;
        done = stop + n;
        if (is_tag) {
            const uint8_t *close = memchr(done, '>', end - done);
            done = close == NULL ? end : close + 1;
        }
    }
    if (!first)
        *o++ = ' ';
    memcpy(o, done, end - done);
    o += end - done;
    return o - out;
}

static PyObject *fingerprint(PyObject *module, PyObject *args) {
    Py_buffer html, second, third;
    Py_ssize_t min_words;
    if (!PyArg_ParseTuple(args, "y*y*y*n", &html, &second, &third, &min_words))
        return NULL;
    PyObject *result = NULL;
    if (second.len != 256 || third.len != 256 || !make_tables(second.buf, third.buf)) {
        PyErr_SetString(PyExc_ValueError, "the substitution tables are simhash._SECOND and _THIRD");
        goto done;
    }
    size_t length = (size_t)html.len;
    /* Each joining space stands for a hidden part of at least four bytes left out. */
    uint8_t *text = PyMem_Malloc(length + 1);
    if (text == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Fingerprint f;
    memset(&f, 0, sizeof f);
    Py_BEGIN_ALLOW_THREADS
    size_t n = shown(html.buf, length, text);
    /* simhash._TEXT over b">" + shown: from each '>' (and the start) the text up to the next '<'. */
    size_t i = 0;
    int in_text = 1;
    while (i < n) {
        if (in_text) {
            uint8_t *stop = memchr(text + i, '<', n - i);
            size_t upto = stop == NULL ? n : (size_t)(stop - text);
            add_text(&f, text + i, upto - i);
            i = upto + 1;
            in_text = 0;
        } else {
            uint8_t *close = memchr(text + i, '>', n - i);
            if (close == NULL)
                break;
            i = (size_t)(close - text) + 1;
            in_text = 1;
        }
    }
    flush(&f);
    Py_END_ALLOW_THREADS
    PyMem_Free(text);
    if (f.words < min_words || f.words < 3) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    uint64_t threshold = (uint64_t)(f.words - 2) / 2, value = 0;
    for (int k = 0; k < 64; k++)
        if (f.counts[k] > threshold)
            value |= (uint64_t)1 << k;
    result = PyLong_FromUnsignedLongLong(value);
done:
    PyBuffer_Release(&html);
    PyBuffer_Release(&second);
    PyBuffer_Release(&third);
    return result;
}

static PyMethodDef methods[] = {
    {"fingerprint", fingerprint, METH_VARARGS,
     "fingerprint(html, second, third, min_words): simhash.fingerprint in one C pass."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_simhash", NULL, -1, methods};

PyMODINIT_FUNC PyInit__simhash(void) {
    for (int b = 0; b < 256; b++) {
        uint64_t value = 0;
        for (int j = 0; j < 8; j++)
            value |= (uint64_t)((b >> j) & 1) << (8 * j);
        spread[b] = value;
        kind[b] = b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\x0b' || b == '\x0c'
                      ? 1
                      : (b >= 'A' && b <= 'Z' ? 2 : 0);
        lower[b] = kind[b] == 2 ? b + ('a' - 'A') : b;
    }
    return PyModule_Create(&module);
}
