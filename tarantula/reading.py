"""What a downloaded response says about its document: the Scrapy side of
:mod:`tarantula.core.document` (SPEC 5, 6, 7.2).

:func:`read_response` turns a response into a :class:`Reading`: the document's short type, the file
name the accept list is tested on, whether it is accepted, its content MD5 (for the exact-duplicate
check), the text response to decode it with and the encoding that names; :func:`read_content` then
takes its title and its reading (HTML: :mod:`tarantula.core.reader`) or title (PDF).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from scrapy.http import Response, TextResponse
from w3lib.encoding import http_content_type_encoding, read_bom

from tarantula.core.document import doc_type, encoding_label, is_text, pdf_title
from tarantula.core.filters import extension
from tarantula.core.reader import HtmlReading, read_html
from tarantula.core.rules import UrlRules
from tarantula.core.scope import origin
from tarantula.core.urls import file_name, url_md5
from tarantula.items import Document
from tarantula.meta import ORIGIN


@dataclass
class Reading:
    url: str
    type: str | None
    accepted: bool
    md5: str | None  # hashed when the document may be stored or parsed
    text: TextResponse | None  # the response to decode it with, when it is text
    title: str | None = None
    page: HtmlReading | None = None  # an HTML page's reading: its base, links and refs
    encoding: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.encoding = encoding_label(self.text.encoding) if self.text is not None else None


def header(response: Response, name: str) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None


def html_encoding_override(response: TextResponse) -> str | None:
    """UTF-8 where the HTML standard says a page declaring UTF-16/32 in a ``<meta>`` really is
    (a meta tag readable as ASCII cannot be in UTF-16); None to keep the encoding Scrapy chose."""
    chosen = response.encoding.lower().replace("_", "-")
    if not chosen.startswith(("utf-16", "utf-32")) or read_bom(response.body)[0]:
        return None
    declared = http_content_type_encoding(header(response, "Content-Type") or "") or ""
    return None if declared.startswith(("utf-16", "utf-32", "utf_16", "utf_32")) else "utf-8"


def read_response(response: Response, url: str, rules: UrlRules) -> Reading:
    """Type, name, acceptance, content hash and text of the document at normalized ``url``."""
    content_type = header(response, "Content-Type")
    name = file_name(origin(url).path)
    dtype = doc_type(content_type, extension(name))
    if not extension(name) and dtype:
        name = f"{name}.{dtype}"  # SPEC 5: `about` served as HTML is tested as `about.html`
    accepted = rules.accepts(url, name)
    # An HTML page is hashed even when not accepted: it is parsed, unless it is a duplicate.
    hashed = accepted or dtype == "html"
    md5 = hashlib.md5(response.body, usedforsecurity=False).hexdigest() if hashed else None
    text = response if isinstance(response, TextResponse) else None
    if text is not None and (forced := html_encoding_override(text)) is not None:
        text = text.replace(encoding=forced)
    if not is_text(content_type, dtype):
        text = None
    return Reading(url, dtype, accepted, md5, text)


def read_content(reading: Reading, body: bytes, *, refs: bool = False) -> None:
    """Fill in the title, and for an HTML page its reading: its base and links, and with ``refs``
    where it holds URLs (for its page requisites and its browsable copy)."""
    if reading.type == "html" and reading.text is not None:
        reading.page = read_html(reading.text.text, refs=refs)
        reading.title = reading.page.title
    elif reading.type == "pdf":
        reading.title = pdf_title(body)


def document_item(response: Response, reading: Reading, links: list[tuple[str, str]]) -> Document:
    """The item the mirror and index pipelines store, for an accepted document."""
    return Document(
        url=reading.url,
        original_url=response.meta.get(ORIGIN) or response.url,
        url_md5=url_md5(reading.url),
        title=reading.title,
        encoding=reading.encoding,
        type=reading.type,
        last_modified=header(response, "Last-Modified"),
        server_date=header(response, "Date"),
        etag=header(response, "ETag"),
        links=links,
        body=response.body,
        md5=reading.md5,  # hashed for the duplicate check; the mirror pipeline reuses it
        page=reading.page,  # the browsable copy's first conversion reuses it
    )
