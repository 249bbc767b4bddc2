"""``make demo`` run twice, and ``make demo-again``: the demo runner on a copy of conf/demo.conf
with its own port and repository, so it runs beside a real ``make demo``."""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from tarantula.core.config import load_config
from tarantula.core.repository import Repository, recrawl_pending
from tarantula.demo.__main__ import DEMO_CONF, again_command, main, site_port
from tarantula.store import last_run
from tests.helpers.crawls import PROJECT

pytestmark = pytest.mark.e2e

VENV = Path(sys.executable).parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def demo_conf(folder: Path) -> Path:
    """conf/demo.conf with a free port and the repository ``folder/repo``."""
    text = DEMO_CONF.read_text(encoding="utf-8")
    assert text.count(":8642/") == 1 and text.count('repository = "../repository/demo";') == 1
    text = text.replace(":8642/", f":{free_port()}/").replace(
        'repository = "../repository/demo";', f'repository = "{folder / "repo"}";'
    )
    path = folder / "demo.conf"
    path.write_text(text, encoding="utf-8")
    return path


def demo(*command: str) -> subprocess.CompletedProcess[str]:
    process = subprocess.run(command, cwd=PROJECT, capture_output=True, text=True, timeout=120)
    assert process.returncode == 0, process.stdout + process.stderr
    return process


def test_the_second_demo_says_when_the_recrawl_is_due_and_how_to_crawl_again(tmp_path):
    conf = demo_conf(tmp_path)
    config = load_config(conf)
    repository = Repository(config.repository)
    first = demo(sys.executable, "-m", "tarantula.demo", "run", "--conf", str(conf))
    assert "Serving the demo site" in first.stdout
    last = last_run(config)
    assert last is not None and last.complete and last.kind == "crawl"

    second = demo(sys.executable, "-m", "tarantula.demo", "run", "--conf", str(conf))
    waiting = recrawl_pending(last_run(config), config.period)
    assert waiting is not None
    due = datetime.fromtimestamp(waiting[1]).astimezone().isoformat(timespec="seconds")
    assert f"The crawl in {config.repository} is complete" in second.stdout
    assert f"the next recrawl is due at {due}" in second.stdout
    assert f"make demo-again DEMO_CONF={conf}" in second.stdout
    assert "Serving the demo site" not in second.stdout  # nothing to fetch, nothing served
    assert last_run(config) == last

    # The command the message names, through make as a user types it (the venv taken as built).
    marker = config.repository / "left-from-before.txt"
    marker.write_text("", encoding="utf-8")
    again = demo("make", "-o", f"{VENV}/.installed", f"VENV={VENV}", f"DEMO_CONF={conf}",
                 "demo-again")  # fmt: skip
    assert "Serving the demo site" in again.stdout
    assert not marker.exists()
    fresh = last_run(config)
    assert fresh is not None and fresh.complete and fresh.kind == "crawl" and fresh.id == 1
    assert fresh.started > last.started
    assert repository.index.read_text(encoding="utf-8").count("\n") > 20


def test_the_message_names_make_demo_again_for_the_bundled_demo():
    assert again_command(DEMO_CONF) == "make demo-again"
    assert again_command(PROJECT / "conf" / ".." / "conf" / "demo.conf") == "make demo-again"


def test_a_busy_port_stops_the_demo_before_it_deletes_anything(tmp_path, capsys):
    conf = demo_conf(tmp_path)
    assert main(["run", "--conf", str(conf)]) == 0
    index = load_config(conf).repository / "index.txt"
    before = index.read_bytes()
    port = site_port(load_config(conf))
    with socket.create_server(("127.0.0.1", port)):  # another demo serves there
        assert main(["run", "--fresh", "--conf", str(conf)]) == 2
    assert index.read_bytes() == before
    assert f"cannot serve the demo site on 127.0.0.1:{port}" in capsys.readouterr().err


def test_fresh_deletes_only_a_tarantula_repository(tmp_path, capsys):
    conf = demo_conf(tmp_path)
    stranger = tmp_path / "repo" / "thesis.tex"
    stranger.parent.mkdir()
    stranger.write_text("not a crawl", encoding="utf-8")
    assert main(["run", "--fresh", "--conf", str(conf)]) == 2
    assert stranger.exists()
    assert "is not a Tarantula repository" in capsys.readouterr().err
