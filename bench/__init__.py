"""Benchmark harness: a synthetic multi-host web, local servers, and timed crawls.

``python -m bench.run --preset small --runs 3`` crawls a generated web with Tarantula and with a
bare Scrapy spider against the same local server; see ``bench/README.md``.
"""
