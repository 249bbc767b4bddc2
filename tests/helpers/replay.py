"""The archive's own readers, run as archivists run them: pywb replaying WARC files, and py-wacz
validating a WACZ package.

Both live in a virtual environment of their own (``.venv-replay``, made by ``make replay-tools``
from ``tests/replay-requirements.txt``): pywb 2.10 pins redis-py 2.10, which cannot share the
project's environment with the ``redis`` extra. ``TARANTULA_REPLAY_VENV`` names another folder.
Without it the tests that need them are skipped, with the reason; with
``TARANTULA_REQUIRE_REPLAY`` set (as CI sets it) they run, and fail."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.redis_server import free_port

PROJECT = Path(__file__).resolve().parents[2]
REPLAY_VENV = Path(os.environ.get("TARANTULA_REPLAY_VENV", PROJECT / ".venv-replay"))


def replay_tools() -> Path:
    """The replay tools' ``bin`` folder; the test is skipped (or fails, in CI) without them."""
    bin_folder = REPLAY_VENV / "bin"
    if not (bin_folder / "wayback").exists() and not os.environ.get("TARANTULA_REQUIRE_REPLAY"):
        pytest.skip(f"pywb and py-wacz are not installed in {REPLAY_VENV} (make replay-tools)")
    return bin_folder


@dataclass
class Replayed:
    status: int
    headers: dict[str, str]
    body: bytes


class Wayback:
    """pywb's ``wayback`` serving one collection, ``crawl``, on 127.0.0.1."""

    def __init__(self, base: str) -> None:
        self.base = base

    def get(self, timestamp: str, url: str) -> Replayed:
        """The capture of ``url`` nearest ``timestamp`` (14 digits), as recorded (``id_``: no
        rewriting)."""
        request = urllib.request.Request(f"{self.base}/crawl/{timestamp}id_/{url}")
        opener = urllib.request.build_opener(NoRedirect)
        try:
            with opener.open(request, timeout=30) as answer:
                return Replayed(answer.status, dict(answer.headers.items()), answer.read())
        except urllib.error.HTTPError as error:
            return Replayed(error.code, dict(error.headers.items()), error.read())


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None


@contextmanager
def wayback(folder: Path, warcs: list[Path]) -> Iterator[Wayback]:
    """A pywb collection in ``folder`` holding ``warcs`` (WARC or WACZ files, added by
    ``wb-manager add``), served by ``wayback`` until the block ends."""
    tools = replay_tools()
    folder.mkdir(parents=True, exist_ok=True)
    manage = [str(tools / "wb-manager")]
    unpack = ["--unpack-wacz"] if any(p.suffix == ".wacz" for p in warcs) else []
    for args in (["init", "crawl"], ["add", *unpack, "crawl", *map(str, warcs)]):
        done = subprocess.run(
            manage + args, cwd=folder, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr
    port = free_port()
    log = (folder / "wayback.log").open("wb")
    server = subprocess.Popen(
        [str(tools / "wayback"), "-b", "127.0.0.1", "-p", str(port), "-t", "2"],
        cwd=folder, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (folder / "wayback.log").read_text()
            try:
                with urllib.request.urlopen(base + "/", timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline, (folder / "wayback.log").read_text()
                time.sleep(0.05)  # still starting: ask again
        yield Wayback(base)
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def wacz_validate(path: Path) -> subprocess.CompletedProcess[str]:
    """``wacz validate -f PATH`` of py-wacz."""
    tools = replay_tools()
    return subprocess.run([str(tools / "wacz"), "validate", "-f", str(path)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
