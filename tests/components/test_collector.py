"""A crawl process's garbage collector (docs/decisions.md): tuned by the crawl command alone."""

from __future__ import annotations

import gc

from tarantula.commands import crawl


def test_a_crawl_process_freezes_what_start_up_made_and_collects_young_objects_less_often():
    threshold = gc.get_threshold()
    try:
        crawl.tune_collector()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (crawl.YOUNG_COLLECTION, *threshold[1:])
        assert threshold[0] < crawl.YOUNG_COLLECTION
    finally:  # this process makes crawlers in a loop: nothing of it stays frozen
        gc.unfreeze()
        gc.set_threshold(*threshold)
