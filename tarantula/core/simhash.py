"""Near-duplicate fingerprints (SPEC 6): a 64-bit SimHash of a page's visible text, and the blocks
that find the fingerprints near one without a scan (Manku, Jain and Das Sarma, "Detecting
Near-Duplicates for Web Crawling", WWW 2007; the fingerprint is Charikar's).

The features are the text's word shingles (three words in a row): scripts, styles, comments and
markup are left out, and words are compared case-blind. Each shingle gets a 64-bit hash; bit ``i``
of the fingerprint is set when more than half of the shingles' hashes have it set. Two pages whose
texts share most of their shingles have fingerprints a few bits apart (their Hamming distance).

Near fingerprints are found as the paper does: with a distance ``d`` the 64 bits are cut into
``d + 1`` blocks, and two fingerprints at most ``d`` bits apart are equal in at least one block
(pigeonhole), so a store keeps each fingerprint under each of its blocks (:func:`block_keys`) and
looks up only the fingerprints that share a block with a page's.

Why by hand: no maintained library computes a SimHash at a crawler's pace in pure Python (the
``simhash`` package's per-feature loop costs milliseconds a page). Here each word is hashed by
xxHash's XXH3 (the ``xxhash`` package: a C call of about 40 ns, with no table to look up, so it
costs in a crawl what it costs alone, where a dictionary of the site's words missed the CPU's
caches at 0.2 µs a word), the hashes are joined as byte strings, a shingle's hash is the XOR of
its three words' position hashes (one big-integer XOR for the whole page), and the 64 bit counts
are 64 counters side by side, added bit-sliced in a dozen big-integer steps (docs/benchmarks.md).
That path still calls C once a word; where the project was built with a C compiler,
:func:`fingerprint` reads the page in one C pass instead (``_simhash.c``, with xxHash's own
header), which gives the same fingerprint in about a tenth of the time.

>>> a = fingerprint(" ".join(f"w{i}" for i in range(400)).encode())
>>> b = fingerprint(" ".join(f"w{i}" for i in range(400) if i != 200).encode())
>>> c = fingerprint(" ".join(f"v{i}" for i in range(400)).encode())
>>> distance(a, b) <= 3 < distance(a, c)
True
>>> fingerprint(b"<p>too few words</p>") is None
True
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator

from xxhash import xxh3_64_digest

try:
    from tarantula.core import _simhash
except ImportError:  # built with no C compiler: the fingerprint is taken in Python
    _simhash = None  # type: ignore[assignment]

BITS = 64
#: Words in a shingle.
SHINGLE = 3
#: Pages with fewer words than this get no fingerprint: a few words say too little to call two
#: pages the same (an empty frame set, a redirect page, an error stub).
MIN_WORDS = 100

# What a browser does not show: scripts, style sheets, comments, templates and drawings, found by
# their start tags (in lower case, as nearly every page writes them).
_HIDDEN = re.compile(rb"<(script|style|template|svg)|<!--")
_HIDDEN_END = {b"script": b"</script", b"style": b"</style", b"template": b"</template",
               b"svg": b"</svg", None: b"-->"}  # fmt: skip
# The text: what follows each tag up to the next.
_TEXT = re.compile(rb">\s*+([^<]++)")  # (white space alone between two tags is no text)
_ALL = (1 << BITS) - 1


def _permutation(seed: int) -> bytes:
    """A fixed byte substitution (a translation table): a word's hash as the second or third
    word of a shingle is its hash with each byte substituted, so the three places differ."""
    return bytes(
        sorted(range(256), key=lambda value: hashlib.blake2b(bytes((seed, value))).digest())
    )


_SECOND, _THIRD = _permutation(2), _permutation(3)


def _shown(html: bytes) -> bytes:
    """``html`` without what a browser does not show."""
    hidden = _HIDDEN.search(html)
    if hidden is None:
        return html
    kept = []
    done = 0
    while hidden is not None:
        kept.append(html[done : hidden.start()])
        stop = html.find(_HIDDEN_END[hidden[1]], hidden.end())
        if stop < 0:
            return b" ".join(kept)
        done = stop + len(_HIDDEN_END[hidden[1]])
        if hidden[1] is not None:  # an end tag: up to its '>'
            close = html.find(b">", done)
            done = len(html) if close < 0 else close + 1
        hidden = _HIDDEN.search(html, done)
    kept.append(html[done:])
    return b" ".join(kept)


def visible_words(html: bytes) -> list[bytes]:
    """The words of an HTML page's visible text: lower-cased (ASCII letters), split at white
    space, as bytes of its own encoding."""
    return b" ".join(_TEXT.findall(b">" + _shown(html))).lower().split()


def fingerprint_words(words: list[bytes], min_words: int = MIN_WORDS) -> int | None:
    """The SimHash of ``words``' shingles; None when there are fewer than ``min_words`` (at least
    three) to tell."""
    if len(words) < max(min_words, SHINGLE):
        return None
    count = len(words) - SHINGLE + 1
    # Shingle i's hash: hash(word i) ^ second(word i+1) ^ third(word i+2), in lane i (64 bits)
    # of one big integer; one XOR gives them all.
    hashes = b"".join(map(xxh3_64_digest, words))
    first = int.from_bytes(hashes, "little")
    second = int.from_bytes(hashes.translate(_SECOND), "little") >> 64
    third = int.from_bytes(hashes.translate(_THIRD), "little") >> 128
    planes = [(first ^ second ^ third) & ((1 << (count * BITS)) - 1)]
    # Count each bit over the lanes, 64 counters side by side: the lanes' upper half is added to
    # their lower half, bit-sliced (plane j holds bit j of every counter), until one lane is left.
    lanes = count
    while lanes > 1:
        half = (lanes + 1) // 2
        shift = half * BITS
        low = (1 << shift) - 1
        added = []
        carry = 0
        for plane in planes:
            a, b = plane & low, plane >> shift
            either = a ^ b
            added.append(either ^ carry)
            carry = (a & b) | (carry & either)
        if carry:
            added.append(carry)
        planes, lanes = added, half
    # Bit k is set where counter k > count / 2, compared bit-sliced from the top bit down.
    threshold = count // 2
    above, equal = 0, _ALL
    for j in range(max(len(planes), threshold.bit_length()) - 1, -1, -1):
        plane = planes[j] if j < len(planes) else 0
        if (threshold >> j) & 1:
            equal &= plane
        else:
            above |= equal & plane
            equal &= ~plane & _ALL
    return above


def fingerprint(html: bytes) -> int | None:
    """The SimHash of an HTML page's visible text; None when it has too few words to tell."""
    if _simhash is not None:
        return _simhash.fingerprint(html, _SECOND, _THIRD, MIN_WORDS)
    return fingerprint_python(html)


def fingerprint_python(html: bytes) -> int | None:
    """:func:`fingerprint` in Python alone (where the C pass was not built)."""
    return fingerprint_words(visible_words(html))


def distance(a: int, b: int) -> int:
    """How many bits two fingerprints differ in."""
    return (a ^ b).bit_count()


def blocks(distance: int) -> list[tuple[int, int]]:
    """The (shift, width) of the blocks the 64 bits are cut into: ``distance + 1``, and at
    least two (a block fits in 32 bits)."""
    count = max(distance + 1, 2)
    edges = [BITS * i // count for i in range(count + 1)]
    return [(edges[i], edges[i + 1] - edges[i]) for i in range(count)]


def block_keys(value: int, distance: int) -> Iterator[int]:
    """One key per block of ``value``: two fingerprints at most ``distance`` apart share one. A
    key holds the block's number and the block count, so keys of different distances differ."""
    cut = blocks(distance)
    for number, (shift, width) in enumerate(cut):
        yield (len(cut) << 40) | (number << 32) | ((value >> shift) & ((1 << width) - 1))


def block_codes(value: int, distance: int) -> list[bytes]:
    """:func:`block_keys` in 6 bytes each, as a store keeps them: the block count, the block's
    number, and its (at most 32) bits.

    >>> [code.hex() for code in block_codes(0x0123456789ABCDEF, 3)]
    ['04000000cdef', '0401000089ab', '040200004567', '040300000123']
    """
    return [key.to_bytes(6, "big") for key in block_keys(value, distance)]
