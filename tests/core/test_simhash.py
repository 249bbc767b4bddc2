"""The near-duplicate fingerprint (:mod:`tarantula.core.simhash`): the SimHash a plain count
gives, the blocks that find near fingerprints, and the visible text it is taken from."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from xxhash import xxh3_64_digest

from tarantula.core import simhash
from tarantula.core.simhash import (
    block_keys,
    distance,
    fingerprint,
    fingerprint_words,
    visible_words,
)
from tarantula.store.sqlite.near import BlockIndex


def plain_simhash(words: list[bytes]) -> int:
    """Charikar's SimHash as the textbook writes it: each three-word shingle's 64-bit hash, and
    bit i set where more than half of the shingles have it."""

    def word_hash(word: bytes, place: bytes) -> int:
        digest = xxh3_64_digest(word).translate(place)
        return int.from_bytes(digest, "little")

    same = bytes(range(256))
    shingles = [
        word_hash(words[i], same) ^ word_hash(words[i + 1], simhash._SECOND)
        ^ word_hash(words[i + 2], simhash._THIRD)
        for i in range(len(words) - 2)
    ]  # fmt: skip
    return sum(
        1 << bit
        for bit in range(64)
        if sum((shingle >> bit) & 1 for shingle in shingles) > len(shingles) // 2
    )


@given(
    st.lists(
        st.sampled_from([b"a", b"b", b"c", b"dd", b"\xce\xb1", b"x1"]), min_size=100, max_size=400
    )
)
def test_the_fingerprint_is_the_plain_count_s(words):
    assert fingerprint_words(words) == plain_simhash(words)


def test_a_page_of_few_words_has_no_fingerprint():
    assert fingerprint_words([b"w"] * (simhash.MIN_WORDS - 1)) is None
    assert fingerprint_words([b"w"] * simhash.MIN_WORDS) is not None


def _flipped(value: int, bits: set[int]) -> int:
    for bit in bits:
        value ^= 1 << bit
    return value


@given(st.integers(0, 2**64 - 1), st.integers(0, 15), st.data())
def test_fingerprints_within_the_distance_share_a_block(value, apart, data):
    flips = data.draw(st.sets(st.integers(0, 63), max_size=apart))
    other = _flipped(value, flips)
    assert distance(value, other) == len(flips)
    assert set(block_keys(value, apart)) & set(block_keys(other, apart))


def test_blocks_cut_for_another_distance_do_not_meet():
    assert not set(block_keys(0, 3)) & set(block_keys(0, 4))


_BIT_SETS = st.sets(st.integers(0, 63), max_size=6)


@given(
    st.integers(0, 7),
    st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(0, 3), _BIT_SETS), max_size=40),
    st.lists(st.tuples(st.integers(0, 3), _BIT_SETS), max_size=10),
    st.integers(1, 6),
)
def test_the_block_index_finds_what_a_scan_finds(apart, bases, kept, asked, merge_every):
    # One process's fingerprints in memory (near.BlockIndex): kept ones near and far from a few
    # pages, some at the start and the rest added one by one (merged into the arrays every few).
    values = [_flipped(bases[i % len(bases)], bits) for i, bits in kept]
    index = BlockIndex(apart, values[: len(values) // 2], merge_every=merge_every)
    for value in values[len(values) // 2 :]:
        index.add(value)
    for i, bits in [*asked, *kept]:
        value = _flipped(bases[i % len(bases)], bits)
        assert index.within(value) == {v for v in values if distance(v, value) <= apart}


def test_only_the_visible_text_is_read():
    page = (
        b"<html><head><title>Title</title><style>p { color: red }</style>"
        b"<script>var hidden = 1;</script></head><body><!-- a comment -->"
        b'<p class="x">Shown <b>TEXT</b>&amp; more</p><template><p>inert</p></template>'
        b"<svg><text>drawn</text></svg><a href='/'>link text</a></body></html>"
    )
    assert visible_words(page) == [b"title", b"shown", b"text", b"&amp;", b"more", b"link", b"text"]


def test_one_word_changed_in_a_long_text_is_near_and_another_text_is_far():
    text = " ".join(f"w{i % 700}" for i in range(1500))
    changed = text.replace("w350 ", "other ", 1)
    elsewhere = " ".join(f"v{i % 700}" for i in range(1500))
    one, two, three = (fingerprint(f"<p>{t}</p>".encode()) for t in (text, changed, elsewhere))
    assert one is not None and two is not None and three is not None
    assert distance(one, two) <= 3 < 20 < distance(one, three)


# The one C pass (_simhash.c) against the Python path: pages made of the parts its scanner must
# read as the regular expressions do (hidden parts cut off, '>' in text, odd white space, bytes
# of any encoding, upper case).
_PARTS = [
    b"<p>", b"</p>", b"<b class='x>y'>", b"<script>", b"</script>", b"<script src=a>",
    b"</script >", b"<style>", b"</style>", b"<template>", b"</template>", b"<svg>", b"</svg>",
    b"<!--", b"-->", b"<scripts>", b"<", b">", b" ", b"\t", b"\x0b", b"\x0c", b"\r\n", b"\x1c",
    b"\x85", b"\xce\xb1", b"Word", b"WORD", b"word", b"a>b", b"x1", b"&amp;", b"\x00",
]  # fmt: skip


@given(st.lists(st.sampled_from(_PARTS), max_size=60), st.integers(0, 4))
def test_the_c_pass_reads_as_the_python_path(parts, padding):
    page = b"".join(parts)
    words = " ".join(f"w{i % 150}" for i in range(130 * padding)).encode()
    for html in (page, page + words, words + page, page + words + page):
        assert simhash._simhash is not None
        # Pages of three words and more counted, so that short pages are compared too.
        assert simhash._simhash.fingerprint(
            html, simhash._SECOND, simhash._THIRD, 3
        ) == fingerprint_words(visible_words(html), min_words=3)
        assert fingerprint(html) == simhash.fingerprint_python(html)


def test_the_c_pass_is_built():
    # setup.py builds it where a compiler is found, as on every machine the suite runs on; a
    # missing build would leave crawls on the Python path (the same fingerprints, slower).
    assert simhash._simhash is not None, "tarantula/core/_simhash.c was not built"
    # It keeps the substitution tables of its first call: other tables are refused, not used.
    assert fingerprint(b"<p>a b c</p>") is None  # a first call, with the module's tables
    with pytest.raises(ValueError, match="_SECOND and _THIRD"):
        simhash._simhash.fingerprint(b"<p>a b c</p>", bytes(256), simhash._THIRD, 3)


def test_real_documentation_pages_have_the_python_path_s_fingerprint():
    site = Path("/usr/share/doc/python3.11/html")
    if not site.is_dir():
        if os.environ.get("TARANTULA_REQUIRE_PYDOC"):
            pytest.fail(f"{site} is missing (apt-get install python3.11-doc)")
        pytest.skip(f"{site} is not installed")
    pages = sorted(site.rglob("*.html"))[::5]
    assert len(pages) > 100
    values = [
        (fingerprint(page), simhash.fingerprint_python(page))
        for page in map(Path.read_bytes, pages)
    ]
    assert [fast for fast, _ in values] == [python for _, python in values]
    assert sum(fast is not None for fast, _ in values) > 100
