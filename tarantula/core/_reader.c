/* The reading of tarantula/core/reader.py in one C pass.
 *
 * read(text, refs) -> (title, base, links, refs) | None gives exactly what reader.read_html's
 * Python path gives: the same tokens (comments, declarations, end tags, start tags with their
 * attributes, quoted or not, a '>' inside a quoted value), the same raw text elements, the same
 * attributes kept (the first of a repeated name, none without a value), the same links, refs,
 * title and base. What needs Python's own text functions is left to the Python helpers that
 * setup() is given: character references (html.unescape), anchor texts that hold markup or
 * references (reader._anchor_text), the title, a tag's refs other than a plain link's
 * (reader._tag_refs).
 *
 * It answers None, and the Python path reads the page, for a page holding one of the four
 * characters that Python's case-insensitive regular expressions take for an ASCII letter
 * (U+0130, U+0131, U+017F, U+212A): there the Python path's element names differ from the
 * tokenizer's, and this pass reads names in ASCII only.
 *
 * Why by hand: the Python path runs a regular expression a tag it looks at, and Python code a
 * link (its attributes, its ref, its anchor): about 2.4 ms a page of the Python documentation's
 * 330 links, and 0.13 ms a page of the bench web (docs/benchmarks.md). tests/core/test_reader.py
 * holds the two paths equal, on generated markup and on Debian's documentation sites.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* The Python helpers and types, from setup(). */
static PyObject *ref_type, *tag_refs, *anchor_text, *title_of, *short_text, *unescape;
/* Ref kinds. */
static PyObject *kind_url, *kind_style;

/* -- the attributes a reading uses (reader._USED) -------------------------------------------- */

enum { A_HREF, A_SRC, A_POSTER, A_BACKGROUND, A_ACTION, A_FORMACTION, A_CITE, A_LONGDESC,
       A_LOWSRC, A_XLINK_HREF, A_SRCSET, A_IMAGESRCSET, A_STYLE, A_DATA, A_CONTENT, A_REL,
       A_TYPE, A_HTTP_EQUIV, A_ALT, A_TITLE, N_USED };
static const char *used_names[N_USED] = {
    "href", "src", "poster", "background", "action", "formaction", "cite", "longdesc",
    "lowsrc", "xlink:href", "srcset", "imagesrcset", "style", "data", "content", "rel",
    "type", "http-equiv", "alt", "title"};
/* Those that may hold a URL (reader._URL_NAMES): a tag with none of them has no refs. */
#define URLISH(id) ((id) <= A_CONTENT)
/* reader._PLAIN_LINK: an <a> with these alone has its href as its only ref. */
#define PLAIN_LINK(id) ((id) == A_HREF || (id) == A_TITLE || (id) == A_REL || (id) == A_TYPE || (id) == A_ALT)
static PyObject *used_strings[N_USED];

/* The elements a reading looks at. */
enum { T_OTHER, T_A, T_AREA, T_FRAME, T_IFRAME, T_BASE, T_TITLE, T_SVG, T_MATH, T_FOREIGNOBJECT,
       T_SCRIPT, T_STYLE, T_TEXTAREA, T_XMP, T_NOEMBED, T_NOFRAMES, T_PLAINTEXT, N_TAGS };
static const char *tag_names[N_TAGS] = {
    "", "a", "area", "frame", "iframe", "base", "title", "svg", "math", "foreignobject",
    "script", "style", "textarea", "xmp", "noembed", "noframes", "plaintext"};
#define IS_RAW(t) ((t) == T_SCRIPT || (t) == T_STYLE || (t) == T_TEXTAREA || (t) == T_TITLE \
                   || (t) == T_XMP || (t) == T_IFRAME || (t) == T_NOEMBED || (t) == T_NOFRAMES)
#define IS_FOREIGN(t) ((t) == T_SVG || (t) == T_MATH || (t) == T_FOREIGNOBJECT)

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t size;
    PyObject *text;
} Text;

static inline Py_UCS4 at(const Text *t, Py_ssize_t i) { return PyUnicode_READ(t->kind, t->data, i); }
static inline int is_ws(Py_UCS4 c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f'; }
static inline int is_alpha(Py_UCS4 c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
static inline Py_UCS4 lower(Py_UCS4 c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* The next '<' from i, or the text's size. */
static Py_ssize_t next_lt(const Text *t, Py_ssize_t i) {
    if (i >= t->size)
        return t->size;
    if (t->kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *found = memchr((const Py_UCS1 *)t->data + i, '<', t->size - i);
        return found ? found - (const Py_UCS1 *)t->data : t->size;
    }
    while (i < t->size && at(t, i) != '<')
        i++;
    return i;
}

/* The next c from i, or -1. */
static Py_ssize_t find_char(const Text *t, Py_ssize_t i, Py_UCS4 c) {
    if (i >= t->size)
        return -1;
    return PyUnicode_FindChar(t->text, c, i, t->size, 1);
}

/* The lengths of used_names and tag_names, made at the module's import. */
static Py_ssize_t used_lengths[N_USED], tag_lengths[N_TAGS];

/* Whether the ASCII name at [start, end) is, lower-cased, one of names (an index), else -1; a
 * name is compared only with those of its length and first letter. */
static int name_id(const Text *t, Py_ssize_t start, Py_ssize_t end, const char **names,
                   const Py_ssize_t *lengths, int n, int first) {
    Py_ssize_t len = end - start;
    if (len > 15)
        return -1;
    char low[16];
    for (Py_ssize_t i = 0; i < len; i++) {
        Py_UCS4 c = at(t, start + i);
        if (c > 127)
            return -1;
        low[i] = (char)lower(c);
    }
    for (int k = first; k < n; k++)
        if (lengths[k] == len && names[k][0] == low[0] && memcmp(names[k], low, len) == 0)
            return k;
    return -1;
}

/* -- tokens ---------------------------------------------------------------------------------- */

typedef struct {
    Py_ssize_t start;       /* where its match starts: the separators before its name */
    Py_ssize_t name_start, name_end;
    Py_ssize_t value_start, value_end;  /* the value with its quotes; value_start < 0: none */
} Attribute;

typedef struct {
    Attribute *items;
    Py_ssize_t n, cap;
} Attributes;

static int add_attribute(Attributes *list, Attribute a) {
    if (list->n == list->cap) {
        Py_ssize_t cap = list->cap ? list->cap * 2 : 16;
        Attribute *items = PyMem_Realloc(list->items, cap * sizeof(Attribute));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        list->items = items;
        list->cap = cap;
    }
    list->items[list->n++] = a;
    return 0;
}

/* A tag's attributes from i (reader._ATTRIBUTES, possessive as it is), each added to list when
 * given; where they end. */
static Py_ssize_t scan_attributes(const Text *t, Py_ssize_t i, Attributes *list) {
    Py_ssize_t size = t->size;
    for (;;) {
        Py_ssize_t p = i;
        while (p < size && (is_ws(at(t, p)) || at(t, p) == '/'))
            p++;
        if (p >= size || at(t, p) == '>')
            return i;
        Attribute a = {i, p, 0, -1, -1};
        p++;  /* the name's first character may be '=' */
        while (p < size) {
            Py_UCS4 c = at(t, p);
            if (is_ws(c) || c == '/' || c == '>' || c == '=')
                break;
            p++;
        }
        a.name_end = p;
        Py_ssize_t q = p;
        while (q < size && is_ws(at(t, q)))
            q++;
        if (q < size && at(t, q) == '=') {
            q++;
            while (q < size && is_ws(at(t, q)))
                q++;
            a.value_start = q;
            Py_UCS4 c = q < size ? at(t, q) : 0;
            Py_ssize_t close = (c == '"' || c == '\'') ? find_char(t, q + 1, c) : -1;
            if (close == -2)
                return -2;
            if (close >= 0)
                q = close + 1;
            else
                while (q < size && !is_ws(at(t, q)) && at(t, q) != '>')
                    q++;
            a.value_end = q;
            p = q;
        }
        if (list != NULL && add_attribute(list, a) < 0)
            return -2;
        i = p;
    }
}

/* The end of a tag whose attributes end at i: its separators and its '>', if any. */
static Py_ssize_t tag_end(const Text *t, Py_ssize_t i) {
    while (i < t->size && (is_ws(at(t, i)) || at(t, i) == '/'))
        i++;
    return i < t->size && at(t, i) == '>' ? i + 1 : i;
}

/* The end of a comment that starts at i ("<!--"). */
static Py_ssize_t comment_end(const Text *t, Py_ssize_t i) {
    Py_ssize_t size = t->size, q = i + 4;
    if (q < size && at(t, q) == '>')
        return q + 1;
    if (q + 1 < size && at(t, q) == '-' && at(t, q + 1) == '>')
        return q + 2;
    for (; q + 2 < size; q++) {
        if (at(t, q) != '-' || at(t, q + 1) != '-')
            continue;
        if (at(t, q + 2) == '>')
            return q + 3;
        if (q + 3 < size && at(t, q + 2) == '!' && at(t, q + 3) == '>')
            return q + 4;
    }
    return size;
}

/* Where the content of raw text element `tag` that starts at i ends: its end tag, in any case,
 * followed by white space, '/', '>' or the end (reader._RAW_END), else the text's end. */
static Py_ssize_t raw_end(const Text *t, Py_ssize_t i, int tag) {
    const char *name = tag_names[tag];
    Py_ssize_t len = tag_lengths[tag], size = t->size;
    for (;;) {
        Py_ssize_t lt = next_lt(t, i);
        if (lt + 1 + len >= size)
            return size;
        if (at(t, lt + 1) == '/') {
            Py_ssize_t k = 0;
            while (k < len && lower(at(t, lt + 2 + k)) == (Py_UCS4)name[k])
                k++;
            if (k == len) {
                Py_ssize_t after = lt + 2 + len;
                if (after >= size)
                    return lt;
                Py_UCS4 c = at(t, after);
                if (is_ws(c) || c == '/' || c == '>')
                    return lt;
            }
        }
        i = lt + 1;
    }
}

/* A token of reader._TOKEN: a '<' that starts none (text), a comment, declaration or end tag
 * without a name (other), an end tag or a start tag, whose name is at [name_start, name_end) and
 * whose attributes follow it (read by scan_attributes, then tag_end: where the token ends). */
enum { TOKEN_TEXT, TOKEN_OTHER, TOKEN_END, TOKEN_START };

typedef struct {
    int kind;
    Py_ssize_t name_start, name_end;
    Py_ssize_t end;  /* where an other token ends */
} Token;

/* The token at the '<' at lt: 0, or -1 on an error. */
static int token_at(const Text *t, Py_ssize_t lt, Token *token) {
    Py_ssize_t size = t->size;
    Py_UCS4 c = lt + 1 < size ? at(t, lt + 1) : 0;
    Py_ssize_t name = lt + 1 + (c == '/');
    if (c == '/' ? name < size && is_alpha(at(t, name)) : is_alpha(c)) {
        Py_ssize_t name_end = name + 1;
        while (name_end < size && !is_ws(at(t, name_end)) && at(t, name_end) != '/'
               && at(t, name_end) != '>')
            name_end++;
        *token = (Token){c == '/' ? TOKEN_END : TOKEN_START, name, name_end, -1};
        return 0;
    }
    *token = (Token){TOKEN_OTHER, -1, -1, -1};
    if (c == '!' && lt + 3 < size && at(t, lt + 2) == '-' && at(t, lt + 3) == '-')
        token->end = comment_end(t, lt);
    else if (c == '/' && lt + 2 < size && at(t, lt + 2) == '>')
        token->end = lt + 3;
    else if (c == '!' || c == '?' || c == '/') {
        Py_ssize_t gt = find_char(t, lt + 2, '>');
        if (gt == -2)
            return -1;
        token->end = gt >= 0 ? gt + 1 : size;
    }
    else
        token->kind = TOKEN_TEXT;
    return 0;
}

/* -- the reading ----------------------------------------------------------------------------- */

typedef struct {
    Py_ssize_t value_start, value_end, start;  /* as Attribute */
    PyObject *value;                           /* its value, references decoded */
} Kept;

typedef struct {
    Text t;
    int refs;
    PyObject *links, *found, *title, *base;
    Attributes attributes;
    Kept kept[N_USED];
    int order[N_USED], n_kept;       /* the kept attributes, in the order first seen */
    unsigned char *foreign;          /* the open <svg>, <math>, <foreignObject> */
    Py_ssize_t n_foreign, cap_foreign, open_foreign[N_TAGS];
} Reading;

static void forget_kept(Reading *r) {
    for (int k = 0; k < r->n_kept; k++)
        Py_CLEAR(r->kept[r->order[k]].value);
    r->n_kept = 0;
}

static PyObject *substring(const Text *t, Py_ssize_t start, Py_ssize_t end) {
    return PyUnicode_Substring(t->text, start, end);
}

/* The attributes of r->attributes that a reading uses, into r->kept (reader._attributes). */
static int keep_attributes(Reading *r) {
    const Text *t = &r->t;
    for (Py_ssize_t k = 0; k < r->attributes.n; k++) {
        Attribute *a = &r->attributes.items[k];
        if (a->value_start < 0)
            continue;
        int id = name_id(t, a->name_start, a->name_end, used_names, used_lengths, N_USED, 0);
        if (id < 0 || r->kept[id].value != NULL)
            continue;
        Py_ssize_t vs = a->value_start, ve = a->value_end;
        if (ve > vs && (at(t, vs) == '"' || at(t, vs) == '\'')) {
            vs++;
            ve = ve - 1 > vs ? ve - 1 : vs;
        }
        PyObject *value = substring(t, vs, ve);
        if (value == NULL)
            return -1;
        if (ve > vs && PyUnicode_FindChar(t->text, '&', vs, ve, 1) >= 0) {
            Py_SETREF(value, PyObject_CallOneArg(unescape, value));
            if (value == NULL)
                return -1;
        }
        r->kept[id] = (Kept){a->value_start, a->value_end, a->start, value};
        r->order[r->n_kept++] = id;
    }
    return 0;
}

static PyObject *lower_name(const Text *t, Py_ssize_t start, Py_ssize_t end) {
    PyObject *name = substring(t, start, end);
    if (name == NULL)
        return NULL;
    PyObject *low = PyObject_CallMethod(name, "lower", NULL);
    Py_DECREF(name);
    return low;
}

/* item appended to list, the caller's reference to it dropped (NULL: a failure, its error set). */
static int append_new(PyObject *list, PyObject *item) {
    if (item == NULL)
        return -1;
    int failed = PyList_Append(list, item);
    Py_DECREF(item);
    return failed;
}

/* The refs of a tag with the kept attributes, added to r->found (reader._tag_refs). */
static int add_refs(Reading *r, int tag, Py_ssize_t name_start, Py_ssize_t name_end) {
    int urlish = 0, plain = 1;
    for (int k = 0; k < r->n_kept; k++) {
        urlish |= URLISH(r->order[k]);
        plain &= PLAIN_LINK(r->order[k]);
    }
    if (!urlish)
        return 0;
    if (tag == T_A && plain && r->kept[A_HREF].value != NULL) {
        /* A Ref made as tuple.__new__(Ref, items) makes it, not through the named tuple's
         * Python-level __new__. */
        Kept *h = &r->kept[A_HREF];
        PyObject *items = Py_BuildValue("((OnnOO))", kind_url, h->value_start, h->value_end,
                                        h->value, Py_False);
        if (items == NULL)
            return -1;
        PyObject *ref = PyTuple_Type.tp_new((PyTypeObject *)ref_type, items, NULL);
        Py_DECREF(items);
        return append_new(r->found, ref);
    }
    PyObject *seen = PyDict_New(), *name = NULL, *refs = NULL;
    int result = -1;
    if (seen == NULL)
        goto done;
    for (int k = 0; k < r->n_kept; k++) {
        Kept *a = &r->kept[r->order[k]];
        PyObject *item = Py_BuildValue("(nnOn)", a->value_start, a->value_end, a->value, a->start);
        if (item == NULL || PyDict_SetItem(seen, used_strings[r->order[k]], item) < 0) {
            Py_XDECREF(item);
            goto done;
        }
        Py_DECREF(item);
    }
    name = lower_name(&r->t, name_start, name_end);
    if (name == NULL)
        goto done;
    refs = PyObject_CallFunctionObjArgs(tag_refs, name, seen, NULL);
    if (refs == NULL)
        goto done;
    Py_ssize_t n = PyList_GET_SIZE(r->found);
    result = PyList_SetSlice(r->found, n, n, refs);
done:
    Py_XDECREF(seen);
    Py_XDECREF(name);
    Py_XDECREF(refs);
    return result;
}

/* Whether the ASCII letters at i, in any case, are word (lower-case). */
static int starts_with(const Text *t, Py_ssize_t i, const char *word) {
    for (; *word; word++, i++)
        if (i >= t->size || lower(at(t, i)) != (Py_UCS4)*word)
            return 0;
    return 1;
}

/* A link's anchor text from its content [start, end) (reader._anchor_text), for content with
 * nothing that may hide text (a script, a style sheet, a template) whose text, between its
 * tokens (_TOKEN.sub), is ASCII with no character reference and not empty: that text with each
 * run of white space and controls one space (index.clean), at most max_text characters.
 * 1: *text is it; 0: left to the Python helper (other content); -1: an error. */
static Py_ssize_t max_text;

static int anchor_in_c(const Text *page, Py_ssize_t start, Py_ssize_t end, PyObject **text) {
    if (end - start > 4096)
        return 0;
    Text t = *page;
    t.size = end;  /* tokens end with the content, as _TOKEN.sub reads the content alone */
    for (Py_ssize_t lt = next_lt(&t, start); lt < end; lt = next_lt(&t, lt + 1))
        if (starts_with(&t, lt + 1, "script") || starts_with(&t, lt + 1, "style")
            || starts_with(&t, lt + 1, "template"))
            return 0;  /* reader._MAY_HIDE, wherever it is */
    char out[4096];
    Py_ssize_t n = 0, i = start;
    int space = 1;  /* a space would be the first character, or follows one: left out */
    while (i < end) {
        Py_UCS4 c = at(&t, i);
        if (c == '<') {
            Token token;
            if (token_at(&t, i, &token) < 0)
                return -1;
            if (token.kind == TOKEN_OTHER) {
                i = token.end;
                continue;
            }
            if (token.kind != TOKEN_TEXT) {
                Py_ssize_t attributes_end = scan_attributes(&t, token.name_end, NULL);
                if (attributes_end == -2)
                    return -1;
                i = tag_end(&t, attributes_end);
                continue;
            }
        }
        if (c > 127 || c == '&')
            return 0;
        if (c <= 0x20 || c == 0x7f) {
            if (!space)
                out[n++] = ' ';
            space = 1;
        }
        else {
            out[n++] = (char)c;
            space = 0;
        }
        i++;
    }
    if (n > 0 && out[n - 1] == ' ')
        n--;
    if (n == 0)
        return 0;  /* its images' alt texts, then */
    *text = PyUnicode_DecodeASCII(out, n < max_text ? n : max_text, NULL);
    return *text == NULL ? -1 : 1;
}

/* The open link (at index anchor of r->links) ends where its content does, at end. */
static int close_anchor(Reading *r, Py_ssize_t anchor, Py_ssize_t start, Py_ssize_t end) {
    PyObject *content = NULL;
    int done = anchor_in_c(&r->t, start, end, &content);
    if (done < 0)
        return -1;
    if (!done) {
        PyObject *raw = substring(&r->t, start, end);
        if (raw == NULL)
            return -1;
        content = PyObject_CallOneArg(anchor_text, raw);
        Py_DECREF(raw);
        if (content == NULL)
            return -1;
    }
    PyObject *old = PyList_GET_ITEM(r->links, anchor);
    PyObject *link = PyTuple_Pack(2, PyTuple_GET_ITEM(old, 0), content);
    Py_DECREF(content);
    if (link == NULL)
        return -1;
    PyList_SetItem(r->links, anchor, link);  /* steals link, drops old */
    return 0;
}

/* A link (href, text made by short_text from the kept attribute text_id, if any). */
static int add_link(Reading *r, PyObject *href, int text_id) {
    PyObject *value = r->kept[text_id].value ? r->kept[text_id].value : Py_None;
    PyObject *text = PyObject_CallOneArg(short_text, value);
    if (text == NULL)
        return -1;
    PyObject *link = PyTuple_Pack(2, href, text);
    Py_DECREF(text);
    return append_new(r->links, link);
}

static int push_foreign(Reading *r, int tag) {
    if (r->n_foreign == r->cap_foreign) {
        Py_ssize_t cap = r->cap_foreign ? r->cap_foreign * 2 : 16;
        unsigned char *items = PyMem_Realloc(r->foreign, cap);
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        r->foreign = items;
        r->cap_foreign = cap;
    }
    r->foreign[r->n_foreign++] = (unsigned char)tag;
    r->open_foreign[tag]++;
    return 0;
}

static int run(Reading *r) {
    const Text *t = &r->t;
    Py_ssize_t size = t->size, pos = 0, anchor = -1, anchor_start = 0;
    while (pos < size) {
        Py_ssize_t lt = next_lt(t, pos);
        if (lt + 1 >= size)
            break;
        Token token;
        if (token_at(t, lt, &token) < 0)
            return -1;
        if (token.kind == TOKEN_TEXT || token.kind == TOKEN_OTHER) {
            pos = token.kind == TOKEN_TEXT ? lt + 1 : token.end;
            continue;
        }
        Py_ssize_t name_start = token.name_start, name_end = token.name_end;
        if (token.kind == TOKEN_END) {
            Py_ssize_t attributes_end = scan_attributes(t, name_end, NULL);
            if (attributes_end == -2)
                return -1;
            pos = tag_end(t, attributes_end);
            int closed = name_id(t, name_start, name_end, tag_names, tag_lengths, N_TAGS, 1);
            if (closed == T_A) {
                if (anchor >= 0 && close_anchor(r, anchor, anchor_start, lt) < 0)
                    return -1;
                anchor = -1;
            }
            else if (IS_FOREIGN(closed) && r->open_foreign[closed] > 0) {
                while (r->n_foreign > 0) {
                    int popped = r->foreign[--r->n_foreign];
                    r->open_foreign[popped]--;
                    if (popped == closed)
                        break;
                }
            }
            continue;
        }
        /* A start tag. */
        int tag = name_id(t, name_start, name_end, tag_names, tag_lengths, N_TAGS, 1);
        if (tag < 0)
            tag = T_OTHER;
        int link_tag = tag == T_A || tag == T_AREA || tag == T_FRAME || tag == T_IFRAME || tag == T_BASE;
        int read = link_tag || r->refs;
        r->attributes.n = 0;
        Py_ssize_t attributes_end = scan_attributes(t, name_end, read ? &r->attributes : NULL);
        if (attributes_end == -2)
            return -1;
        pos = tag_end(t, attributes_end);
        if (read) {
            forget_kept(r);
            if (keep_attributes(r) < 0)
                return -1;
            if (r->refs && add_refs(r, tag, name_start, name_end) < 0)
                return -1;
        }
        if (link_tag) {
            if (tag == T_A) {
                if (anchor >= 0) {
                    if (close_anchor(r, anchor, anchor_start, lt) < 0)
                        return -1;
                    anchor = -1;
                }
                if (r->kept[A_HREF].value != NULL) {
                    anchor = PyList_GET_SIZE(r->links);
                    anchor_start = pos;
                    if (append_new(r->links, PyTuple_Pack(2, r->kept[A_HREF].value, Py_None)) < 0)
                        return -1;
                }
            }
            else if (r->n_kept == 0) {
            }
            else if (tag == T_AREA) {
                if (r->kept[A_HREF].value != NULL && add_link(r, r->kept[A_HREF].value, A_ALT) < 0)
                    return -1;
            }
            else if (tag == T_BASE) {
                if (r->base == Py_None && r->kept[A_HREF].value != NULL)
                    Py_SETREF(r->base, Py_NewRef(r->kept[A_HREF].value));
            }
            else if (r->kept[A_SRC].value != NULL && add_link(r, r->kept[A_SRC].value, A_TITLE) < 0)
                return -1;
        }
        else if (IS_FOREIGN(tag) && (r->n_foreign > 0 || tag != T_FOREIGNOBJECT)
                 && !(pos - lt >= 2 && at(t, pos - 1) == '>' && at(t, pos - 2) == '/')) {
            if (push_foreign(r, tag) < 0)
                return -1;
        }
        if (IS_RAW(tag)) {
            Py_ssize_t content_end = raw_end(t, pos, tag);
            if (tag == T_STYLE && content_end > pos && r->refs) {
                PyObject *ref = PyObject_CallFunction(ref_type, "OnnNO", kind_style, pos, content_end,
                                                      substring(t, pos, content_end), Py_True);
                if (append_new(r->found, ref) < 0)
                    return -1;
            }
            else if (tag == T_TITLE && r->title == Py_None
                     && (r->n_foreign == 0 || r->foreign[r->n_foreign - 1] == T_FOREIGNOBJECT)) {
                PyObject *raw = substring(t, pos, content_end);
                if (raw == NULL)
                    return -1;
                Py_SETREF(r->title, PyObject_CallOneArg(title_of, raw));
                Py_DECREF(raw);
                if (r->title == NULL)
                    return -1;
            }
            pos = content_end;
        }
        else if (tag == T_PLAINTEXT)
            break;
    }
    if (anchor >= 0 && close_anchor(r, anchor, anchor_start, size) < 0)
        return -1;
    return 0;
}

/* Whether the text holds a character that Python's case-insensitive matching takes for an
 * ASCII letter (see the top of this file). */
static int has_folded_letter(PyObject *text) {
    if (PyUnicode_KIND(text) == PyUnicode_1BYTE_KIND)
        return 0;
    static const Py_UCS4 letters[] = {0x130, 0x131, 0x17f, 0x212a};
    Py_ssize_t size = PyUnicode_GET_LENGTH(text);
    for (int k = 0; k < 4; k++)
        if (PyUnicode_FindChar(text, letters[k], 0, size, 1) != -1)
            return 1;
    return 0;
}

static PyObject *read_page(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "read(text: str, refs: bool)");
        return NULL;
    }
    if (ref_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_reader.setup() was not called");
        return NULL;
    }
    PyObject *text = args[0];
    if (PyUnicode_READY(text) < 0)
        return NULL;
    if (has_folded_letter(text))
        Py_RETURN_NONE;
    int refs = PyObject_IsTrue(args[1]);
    if (refs < 0)
        return NULL;
    Reading r = {.t = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), text},
                 .refs = refs};
    r.links = PyList_New(0);
    r.found = refs ? PyList_New(0) : Py_NewRef(Py_None);
    r.title = Py_NewRef(Py_None);
    r.base = Py_NewRef(Py_None);
    PyObject *result = NULL;
    if (r.links != NULL && r.found != NULL && run(&r) == 0)
        result = PyTuple_Pack(4, r.title, r.base, r.links, r.found);
    forget_kept(&r);
    PyMem_Free(r.attributes.items);
    PyMem_Free(r.foreign);
    Py_XDECREF(r.links);
    Py_XDECREF(r.found);
    Py_XDECREF(r.title);
    Py_XDECREF(r.base);
    return result;
}

static PyObject *setup(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *ref, *refs_of, *anchor, *title, *short_of, *unescape_of;
    Py_ssize_t max;
    if (!PyArg_ParseTuple(args, "O!OOOOOn", &PyType_Type, &ref, &refs_of, &anchor, &title,
                          &short_of, &unescape_of, &max))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)ref, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "Ref must be a tuple type");
        return NULL;
    }
    Py_XSETREF(ref_type, Py_NewRef(ref));
    Py_XSETREF(tag_refs, Py_NewRef(refs_of));
    Py_XSETREF(anchor_text, Py_NewRef(anchor));
    Py_XSETREF(title_of, Py_NewRef(title));
    Py_XSETREF(short_text, Py_NewRef(short_of));
    Py_XSETREF(unescape, Py_NewRef(unescape_of));
    max_text = max;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"read", (PyCFunction)(void (*)(void))read_page, METH_FASTCALL,
     "read(text, refs): reader.read_html's (title, base, links, refs) in one C pass, or None."},
    {"setup", setup, METH_VARARGS,
     "setup(Ref, tag_refs, anchor_text, title_of, short_text, unescape, max_text)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_reader", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__reader(void) {
    for (int k = 0; k < N_USED; k++)
        used_lengths[k] = (Py_ssize_t)strlen(used_names[k]);
    for (int k = 0; k < N_TAGS; k++)
        tag_lengths[k] = (Py_ssize_t)strlen(tag_names[k]);
    for (int k = 0; k < N_USED; k++)
        if ((used_strings[k] = PyUnicode_InternFromString(used_names[k])) == NULL)
            return NULL;
    if ((kind_url = PyUnicode_InternFromString("url")) == NULL
        || (kind_style = PyUnicode_InternFromString("style")) == NULL)
        return NULL;
    return PyModule_Create(&module);
}
