"""A page whose look depends on every kind of page requisite (SPEC 6), served by the recording
server: for the tests of ``page-requisites`` in one process and in a crawl shared through Redis."""

from __future__ import annotations

from tarantula.demo.server import Resource, SiteServer
from tests.helpers.crawls import png

CSS = {"Content-Type": "text/css"}
PNG = {"Content-Type": "image/png"}


def home_html(port: int) -> str:
    """The styled page, for a server at ``port``."""
    return f"""<!DOCTYPE html><html><head><title>Styled</title>
<link rel="stylesheet" href="/s/main.css"><link rel="icon" href="/favicon.png">
<script src="/s/app.js" defer></script></head>
<body><h1>Styled page</h1>
<p><img id="logo" src="http://cdn.y.test:{port}/logo.png" width="40" height="40" alt="logo">
<img id="pic" src="/img/small.png" srcset="/img/small.png 1x, /img/big.png 2x" width="30" height="30" alt="pic"></p>
<div id="js">no script</div>
<div id="box" style="width: 60px; height: 20px; background-image: url('/img/box.png')"></div>
<p><a href="/other.html">another page</a></p></body></html>"""


def styled_site(web: SiteServer) -> str:
    """A page whose look depends on every kind of requisite: a style sheet that imports another,
    background images from both, an image on another host (out of the crawl's scope), an image
    with a ``srcset``, a script that writes into the page, a ``style`` attribute and an icon."""
    port = web.port
    web.page("www.x.test", "/", home_html(port))
    web.page(
        "www.x.test",
        "/other.html",
        '<title>Other</title><link rel="stylesheet" href="/s/main.css">',
    )
    web.add(
        "www.x.test",
        "/s/main.css",
        Resource(
            b'@import "more.css";\n/* url(/img/not-loaded.png) */\n'
            b"body { background: url(../img/bg.png); font-family: sans-serif }",
            headers=CSS,
        ),
    )
    web.add(
        "www.x.test",
        "/s/more.css",
        Resource(b"h1 { color: rgb(0, 128, 0); background-image: url(/img/h1.png) }", headers=CSS),
    )
    web.add(
        "www.x.test",
        "/s/app.js",
        Resource(
            b"document.getElementById('js').textContent = 'the script ran';",
            headers={"Content-Type": "text/javascript"},
        ),
    )
    colours = {"bg": (250, 240, 200), "h1": (200, 220, 255), "small": (255, 0, 0),
               "big": (0, 0, 255), "box": (0, 160, 0)}  # fmt: skip
    for name, rgb in colours.items():
        web.add("www.x.test", f"/img/{name}.png", Resource(png(*rgb, size=4), headers=PNG))
    web.add("www.x.test", "/favicon.png", Resource(png(9, 9, 9), headers=PNG))
    web.add("cdn.y.test", "/logo.png", Resource(png(128, 0, 128, size=4), headers=PNG))
    return web.url("www.x.test", "/")


REQUISITES = {
    ("www.x.test", "/s/main.css"),
    ("www.x.test", "/s/more.css"),
    ("www.x.test", "/s/app.js"),
    ("www.x.test", "/img/bg.png"),
    ("www.x.test", "/img/h1.png"),
    ("www.x.test", "/img/small.png"),
    ("www.x.test", "/img/big.png"),
    ("www.x.test", "/img/box.png"),
    ("www.x.test", "/favicon.png"),
    ("cdn.y.test", "/logo.png"),
}


def asked(web: SiteServer) -> list[tuple[str, str]]:
    """What the server was asked for (host, target), robots.txt aside, in arrival order."""
    return [(r.host, r.target) for r in web.requests if r.target != "/robots.txt"]
