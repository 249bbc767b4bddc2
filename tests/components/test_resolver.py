"""The mapped resolver answers from its table and, in resolve-only mode, never starts a DNS query."""

from __future__ import annotations

import pytest
from twisted.internet import reactor
from twisted.internet.error import DNSLookupError

from tarantula.resolver import MappedResolver, host_resolver_rules, parse_mapping


def result_of(deferred):
    assert deferred.called, "the answer must be immediate"
    box = []
    deferred.addBoth(box.append)
    return box[0]


def test_mapped_names_and_wildcards_answer_immediately():
    r = MappedResolver(
        reactor, 0, 1.0, parse_mapping("www.demo.test=127.0.0.1, *.demo.test=127.0.0.2"), True
    )
    assert result_of(r.getHostByName("www.demo.test")) == "127.0.0.1"
    assert result_of(r.getHostByName("docs.demo.test")) == "127.0.0.2"
    assert result_of(r.getHostByName("WWW.DEMO.TEST.")) == "127.0.0.1"


def test_resolve_only_fails_unmapped_names_without_a_query(monkeypatch):
    r = MappedResolver(reactor, 0, 1.0, {"a.test": "127.0.0.1"}, True)
    monkeypatch.setattr(
        "scrapy.resolver.CachingThreadedResolver.getHostByName",
        lambda *a, **k: pytest.fail("a DNS query was started"),
    )
    failure = result_of(r.getHostByName("example.org"))
    assert failure.check(DNSLookupError)


def test_without_resolve_only_unmapped_names_go_to_dns(monkeypatch):
    asked = []
    monkeypatch.setattr(
        "scrapy.resolver.CachingThreadedResolver.getHostByName",
        lambda self, name, timeout=(): asked.append(name),
    )
    MappedResolver(reactor, 0, 1.0, {}, False).getHostByName("example.org")
    assert asked == ["example.org"]


def test_chromium_gets_the_same_mapping_in_the_order_it_needs() -> None:
    mapping = parse_mapping("*=127.0.0.9, *.test=127.0.0.2, a.b.test=::1, *.b.test=127.0.0.3")
    # Chromium applies the first matching rule, so the most specific come first.
    assert host_resolver_rules(mapping, only=True) == (
        "MAP a.b.test [::1], MAP *.b.test 127.0.0.3, MAP *.test 127.0.0.2, MAP * 127.0.0.9"
    )  # "*" is mapped, so nothing is left to fail
    assert host_resolver_rules({}, only=False) == ""
    assert host_resolver_rules({}, only=True) == "MAP * ~NOTFOUND"
