"""Helpers that more than one test module shares: the crawls run as ``scrapy`` processes and their
config files (:mod:`.crawls`), the test sites (:mod:`.treesite`, :mod:`.slowsite`,
:mod:`.docsite`, the trap farm in :mod:`.traps`), the reference graph walks (:mod:`.graphs`), the
in-process crawls of the component tests (:mod:`.components`), a real ``redis-server``
(:mod:`.redis_server`) and the workers of a shared crawl (:mod:`.shared`), and a pipeline that
fails on purpose (:mod:`.faulty`). Test modules import from here, never from one another or from a
``conftest``; the fixtures stay in the ``conftest`` files.
"""
