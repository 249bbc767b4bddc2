"""End-to-end: robots.txt, accept/reject lists, scope on redirects, only http(s) fetched."""

from __future__ import annotations

import pytest

from tarantula.demo.server import Resource

pytestmark = pytest.mark.e2e


def test_robots_disallowed_links_are_neither_fetched_nor_listed(web, crawl):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    web.add(
        "a.test",
        "/robots.txt",
        Resource(
            b"User-agent: *\nDisallow: /private/\n\nUser-agent: tarantula\n"
            b"Disallow: /private/\nDisallow: /mine.html\n"
        ),
    )
    web.page(
        "a.test",
        "/",
        '<a href="/private/x.html">P</a><a href="/mine.html">M</a><a href="/ok.html">OK</a>',
    )
    web.page("a.test", "/ok.html", "ok")
    web.page("a.test", "/private/x.html", "secret")
    web.page("a.test", "/mine.html", "mine")
    result = crawl([u("/")])
    assert result.status == 0
    assert web.targets("a.test") == ["/robots.txt", "/", "/ok.html"]
    assert result.record(u("/")).links == ((u("/ok.html"), "OK"),)


@pytest.mark.parametrize("status", [404, 403, 410])
def test_robots_4xx_allows_everything(web, crawl, status):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    web.add("a.test", "/robots.txt", Resource(b"User-agent: *\nDisallow: /\n", status=status))
    web.page("a.test", "/", '<a href="/x.html">x</a>')
    web.page("a.test", "/x.html", "x")
    result = crawl([u("/")])
    assert result.urls == [u("/"), u("/x.html")]


def test_robots_5xx_disallows_the_host(web, crawl):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    web.add("a.test", "/robots.txt", Resource(b"oops", status=503))
    web.page("a.test", "/", "home")
    result = crawl([u("/")])
    assert result.status == 0
    assert result.records == []
    assert set(web.targets("a.test")) == {"/robots.txt"}  # retried, then the host is given up
    assert "robots.txt of http://a.test" in result.log and "disallowed for this crawl" in result.log


def test_unreachable_robots_disallows_the_host_and_is_not_an_error(web, crawl, tmp_path):
    # dead.test maps to 127.0.0.1 on a port nobody listens on.
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    u = lambda p: web.url("a.test", p)  # noqa: E731
    web.page(
        "a.test",
        "/",
        f'<a href="http://dead.test:{dead_port}/x.html">dead</a><a href="/y.html">y</a>',
    )
    web.page("a.test", "/y.html", "y")
    result = crawl([u("/")], scope="free-spanning")
    assert result.status == 0, result.process.stdout
    assert result.urls == [u("/"), u("/y.html")]
    assert result.record(u("/")).links == ((u("/y.html"), "y"),)
    assert "errors               0" in result.process.stdout


def test_not_accepted_pages_are_parsed_but_not_stored(web, crawl):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    web.page("a.test", "/", '<a href="/list.php">list</a><a href="/a.zip">zip</a>')
    web.page("a.test", "/list.php", '<a href="/r.pdf">report</a><a href="/more">more</a>')
    web.page("a.test", "/more", "<title>More</title>")  # extensionless: decided as more.html
    web.add("a.test", "/r.pdf", Resource(b"%PDF-1.4", headers={"Content-Type": "application/pdf"}))
    web.add("a.test", "/a.zip", Resource(b"PK", headers={"Content-Type": "application/zip"}))
    result = crawl([u("/")], accept_list=[r"\.pdf$"])
    assert result.urls == [u("/r.pdf")]
    assert "/list.php" in web.targets("a.test") and "/more" in web.targets("a.test")
    assert "/a.zip" not in web.targets("a.test")  # neither accepted nor possibly HTML
    assert result.files() == [f"a.test:{web.port}/r.pdf"]


def test_a_not_accepted_page_with_a_stored_pages_body_is_not_parsed(web, crawl):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    same = '<title>Same</title><a href="/">home</a>'
    web.page("a.test", "/", '<a href="/a.html">a</a><a href="/copy.php">copy</a>')
    web.page("a.test", "/a.html", same)
    web.page("a.test", "/copy.php", same)
    result = crawl([u("/")], accept_list=[r"\.html$", "/$"], log_level=2)
    assert "/copy.php" in web.targets("a.test")
    assert sorted(result.urls) == [u("/"), u("/a.html")]
    assert "'tarantula/pages/parsed': 2," in result.log  # the copy was not parsed
    duplicates = (result.repository / "duplicates.tsv").read_text(encoding="utf-8")
    assert duplicates == f"{u('/copy.php')}\t{u('/a.html')}\n"


def test_not_accepted_pages_do_not_count_towards_max_page_number(web, crawl):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    web.page("a.test", "/", '<a href="/list.php">list</a>')
    web.page("a.test", "/list.php", "".join(f'<a href="/r{i}.pdf">r{i}</a>' for i in range(3)))
    for i in range(3):
        pdf = Resource(b"%PDF-1.4 " + bytes([i]), headers={"Content-Type": "application/pdf"})
        web.add("a.test", f"/r{i}.pdf", pdf)
    result = crawl([u("/")], accept_list=[r"\.pdf$"], max_page_number=2)
    assert "Crawl finished (max-page-number)" in result.process.stdout
    assert len(result.urls) == 2 and all(url.endswith(".pdf") for url in result.urls)


def test_extensionless_name_is_accepted_by_its_type(web, crawl):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    web.page("a.test", "/", '<a href="/about">about</a><a href="/data">data</a>')
    web.page("a.test", "/about", "<title>About</title>")
    web.add("a.test", "/data", Resource(b"%PDF-1.4", headers={"Content-Type": "application/pdf"}))
    result = crawl([u("/")], accept_list=[r"^about\.html$", r"\.pdf$"])
    assert sorted(result.urls) == [u("/about"), u("/data")]
    assert sorted(result.files()) == [
        f"a.test:{web.port}/about.html",
        f"a.test:{web.port}/data.pdf",
    ]


def test_reject_list_on_href_url_and_file_name(web, crawl):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    web.page(
        "a.test",
        "/",
        '<a href="#top">top</a><a href="/q.html?x=1">q</a><a href="/d.tmp.txt">d</a>'
        '<a href="/fine.html">fine</a>',
    )
    for p in ("/q.html?x=1", "/d.tmp.txt", "/fine.html"):
        web.page("a.test", p, "x")
    result = crawl([u("/")], reject_list=[r"^#.*", r".*\?.*", r".*\.[tT][mM][pP]\.?.{0,4}$"])
    assert web.targets("a.test") == ["/robots.txt", "/", "/fine.html"]
    assert result.record(u("/")).links == ((u("/fine.html"), "fine"),)


def test_redirects_leaving_scope_or_rejected_are_not_followed(web, crawl):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    web.page(
        "a.test",
        "/",
        '<a href="/out">out</a><a href="/in">in</a><a href="/rej">rej</a><a href="/ftp">f</a>',
    )
    web.add("a.test", "/out", Resource(status=302, headers={"Location": web.url("b.test", "/")}))
    web.add("a.test", "/in", Resource(status=301, headers={"Location": "/target.html"}))
    web.add("a.test", "/rej", Resource(status=302, headers={"Location": "/x.tmp.txt"}))
    web.add("a.test", "/ftp", Resource(status=302, headers={"Location": "ftp://a.test/file"}))
    web.page("a.test", "/target.html", "<title>T</title>")
    web.page("b.test", "/", "b")
    result = crawl([u("/")], reject_list=[r"\.tmp\."])
    assert web.targets("b.test") == []
    assert "/x.tmp.txt" not in web.targets("a.test")
    assert u("/target.html") in result.urls
    # A redirected document keeps the URL that was asked for as its original URL.
    assert result.record(u("/target.html")).original_url == u("/in")


def test_redirect_to_a_page_already_fetched_is_not_fetched_again(web, crawl):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    web.page("a.test", "/", '<a href="/a.html">a</a><a href="/alias">alias</a>')
    web.page("a.test", "/a.html", "a")
    web.add("a.test", "/alias", Resource(status=301, headers={"Location": "/a.html"}))
    result = crawl([u("/")])
    assert web.targets("a.test").count("/a.html") == 1
    assert result.urls == [u("/"), u("/a.html")]


def test_links_to_documents_are_extracted_whatever_their_extension(web, crawl):
    u = lambda p: web.url("a.test", p)  # noqa: E731
    names = ["r.pdf", "d.doc", "s.xls", "p.ppt", "a.zip", "m.mp3", "i.png"]
    web.page("a.test", "/", "".join(f'<a href="/{n}">{n}</a>' for n in names))
    for n in names:
        web.add(
            "a.test",
            f"/{n}",
            Resource(f"data of {n}".encode(), headers={"Content-Type": "application/octet-stream"}),
        )
    result = crawl([u("/")])
    assert [link for link, _ in result.record(u("/")).links] == [u(f"/{n}") for n in names]
    assert sorted(result.urls) == sorted([u("/")] + [u(f"/{n}") for n in names])
