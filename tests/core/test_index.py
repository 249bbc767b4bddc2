"""Index records (SPEC 7.2): format, sanitizing and round trip."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from tarantula.core.index import UNKNOWN, IndexRecord, clean, format_record, parse_index


def record(**overrides):
    values = dict(
        url_md5="d41d8cd98f00b204e9800998ecf8427e",
        url="http://h/",
        original_url="http://h/#top",
        title="Home",
        encoding="utf-8",
        type="html",
        last_modified=None,
        server_date="Tue, 15 Nov 1994 08:12:31 GMT",
        links=(),
    )
    values.update(overrides)
    return IndexRecord(**values)


def test_record_line_fields_and_unknowns():
    text = format_record(
        record(links=(("http://h/a", "A"), ("http://h/a", "A"), ("http://h/a", "other")))
    )
    lines = text.split("\n")
    assert lines[0].split("\t") == [
        "d41d8cd98f00b204e9800998ecf8427e",
        "http://h/",
        "http://h/#top",
        "Home",
        "utf-8",
        "html",
        "-",
        "Tue, 15 Nov 1994 08:12:31 GMT",
    ]
    assert lines[1:] == ["\t@http://h/a A", "\t@http://h/a other", ""]


def test_title_cannot_forge_lines():
    nasty = "T\n\t@http://evil/ x\nffffffffffffffffffffffffffffffff\thttp://evil/\r\u2028\x85\x0b\x1c end"
    text = format_record(record(title=nasty, links=(("http://h/a", nasty),)))
    assert text.count("\n") == 2
    assert [r.title for r in parse_index(text)] == [clean(nasty)]
    assert len(text.splitlines()) == 2  # also safe for readers that split on Unicode line breaks


def test_empty_title_is_unknown_and_empty_anchor_has_no_space():
    text = format_record(record(title="  \n ", links=(("http://h/img", ""),)))
    assert text.split("\t")[3] == "-"
    assert text.endswith("\t@http://h/img\n")


text_values = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)


@given(text_values, st.lists(st.tuples(st.just("http://h/x"), text_values), max_size=5))
@example(" - ", [("http://h/x", "-")])
def test_round_trip_of_arbitrary_titles_and_anchors(title, links):
    rec = record(title=title, links=tuple(links))
    (parsed,) = parse_index(format_record(rec))
    # SPEC 7.2 writes `-` for a page without a title: a title of just `-` reads back as none.
    assert parsed.title == (None if clean(title) in ("", UNKNOWN) else clean(title))
    expected = tuple(dict.fromkeys((u, clean(a)) for u, a in links))
    assert parsed.links == expected
