"""A pipeline that fails on purpose, to test how the crawl reports an exception in its own code."""

from __future__ import annotations


class FaultyPipeline:
    def process_item(self, item, spider=None):
        raise RuntimeError("deliberate failure")
