"""The URL patterns learned traps are made of (:mod:`tarantula.core.traps`)."""

from __future__ import annotations

from tarantula.core.traps import matched, patterns


def test_a_url_s_patterns_free_one_numbering_segment_or_one_query_value():
    assert patterns("http://h/list?page=3&sort=asc") == [
        "http://h/list?page=*&sort=asc", "http://h/list?page=3&sort=*",
    ]  # fmt: skip
    assert patterns("http://h:8080/s/9f8e7d6c5b/item/12") == [
        "http://h:8080/s/{id}/item/12", "http://h:8080/s/9f8e7d6c5b/item/{n}",
    ]  # fmt: skip
    assert patterns("http://h/news/20261206/") == ["http://h/news/{date}/"]
    assert patterns("http://h/docs/guide/intro.html") == []  # words: nothing numbered


def test_pages_of_one_pattern_match_its_rule_and_others_do_not():
    rules = frozenset({"http://h/calendar/2026/12/{n}/", "http://h/list?page=*"})
    assert matched("http://h/calendar/2026/12/31/", rules) == "http://h/calendar/2026/12/{n}/"
    assert matched("http://h/list?page=900", rules) == "http://h/list?page=*"
    assert matched("http://h/calendar/2027/01/01/", rules) is None
    assert matched("http://h/list?page=2&sort=asc", rules) is None  # another pattern
    assert matched("http://h/list?page=2", frozenset()) is None
