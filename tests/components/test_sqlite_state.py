"""One process's crawl state as the tools read it (:mod:`tarantula.store.sqlite.facts`): a state
made by an earlier version, before a column was added, is read as it is (a crawl adds the column
when it opens the state; ``verify``, ``explain`` and the report may come first)."""

from __future__ import annotations

import sqlite3

from tarantula.store.sqlite import SqliteStore, state_path
from tarantula.store.sqlite.facts import url_requisite


def test_the_tools_read_a_state_made_before_requisites_kept_validators(tmp_path):
    store = SqliteStore(tmp_path)
    store.begin()
    assert store.requisites.want(["http://a.test/s.css"], "http://a.test/", 0)
    store.requisites.stored("http://a.test/s.css", "a.test/s.css", "m", "css", None, "d", '"e"')
    store.end("finished")
    db = sqlite3.connect(state_path(tmp_path))  # as an earlier version left it
    db.execute("ALTER TABLE requisites DROP COLUMN last_modified")
    db.execute("ALTER TABLE requisites DROP COLUMN etag")
    db.commit()
    db.close()
    found = url_requisite(tmp_path, "http://a.test/s.css")
    assert found is not None and (found.path, found.etag) == ("a.test/s.css", None)
