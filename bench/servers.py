"""Local servers for the generated web, on 127.0.0.1 only.

- :class:`Nginx`: nginx with one name-based virtual host per generated host (``server_name`` per
  host, ``root <web>/<host>``), started with its own config, pid file, logs and temp folders under a
  private folder; access log off, one worker per core, sendfile on. nginx also answers proxy-style
  requests (``GET http://host:port/path``) by the host in the request line.
- :class:`LatencyServer`: an asyncio HTTP/1.1 server (keep-alive) that serves the same folder by
  Host header, or by the host of an absolute-form request line so that it can stand as an HTTP
  proxy, and answers every request after a fixed delay without holding up the others.

Each runs as a child process of the harness (so it never shares a Python interpreter with a crawler)
and is stopped when its ``with`` block ends. ``python -m bench.servers latency|nginx --root WEB
--port PORT`` serves a generated folder by hand until Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import email.utils
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import unquote, urlsplit

LOOPBACK = "127.0.0.1"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".pdf": "application/pdf",
    ".txt": "text/plain; charset=utf-8",
}


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with status {process.returncode} before listening")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(0.2)
            if s.connect_ex((LOOPBACK, port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {LOOPBACK}:{port} after {timeout} s")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()  # fields from the state on; the name may hold spaces


def process_tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and of its live children (nginx's workers), from /proc (Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        # after the name: state ppid ... utime (field 14) stime (15), i.e. indexes 11 and 12 here
        if fields and (int(entry.name) == pid or int(fields[1]) == pid):
            total += int(fields[11]) + int(fields[12])
    return total / tick


def web_hosts(root: Path) -> list[str]:
    return sorted(p.name for p in Path(root).iterdir() if p.is_dir())


class _Child:
    """A server child process, stopped (SIGTERM, then SIGKILL) when the ``with`` block ends."""

    process: subprocess.Popen[bytes] | None = None
    name = "server"

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        raise NotImplementedError

    def cpu_seconds(self) -> float:
        """User + system CPU seconds used so far by the server process and its children."""
        if self.process is None:
            return 0.0
        return process_tree_cpu(self.process.pid)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # its own session: nginx's workers too
            process.wait()


def nginx_binary() -> str | None:
    found = shutil.which("nginx")
    if found:
        return found
    for candidate in ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def nginx_version() -> str:
    binary = nginx_binary()
    if binary is None:
        return "not installed"
    out = subprocess.run([binary, "-v"], capture_output=True, text=True).stderr.strip()
    return out.partition("/")[2] or out


class Nginx(_Child):
    """nginx serving every host folder of ``root`` on 127.0.0.1:``port``."""

    name = "nginx"

    def __init__(self, root: Path, port: int, workers: int | None = None) -> None:
        self.root = Path(root).resolve()
        self.port = port
        self.workers = workers or os.cpu_count() or 1
        self.folder: Path | None = None

    def config(self, folder: Path) -> str:
        servers = "".join(
            f"    server {{\n"
            f"        listen {LOOPBACK}:{self.port};\n"
            f"        server_name {host};\n"
            f"        root {self.root / host};\n"
            f"        index index.html;\n"
            f"    }}\n"
            for host in web_hosts(self.root)
        )
        temp = "".join(
            f"    {kind}_temp_path {folder / 'temp' / kind};\n"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        # Run as root, nginx hands requests to workers that run as nobody, who may not read a web
        # under a private folder: keep the workers' user when the master runs as root.
        user = "user root;\n" if os.geteuid() == 0 else ""
        return (
            f"{user}worker_processes {self.workers};\n"
            f"pid {folder / 'nginx.pid'};\n"
            f"error_log {folder / 'error.log'} warn;\n"
            "daemon off;\n"
            "events {\n    worker_connections 4096;\n}\n"
            "http {\n"
            "    access_log off;\n"
            "    sendfile on;\n"
            "    tcp_nopush on;\n"
            "    keepalive_requests 1000000;\n"
            "    server_tokens off;\n"
            "    types {\n"
            "        text/html html;\n"
            "        application/pdf pdf;\n"
            "        text/plain txt;\n"
            "    }\n"
            "    default_type application/octet-stream;\n"
            "    charset utf-8;\n"
            f"{temp}"
            "    server {\n"
            f"        listen {LOOPBACK}:{self.port} default_server;\n"
            "        server_name _;\n"
            "        return 404;\n"
            "    }\n"
            f"{servers}"
            "}\n"
        )

    def start(self) -> None:
        binary = nginx_binary()
        if binary is None:
            raise FileNotFoundError("nginx is not installed (Debian: apt-get install nginx)")
        self.folder = Path(tempfile.mkdtemp(prefix="bench-nginx-"))
        (self.folder / "temp").mkdir()
        conf = self.folder / "nginx.conf"
        conf.write_text(self.config(self.folder), encoding="utf-8")
        command = [
            binary,
            "-p",
            str(self.folder),
            "-e",
            str(self.folder / "error.log"),
            "-c",
            str(conf),
        ]
        check = subprocess.run([*command, "-t", "-q"], capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError(f"nginx -t failed: {check.stderr.strip()}")
        log = open(self.folder / "stderr.log", "wb")  # noqa: SIM115 - held by the child
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        wait_for_port(self.port, self.process)

    def stop(self) -> None:
        super().stop()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


class LatencyServer(_Child):
    """The asyncio server of :func:`serve` in a child process, ``delay`` seconds per answer."""

    name = "asyncio"

    def __init__(self, root: Path, port: int, delay: float = 0.2) -> None:
        self.root = Path(root).resolve()
        self.port = port
        self.delay = delay

    def start(self) -> None:
        command = [
            sys.executable,
            "-m",
            "bench.servers",
            "latency",
            "--root",
            str(self.root),
            "--port",
            str(self.port),
            "--delay-ms",
            str(self.delay * 1000),
        ]
        project = str(Path(__file__).resolve().parents[1])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [project, os.environ.get("PYTHONPATH")])),
        }
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, env=env, start_new_session=True
        )
        wait_for_port(self.port, self.process)


# --- the asyncio server -------------------------------------------------------------------------


class _Site:
    """Files of a generated web by (host, path)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self.hosts = set(web_hosts(self.root))

    def get(self, host: str, path: str) -> tuple[bytes, str] | None:
        if host not in self.hosts or not path.startswith("/") or "\0" in path:
            return None
        parts = [p for p in path.split("/") if p]
        if ".." in parts:
            return None
        file = self.root.joinpath(host, *parts)
        if path.endswith("/") or file.is_dir():
            file = file / "index.html"
        try:
            body = file.read_bytes()
        except OSError:
            return None
        return body, CONTENT_TYPES.get(file.suffix, "application/octet-stream")


def _host_of(authority: str) -> str:
    if authority.startswith("["):
        return authority[: authority.find("]") + 1].lower()
    return authority.rpartition(":")[0].lower() if ":" in authority else authority.lower()


async def _handle(
    site: _Site, delay: float, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        while True:
            request_line = await reader.readline()
            if not request_line:
                return
            parts = request_line.decode("latin-1").split()
            headers: dict[str, str] = {}
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0") or 0)
            if length:
                await reader.readexactly(length)
            if len(parts) != 3:
                return
            method, target, version = parts
            if target.startswith(("http://", "https://")):  # absolute form, as sent to a proxy
                split = urlsplit(target)
                host, path = _host_of(split.netloc), split.path or "/"
            else:
                host, path = _host_of(headers.get("host", "")), target.partition("?")[0]
            connection = headers.get("connection", "").lower()
            keep_alive = (
                connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
            )
            if delay:
                await asyncio.sleep(delay)
            found = site.get(host, unquote(path)) if method in ("GET", "HEAD") else None
            if found is None:
                status, body, kind = "404 Not Found", b"not found\n", "text/plain; charset=utf-8"
            else:
                status, (body, kind) = "200 OK", found
            head = (
                f"HTTP/1.1 {status}\r\nServer: bench\r\n"
                f"Date: {email.utils.formatdate(usegmt=True)}\r\n"
                f"Content-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
                f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
            )
            writer.write(head.encode("latin-1"))
            if method != "HEAD":
                writer.write(body)
            await writer.drain()
            if not keep_alive:
                return
    except (ConnectionError, asyncio.IncompleteReadError, ValueError):
        return
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def serve(root: Path, port: int, delay: float, ready: str | None = None) -> None:
    """Serve ``root`` on 127.0.0.1:``port`` until SIGTERM or SIGINT."""
    site = _Site(root)
    server = await asyncio.start_server(
        lambda r, w: _handle(site, delay, r, w), LOOPBACK, port, backlog=1024, reuse_address=True
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if ready:
        print(ready, flush=True)
    async with server:
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.servers")
    parser.add_argument("kind", choices=["latency", "nginx"])
    parser.add_argument("--root", type=Path, required=True, help="a folder from bench.generate")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay-ms", type=float, default=200.0, help="latency server only [200]")
    args = parser.parse_args(argv)
    if args.kind == "latency":
        asyncio.run(serve(args.root, args.port, args.delay_ms / 1000))
        return 0
    with Nginx(args.root, args.port):
        print(f"nginx serves {args.root} on {LOOPBACK}:{args.port} (Ctrl-C stops)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
