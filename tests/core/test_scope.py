"""Scope rules of SPEC 4, on normalized URLs."""

from __future__ import annotations

import pytest

from tarantula.core.scope import build_scope, origin, seed_domains


def test_domain_scope_reduces_subdomains_and_strips_www():
    assert seed_domains(["foo1.domain.com", "foo2.foo1.domain.com", "foo3.foo1.domain.com"]) == {
        "foo1.domain.com"
    }
    assert seed_domains(["www.csd.uoc.gr", "www.ics.forth.gr"]) == {"csd.uoc.gr", "ics.forth.gr"}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://csd.uoc.gr/", True),
        ("http://www.csd.uoc.gr/x", True),
        ("http://deep.sub.csd.uoc.gr/", True),
        ("https://csd.uoc.gr:8443/", True),  # domain scope ignores scheme and port
        ("http://uoc.gr/", False),
        ("http://xcsd.uoc.gr/", False),  # a suffix match must be on a label boundary
        ("http://csd.uoc.gr.evil.com/", False),
        ("http://ics.forth.gr/a", True),
    ],
)
def test_domain_scope(url, expected):
    in_scope = build_scope("domain-scope", ["http://www.csd.uoc.gr/", "http://www.ics.forth.gr/"])
    assert in_scope(origin(url)) is expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://h.org/anything", True),
        ("http://h.org:80/x", True),  # same effective port (normalization would drop it anyway)
        ("http://h.org:8080/", False),
        ("https://h.org/", True),  # http and https on their default ports are one site (SPEC 4)
        ("https://h.org:80/", False),  # https on port 80 names a port that is not its default
        ("http://h.org:443/", False),
        ("https://a.test:8642/p", True),  # the same named port under either scheme
        ("https://a.test/p", False),
        ("http://www.h.org/", False),
        ("http://a.test:8642/p", True),
    ],
)
def test_host_scope(url, expected):
    in_scope = build_scope("host-scope", ["http://h.org/start.html", "http://a.test:8642/"])
    assert in_scope(origin(url)) is expected


@pytest.mark.parametrize(
    ("seed", "url", "expected"),
    [
        ("http://www.sample.com/index.html", "http://www.sample.com/anything/at/all", True),
        ("http://www.sample.com/path/index.html", "http://www.sample.com/path/sub/page.html", True),
        ("http://www.sample.com/path/index.html", "http://www.sample.com/path/", True),
        ("http://www.sample.com/path/index.html", "http://www.sample.com/pathology.html", False),
        ("http://www.sample.com/path/index.html", "http://www.sample.com/", False),
        ("http://www.sample.com/path/index.html", "http://other.com/path/x", False),
        ("http://www.sample.com/path", "http://www.sample.com/elsewhere", True),  # directory is "/"
        ("http://www.sample.com/a/?q=1", "http://www.sample.com/a/b", True),
        ("http://www.sample.com/path/index.html", "https://www.sample.com/path/x", True),
        ("http://www.sample.com/path/index.html", "https://www.sample.com:8443/path/x", False),
    ],
)
def test_path_scope(seed, url, expected):
    assert build_scope("path-scope", [seed])(origin(url)) is expected


def test_free_spanning_and_unknown():
    assert build_scope("free-spanning", ["http://a/"])(origin("http://anything.example/"))
    with pytest.raises(ValueError):
        build_scope("galaxy-scope", ["http://a/"])


def test_origin_ipv6_and_query():
    assert origin("http://[::1]/a/b?c/d") == ("[::1]", 80, "/a/b", "[::1]")
    assert origin("https://[::1]:8443/") == ("[::1]", 8443, "/", "[::1]:8443")
