"""Near-duplicates and learned traps (SPEC 6) in a crawl shared through Redis: two workers find
the variants one process finds, as one crawl (each page's fingerprint claimed in one script, so
two near pages on two workers are never both originals), and learn the same traps."""

from __future__ import annotations

import re
import urllib.request

from tarantula.core.index import parse_index
from tests.helpers import nearweb
from tests.helpers.crawls import run_crawl, write_conf
from tests.helpers.shared import finish, shared_conf, start_worker, wait_for_workers
from tests.integration.test_near_duplicates import listed, marked


def learned(report: str) -> set[str]:
    """The patterns of the report's learned traps."""
    section = report[report.index('id="traps"') :]
    section = section[: section.index("</section>")]
    return set(re.findall(r'<tr><td class="url">([^<]*)</td>', section))


def test_two_workers_leave_out_the_near_duplicates_one_process_leaves_out(
    web, tmp_path, redis_server
):
    home = nearweb.serve_near_web(web, endless=True)
    keys = {"near_duplicates": "skip", "learn_traps": True}
    (tmp_path / "one").mkdir()
    alone = run_crawl(write_conf(tmp_path / "one", [home], threads=4, host_concurrency=4, **keys))
    assert alone.status == 0, alone.process.stdout
    request = urllib.request.Request(
        f"http://127.0.0.1:{web.port}/", headers={"Host": nearweb.HOST}
    )
    with urllib.request.urlopen(request) as response:
        body = response.read()
    conf = shared_conf(tmp_path / "two", home, redis_server, **keys)
    wait_for_workers(web, conf, redis_server, "/", body, host=nearweb.HOST)
    finish(start_worker(conf, "w1"), start_worker(conf, "w2"))
    repository = tmp_path / "two" / "repo"
    variants, distinct = nearweb.variants(web, endless=True), nearweb.distinct(web)
    found = marked(repository)
    assert len(found & set(variants)) / len(variants) >= 0.95
    assert found & set(distinct) == set()
    # The same traps, learned once each, and the crawl ended by itself.
    shared_report = (repository / "report.html").read_text(encoding="utf-8")
    alone_report = (alone.repository / "report.html").read_text(encoding="utf-8")
    assert learned(shared_report) == learned(alone_report) != set()
    # The originals are the distinct pages a variant is of, as in one process: the same pages
    # are left out, and the index holds the same URLs.
    assert set(listed(repository)) == set(listed(alone.repository))
    shared_index = parse_index((repository / "index.txt").read_text(encoding="utf-8"))
    assert {record.url for record in shared_index} == set(alone.urls)
