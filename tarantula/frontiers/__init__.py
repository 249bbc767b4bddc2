"""Frontiers shared by several processes (the single-process one is
:class:`tarantula.core.frontier.SqliteFrontier`).

- :mod:`tarantula.frontiers.redis`: :class:`~tarantula.frontiers.redis.RedisFrontier`, the
  frontier, seen-set, per-host politeness gate and leases of one crawl on a Redis server (SPEC 9).
"""
