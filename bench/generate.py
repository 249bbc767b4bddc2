"""A seed-controlled synthetic multi-host web, written to a folder.

``generate(out, preset="small", seed=1, port=8080)`` writes one folder per host
(``out/h00.bench.test/``, ...) with HTML pages of 5-30 KB, a few small PDFs, a ``robots.txt`` that
allows everything but ``/private/``, and ``out/manifest.json``: the seed URL and every URL that a
complete crawl must fetch (the robots-disallowed pages are listed apart, under ``disallowed``).

Every page is reachable from the seed ``http://h00.bench.test:PORT/``: a spanning tree is built first
(each page gets a parent among the earlier pages of its host, each host's root a parent on an earlier
host), then random links are added, mostly to the same host and some to other hosts. Links come in
three forms (root-relative, relative, absolute), cross-host links are always absolute. The port is
part of the cross-host links, so the web is generated for the port its server will listen on.

The same seed, preset and port give byte-identical output; ``python -m bench.generate --help``.
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import random
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DOMAIN = "bench.test"
MANIFEST = "manifest.json"
MIN_LINKS, MAX_LINKS = 10, 40
MIN_SIZE, MAX_SIZE = 5_000, 29_000  # target bytes; a page ends at most one paragraph past it
TREE_CHILDREN = 8  # spanning-tree children per page at most, so the link count stays in range
EXTRA_LINKS = 3  # a page links to at most this many PDFs and private pages
CROSS_HOST = 0.1  # share of the random links that go to another host
SECTIONS = ("news", "docs", "people", "projects", "archive", "events", "courses", "blog")


@dataclass(frozen=True)
class Preset:
    hosts: int
    pages: int  # HTML pages in the manifest, host roots included
    pdfs_per_host: int = 2


PRESETS: dict[str, Preset] = {
    "tiny": Preset(hosts=2, pages=300),
    "small": Preset(hosts=20, pages=20_000),
    "large": Preset(hosts=20, pages=200_000),
    # The SQLite store's growth: CPU per page and state per document at a million pages.
    "huge": Preset(hosts=20, pages=1_000_000),
    "latency": Preset(hosts=4, pages=2_000),
}


def host_name(index: int) -> str:
    return f"h{index:02d}.{DOMAIN}"


def base_url(host: str, port: int) -> str:
    return f"http://{host}" if port == 80 else f"http://{host}:{port}"


@dataclass
class Node:
    """A page, PDF or private page: where it lives and what it links to (node ids)."""

    host: int
    path: str
    title: str
    kind: str  # "page", "pdf" or "private"
    links: list[int]


class _Words:
    """Pseudo-words and paragraphs drawn from the seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        onsets = ["b", "c", "d", "f", "g", "l", "m", "n", "p", "r", "s", "t", "v", "br", "st", "tr"]
        vowels = ["a", "e", "i", "o", "u", "ai", "ou", "é"]
        codas = ["", "", "n", "r", "s", "l", "nd", "st"]
        words: set[str] = set()
        while len(words) < 900:
            syllables = rng.randint(1, 3)
            words.add(
                "".join(
                    rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas)
                    for _ in range(syllables)
                )
            )
        self.words = sorted(words)
        self.rng = rng
        self.paragraphs = [self._paragraph() for _ in range(2048)]

    def phrase(self, low: int, high: int) -> str:
        rng = self.rng
        return " ".join(rng.choice(self.words) for _ in range(rng.randint(low, high)))

    def _paragraph(self) -> str:
        rng = self.rng
        sentences = []
        for _ in range(rng.randint(3, 9)):
            sentence = self.phrase(6, 18).capitalize()
            if rng.random() < 0.15:
                sentence = sentence.replace(" ", " <em>", 1) + "</em>"
            if rng.random() < 0.1:
                sentence += " &amp; " + self.phrase(2, 4)
            sentences.append(sentence + ".")
        return "<p>" + " ".join(sentences) + "</p>\n"


def _href(source: Node, target: Node, style: float, hosts: list[str], port: int) -> str:
    if target.host != source.host or style < 0.1:
        return base_url(hosts[target.host], port) + target.path
    if style < 0.7:
        return target.path
    start = posixpath.dirname(source.path) or "/"
    rel = posixpath.relpath(target.path, start)
    return rel + "/" if target.path.endswith("/") else rel


def build(preset: Preset, seed: int) -> tuple[list[Node], random.Random, _Words]:
    """The link graph: nodes 0..hosts-1 are the host roots, then pages, PDFs, private pages."""
    rng = random.Random(seed)
    words = _Words(rng)
    n_hosts, n_pages = preset.hosts, preset.pages
    if n_pages < n_hosts:
        raise ValueError("need at least one page per host")
    nodes = [Node(h, "/", "", "page", []) for h in range(n_hosts)]
    by_host: list[list[int]] = [[h] for h in range(n_hosts)]
    weights = [rng.uniform(0.5, 1.5) for _ in range(n_hosts)]
    counters = [0] * n_hosts
    for h in rng.choices(range(n_hosts), weights=weights, k=n_pages - n_hosts):
        counters[h] += 1
        path = f"/{SECTIONS[rng.randrange(len(SECTIONS))]}/{counters[h]}.html"
        by_host[h].append(len(nodes))
        nodes.append(Node(h, path, "", "page", []))
    for node in nodes:
        node.title = words.phrase(2, 6).capitalize()

    children = [0] * len(nodes)

    def pick_parent(candidates: list[int], upto: int) -> int:
        for _ in range(64):
            parent = candidates[rng.randrange(upto)]
            if children[parent] < TREE_CHILDREN:
                return parent
        start = rng.randrange(upto)
        for offset in range(upto):
            parent = candidates[(start + offset) % upto]
            if children[parent] < TREE_CHILDREN:
                return parent
        raise RuntimeError("spanning tree is full; raise TREE_CHILDREN")

    # Spanning tree: each host root hangs off a page of an earlier host, each page off an earlier
    # page of its own host, so every page is reachable from h00's root.
    for h in range(1, n_hosts):
        k = rng.randrange(h)
        parent = pick_parent(by_host[k], len(by_host[k]))
        nodes[parent].links.append(h)
        children[parent] += 1
    for h in range(n_hosts):
        pages = by_host[h]
        for i in range(1, len(pages)):
            parent = pick_parent(pages, i)
            nodes[parent].links.append(pages[i])
            children[parent] += 1

    # Random links: a "home" link to the host root, then same-host and some cross-host links.
    for p in range(len(nodes)):
        node = nodes[p]
        h = node.host
        wanted = rng.randint(MIN_LINKS, MAX_LINKS - EXTRA_LINKS)
        chosen = set(node.links)
        links = [h] if p != h else []
        chosen.update(links)
        tries = 0
        while len(chosen) < wanted and tries < 4 * MAX_LINKS:
            tries += 1
            other = h
            if n_hosts > 1 and rng.random() < CROSS_HOST:
                other = (h + 1 + rng.randrange(n_hosts - 1)) % n_hosts
            target = by_host[other][rng.randrange(len(by_host[other]))]
            if target != p and target not in chosen:
                chosen.add(target)
                links.append(target)
        rest = node.links + links[1 if p != h else 0 :]
        rng.shuffle(rest)
        node.links = ([h] if p != h else []) + rest

    # PDFs and the robots-disallowed private page of each host, linked from a few pages.
    for h in range(n_hosts):
        pages = by_host[h]
        extras = [
            Node(h, f"/files/report-{i + 1}.pdf", f"Report {i + 1} of {host_name(h)}", "pdf", [])
            for i in range(preset.pdfs_per_host)
        ]
        private = Node(h, "/private/notes.html", "Private notes", "private", [h])
        private.links += sorted({pages[rng.randrange(len(pages))] for _ in range(3)} - {h})
        extras.append(private)
        for extra in extras:
            nid = len(nodes)
            nodes.append(extra)
            linkers = {h} if extra.kind == "private" else set()
            while len(linkers) < min(3, len(pages)):
                linkers.add(pages[rng.randrange(len(pages))])
            for linker in sorted(linkers):
                links = nodes[linker].links
                links.insert(rng.randrange(len(links) + 1), nid)
    return nodes, rng, words


def _page_html(
    node: Node, nodes: list[Node], hosts: list[str], port: int, rng: random.Random, words: _Words
) -> bytes:
    host = hosts[node.host]
    title = f"{node.title} | {host}"
    items = []
    for target_id in node.links:
        target = nodes[target_id]
        href = _href(node, target, rng.random(), hosts, port)
        anchor = "Home" if target_id == node.host and target_id != 0 else target.title
        items.append(f'<a href="{href}">{anchor}</a>')
    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n</head>\n<body>\n<h1>{title}</h1>\n"
    )
    tail = "</body>\n</html>\n"
    size = len(head) + len(tail) + sum(len(i) + 12 for i in items)
    target_size = rng.randint(MIN_SIZE, MAX_SIZE)
    paragraphs: list[str] = []
    while size < target_size or not paragraphs:
        paragraph = words.paragraphs[rng.randrange(len(words.paragraphs))]
        paragraphs.append(paragraph)
        size += len(paragraph.encode())
    per = -(-len(items) // len(paragraphs))
    parts = [head]
    for i, paragraph in enumerate(paragraphs):
        parts.append(paragraph)
        group = items[i * per : (i + 1) * per]
        if group:
            parts.append("<ul>\n" + "".join(f"<li>{a}</li>\n" for a in group) + "</ul>\n")
    parts.append(tail)
    return "".join(parts).encode("utf-8")


def _pdf(title: str, text: str) -> bytes:
    """A small valid one-page PDF with an uncompressed ``/Title``."""
    content = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Title (" + title.encode("latin-1") + b") /Producer (bench) >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\n" % (len(objects) + 1)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def contents(
    nodes: list[Node], rng: random.Random, words: _Words, hosts: list[str], port: int
) -> Iterator[tuple[Node, bytes]]:
    """Each node with its file's bytes, in node order (the order that fixes the random draws)."""
    for node in nodes:
        if node.kind == "pdf":
            yield node, _pdf(node.title, f"{node.title}: {words.phrase(4, 8)}")
        else:
            yield node, _page_html(node, nodes, hosts, port, rng, words)


# Disallow before Allow: first-match parsers (wget's) and longest-match ones (RFC 9309, Protego)
# then agree; with "Allow: /" first, wget would fetch /private/ too.
ROBOTS_TXT = b"User-agent: *\nDisallow: /private/\nAllow: /\n"


def generate(
    out: Path, preset: str | Preset = "tiny", seed: int = 1, port: int = 80
) -> dict[str, Any]:
    """Write the web into ``out`` (created; must be empty) and return the manifest."""
    spec = PRESETS[preset] if isinstance(preset, str) else preset
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty")
    nodes, rng, words = build(spec, seed)
    hosts = [host_name(h) for h in range(spec.hosts)]
    made: set[Path] = set()
    total = len(ROBOTS_TXT) * len(hosts)
    for host in hosts:
        (out / host).mkdir()
        (out / host / "robots.txt").write_bytes(ROBOTS_TXT)
    for node, data in contents(nodes, rng, words, hosts, port):
        relative = node.path[1:] + ("index.html" if node.path.endswith("/") else "")
        path = out / hosts[node.host] / relative
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        with open(path, "wb") as f:
            f.write(data)
        total += len(data)
    urls = sorted(base_url(hosts[n.host], port) + n.path for n in nodes if n.kind != "private")
    disallowed = sorted(
        base_url(hosts[n.host], port) + n.path for n in nodes if n.kind == "private"
    )
    manifest: dict[str, Any] = {
        "format": 1,
        "preset": preset if isinstance(preset, str) else "custom",
        "random_seed": seed,
        "port": port,
        "hosts": hosts,
        "seed": base_url(hosts[0], port) + "/",
        "host_roots": [base_url(h, port) + "/" for h in hosts],
        "pages": sum(1 for n in nodes if n.kind == "page"),
        "pdfs": sum(1 for n in nodes if n.kind == "pdf"),
        "bytes": total,
        "urls": urls,
        "disallowed": disallowed,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def load_manifest(folder: Path) -> dict[str, Any]:
    return json.loads((Path(folder) / MANIFEST).read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.generate", description=__doc__.split("\n")[0]
    )
    parser.add_argument("out", type=Path, help="output folder (created; must be empty)")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    parser.add_argument("--seed", type=int, default=1, help="random seed [1]")
    parser.add_argument(
        "--port", type=int, default=80, help="port written into absolute links [80]"
    )
    parser.add_argument("--force", action="store_true", help="empty the output folder first")
    args = parser.parse_args(argv)
    if args.force and args.out.exists():
        shutil.rmtree(args.out)
    started = time.perf_counter()
    manifest = generate(args.out, args.preset, args.seed, args.port)
    elapsed = time.perf_counter() - started
    print(
        f"{args.out}{os.sep}: {len(manifest['hosts'])} hosts, {manifest['pages']} pages, "
        f"{manifest['pdfs']} PDFs, {manifest['bytes']:,} bytes in {elapsed:.1f} s; "
        f"seed {manifest['seed']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
