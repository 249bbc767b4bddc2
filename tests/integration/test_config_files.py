"""Configuration files as users save them, read end to end by `scrapy explain` (SPEC 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.crawls import PROJECT, write_conf

pytestmark = pytest.mark.e2e

GREEK_COMMENT = "# Αποθηκευμένο από ελληνικό πρόγραμμα επεξεργασίας\n"
SEED = "http://www.demo.test/"


def explain(conf: Path, *urls: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "explain", str(conf), *urls],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def greek_conf(tmp_path: Path) -> str:
    """A valid configuration's text that starts with a Greek comment and has a bare regex item
    with a ``{m,n}`` quantifier."""
    text = write_conf(tmp_path, [SEED]).read_text(encoding="utf-8")
    return GREEK_COMMENT + text + "<crawler-options>\nreject-list = { .*\\.tmp\\.?.{0,4}$ };\n"


def test_a_windows_1253_file_loads_with_a_warning_naming_it(tmp_path: Path) -> None:
    conf = tmp_path / "crawl.conf"
    conf.write_bytes(greek_conf(tmp_path).encode("cp1253"))
    result = explain(conf, SEED + "a.html", SEED + "x.tmp.bak")
    assert result.returncode == 0, result.stderr
    assert f"{conf}:1:3: warning: not valid UTF-8; read as Windows-1253\n" in result.stderr
    assert "Traceback" not in result.stderr
    a_html, _, tmp = result.stdout.partition(SEED + "x.tmp.bak\n")
    assert "fetched     yes" in a_html
    assert "rule reject" in tmp and "fetched     no" in tmp


def test_a_utf8_file_loads_without_a_warning(tmp_path: Path) -> None:
    conf = tmp_path / "crawl.conf"
    conf.write_bytes(b"\xef\xbb\xbf" + greek_conf(tmp_path).encode())
    result = explain(conf, SEED + "a.html")
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr
    assert "fetched     yes" in result.stdout


def test_an_undecodable_file_exits_2_with_file_line_col(tmp_path: Path) -> None:
    conf = tmp_path / "crawl.conf"
    # 0x81 is defined neither in UTF-8 (alone) nor in Windows-1253.
    conf.write_bytes(greek_conf(tmp_path).encode("cp1253") + b"# \x81\n")
    result = explain(conf, SEED + "a.html")
    assert result.returncode == 2
    lines = greek_conf(tmp_path).count("\n") + 1
    assert result.stderr == (
        f"{conf}:{lines}:3: error: the file is neither UTF-8 nor Windows-1253: byte 0x81 "
        "is undefined in Windows-1253\n"
    )
    assert result.stdout == ""
