"""Measuring one child process of the benchmark (wall time, CPU, peak RSS, the server's and the
machine's CPU meanwhile), and the machine and versions a report names."""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.servers import nginx_version

PROJECT = Path(__file__).resolve().parents[1]

BENCH = Path(__file__).resolve().parent

_PROXY_VARIABLES = {"http_proxy", "https_proxy", "ftp_proxy", "all_proxy", "no_proxy"}


@dataclass
class Measured:
    status: int | str  # exit status, or "timeout"
    wall: float
    cpu: float  # user + sys seconds of the child
    rss_mb: float  # the child's peak resident set size
    server_cpu: float  # CPU seconds the server spent meanwhile
    other_cpu: float  # CPU seconds the machine spent meanwhile on anything else


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def machine_busy() -> float:
    """CPU seconds the machine has spent busy since boot, all cores (0 where /proc is missing)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    busy = sum(fields[:8]) - idle  # guest time is already in user
    return busy / _TICK


def child_env(tree: Path = PROJECT) -> dict[str, str]:
    """The harness's environment without proxy settings or a Scrapy project of its own; Python
    finds Tarantula in ``tree`` (the project's, or a baseline's worktree) first."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k.lower() not in _PROXY_VARIABLES and not k.startswith("SCRAPY_")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))
    return env


def measure(
    command: list[str],
    cwd: Path,
    out: Path,
    timeout: float,
    server_cpu: Callable[[], float] = lambda: 0.0,
    tree: Path = PROJECT,
) -> Measured:
    """Run ``command`` with stdout and stderr to ``out``; time it and read its rusage (through
    :mod:`bench.peak`, so that the harness's own memory is not counted as the command's)."""
    peak = out.with_name(out.name + ".peak")
    command = [sys.executable, str(BENCH / "peak.py"), str(peak), "--", *command]
    with open(out, "wb") as log:
        busy, server = machine_busy(), server_cpu()
        started = time.perf_counter()
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=child_env(tree),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        expired = threading.Event()

        def kill() -> None:
            expired.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        except BaseException:  # Ctrl-C: the child has its own session and would outlive us
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        finally:
            timer.cancel()
        wall = time.perf_counter() - started
        busy, server = machine_busy() - busy, server_cpu() - server
    process.returncode = os.waitstatus_to_exitcode(status)
    maxrss, cpu = usage.ru_maxrss, usage.ru_utime + usage.ru_stime  # if bench.peak was killed
    if peak.exists():
        fields = peak.read_text(encoding="ascii").split()
        maxrss, cpu = int(fields[0]), float(fields[1]) + float(fields[2])
    return Measured(
        status="timeout" if expired.is_set() else process.returncode,
        wall=wall,
        cpu=cpu,
        rss_mb=maxrss / 1024,  # KiB on Linux
        server_cpu=server,
        other_cpu=max(0.0, busy - cpu - server),
    )


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:  # the project itself, importable from its folder even when not installed
        return str(importlib.import_module(name).__version__)
    except (ImportError, AttributeError):
        return "not installed"


def _wget_version() -> str:
    if shutil.which("wget") is None:
        return "not installed"
    first = subprocess.run(["wget", "--version"], capture_output=True, text=True).stdout
    return first.split("\n", 1)[0].removeprefix("GNU Wget ").split(" ", 1)[0]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def commit(rev: str = "HEAD") -> str:
    """The project's commit (or ``rev``'s), and whether Tarantula's code differs from HEAD's
    (read-only git)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", rev], cwd=PROJECT, capture_output=True, text=True
        ).stdout.strip()
        if rev != "HEAD":
            return head or "unknown"
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--", "tarantula"],
            cwd=PROJECT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return (head or "unknown") + (" with uncommitted changes in tarantula/" if changed else "")


def file_system(path: Path) -> str:
    """The type of the file system that holds ``path``, "unknown" where ``/proc/mounts`` cannot be
    read. Creating a file costs the kernel far more on some than on others (see
    docs/benchmarks.md), and a crawl creates one a page."""
    try:
        mounts = Path("/proc/mounts").read_text()
    except OSError:
        return "unknown"
    return mount_type(str(Path(path).resolve()), mounts)


def mount_type(target: str, mounts: str) -> str:
    r"""The type of the mount in ``mounts`` (``/proc/mounts``' text) whose point is the longest
    one above the absolute path ``target``.

    >>> mount_type("/dev/shm/a b", "/dev/vda / ext4 rw 0 0\ntmpfs /dev/shm tmpfs rw 0 0\n")
    'tmpfs'
    >>> mount_type("/my disk/x", "/dev/vda / ext4 rw 0 0\n/dev/vdb /my\\040disk xfs rw 0 0\n")
    'xfs'
    """
    best, kind = "", "unknown"
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")  # a space in a mount point, as the kernel writes it
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best):
            best, kind = point, fields[2]
    return kind


def machine_lines(work: Path | None = None) -> list[str]:
    """The report's lines on the machine and versions; with ``work``, the folder that holds the
    web and the crawls' repositories, and its file system."""
    lines = [
        f"- machine: {os.cpu_count()} cores ({_cpu_model()}), Linux {platform.release()}, "
        f"Python {platform.python_version()}",
        f"- Tarantula {_version('tarantula')} (commit {commit()}), Scrapy {_version('scrapy')}, "
        f"Twisted {_version('twisted')}, nginx {nginx_version()}, wget {_wget_version()}",
    ]
    if work is not None:
        lines.append(f"- work folder (the web, the repositories): {work} ({file_system(work)})")
    return lines
