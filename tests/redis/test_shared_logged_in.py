"""A logged-in crawl (SPEC 13) shared through Redis: two workers, each logged in with the form,
one cookie jar (the crawl's, in Redis), every private page stored once with its logged-in content,
and nothing of the credentials in any file they wrote."""

from __future__ import annotations

import re

from tests.helpers.shared import finish, shared_conf, start_worker
from tests.integration.test_logged_in import FORM_PASSWORD, serve_forum


def test_two_workers_log_in_and_store_every_private_page_once(
    web, tmp_path, redis_server, monkeypatch
):
    home, counts = serve_forum(web)
    monkeypatch.setenv("FORUM_PASSWORD", FORM_PASSWORD)
    conf = shared_conf(tmp_path, home, redis_server, delay=0.05,
                       login_url=web.url("forum.test", "/login"),
                       login_fields=["user=ada", "password=$FORUM_PASSWORD"],
                       logged_in_text="Hello ada")  # fmt: skip
    finish(start_worker(conf, "w1"), start_worker(conf, "w2"))
    index = (tmp_path / "repo" / "index.txt").read_text(encoding="utf-8")
    titles = dict(re.findall(r"^\w+\t(http\S+)\t\S+\t([^\t]*)\t", index, re.M))
    assert sorted(titles.values()) == sorted(
        ["Forum /", *(f"Forum /p{n}.html" for n in range(1, 9))]
    )  # each once, logged in
    assert counts["logins"] >= 1
    assert "/logout" not in [r.target for r in web.requests]
    client = redis_server.client()
    cookies = [key for key in client.keys("*cookies") if key.endswith(b"cookies")]
    assert len(cookies) == 1 and client.hkeys(cookies[0]) == [b"forum.test\t/\tsid"]
    for path in (tmp_path / "repo").rglob("*"):
        if path.is_file():
            assert FORM_PASSWORD.encode() not in path.read_bytes(), path
