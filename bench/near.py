"""The near-duplicate lookup as a crawl grows (SPEC 6): the cost of one page's lookup and claim
among N stored fingerprints, and the bytes each fingerprint adds to the crawl's state.

    python -m bench.near                      # 20,000 and 200,000 fingerprints, SQLite and Redis
    python -m bench.near --sizes 20000 --no-redis
    python -m bench.near --pairs /usr/share/doc/cmake-doc/html --distance 4   # precision

``--pairs FOLDER`` fingerprints every HTML file under the folder and lists every pair within the
distance, with how many words their visible texts differ in (``difflib`` over the word lists):
the check of precision on a real site, all pairs compared (no blocks: it is the reference).

The fingerprints are random 64-bit values (distinct pages' fingerprints are about 32 bits apart,
as random ones are), claimed through the store contract's ``claim_near`` into a one-process
SQLite state and, with Debian's ``redis-server``, a Redis one started on 127.0.0.1 for the run.
Each size then times 2,000 more claims: medians per page, and the state's size per fingerprint.
"""

from __future__ import annotations

import argparse
import random
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from tarantula.core.config import CrawlConfig
from tarantula.store import backend

PROBES = 2000


def _fill(documents, count: int, rng: random.Random, start: int = 0) -> None:
    for n in range(start, start + count):
        documents.claim_near(f"http://h{n % 50}.test/p{n}", rng.getrandbits(64), 3)


def _time(documents, rng: random.Random, at: int) -> float:
    took = []
    for n in range(at, at + PROBES):
        value = rng.getrandbits(64)
        began = time.perf_counter()
        documents.claim_near(f"http://h{n % 50}.test/q{n}", value, 3)
        took.append(time.perf_counter() - began)
    return statistics.median(took) * 1e6


def measure(root: Path, sizes: list[int], redis_url: str = "") -> list[tuple[int, float, float]]:
    """(fingerprints, median µs a page, bytes a fingerprint) for each size."""
    config = CrawlConfig(path=root / "c.conf", starting_points=("http://h0.test/",),
                         repository=root / "repo", redis=redis_url)  # fmt: skip
    store, _ = backend(config).open(config.repository, worker="bench" if redis_url else None)
    store.begin()
    rng = random.Random(6)
    rows = []
    done = 0
    used = _used(store, root, redis_url)
    for size in sizes:
        _fill(store.documents, size - done, rng, done)
        store.commit()
        done = size
        micros = _time(store.documents, rng, done)
        store.commit()
        done += PROBES
        rows.append((size, micros, (_used(store, root, redis_url) - used) / done))
    store.close()
    return rows


def _used(store, root: Path, redis_url: str) -> int:
    if redis_url:
        info = store.client.info("memory")  # type: ignore[attr-defined]
        return int(info["used_memory"])
    state = root / "repo" / ".tarantula"
    return sum(p.stat().st_size for p in state.glob("state.db*"))


def pairs(folder: Path, apart: int) -> None:
    """Every pair of HTML pages under ``folder`` whose fingerprints are within ``apart`` bits."""
    import difflib
    import itertools

    from tarantula.core.simhash import distance, fingerprint_words, visible_words

    words = {path: visible_words(path.read_bytes()) for path in sorted(folder.rglob("*.html"))}
    found = {path: fingerprint_words(text) for path, text in words.items()}
    print(f"{len(words)} pages, {sum(v is None for v in found.values())} under the words a fingerprint needs")
    print("| bits | page | original | words | words differ |")
    print("|---|---|---|---|---|")
    kept = [(path, value) for path, value in found.items() if value is not None]
    for (one, a), (two, b) in itertools.combinations(kept, 2):
        if (bits := distance(a, b)) <= apart:
            matcher = difflib.SequenceMatcher(None, words[one], words[two], autojunk=False)
            differ = sum(max(i2 - i1, j2 - j1) for op, i1, i2, j1, j2 in matcher.get_opcodes()
                         if op != "equal")  # fmt: skip
            print(f"| {bits} | {one.relative_to(folder)} | {two.relative_to(folder)} |"
                  f" {len(words[one])} / {len(words[two])} | {differ} |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.near")
    parser.add_argument("--sizes", default="20000,200000")
    parser.add_argument("--no-redis", action="store_true")
    parser.add_argument("--pairs", type=Path, help="a folder of HTML pages: list its near pairs")
    parser.add_argument("--distance", type=int, default=3)
    args = parser.parse_args(argv)
    if args.pairs is not None:
        pairs(args.pairs, args.distance)
        return 0
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        print("| store | fingerprints | lookup and claim, median µs | bytes a fingerprint |")
        print("|---|---|---|---|")
        for size, micros, each in measure(root / "sqlite", sizes):
            print(f"| SQLite | {size:,} | {micros:.0f} | {each:.0f} |")
        if not args.no_redis and shutil.which("redis-server"):
            import redis

            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                                       "--save", "", "--appendonly", "no"],
                                      stdout=subprocess.DEVNULL)  # fmt: skip
            try:
                client = redis.Redis(port=port)
                while True:  # until it answers
                    try:
                        client.ping()
                        break
                    except redis.ConnectionError:
                        time.sleep(0.05)
                for size, micros, each in measure(root / "redis", sizes, f"redis://127.0.0.1:{port}/0"):
                    print(f"| Redis | {size:,} | {micros:.0f} | {each:.0f} |")
            finally:
                server.terminate()
                server.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
