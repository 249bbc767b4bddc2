"""Reading a configuration file's text (SPEC 2's grammar): sections, ``key = value;`` statements,
quoted strings, bare words and ``{ ... }`` lists, ``#`` comments; every problem collected with its
offset, and every value converted by its key (:mod:`tarantula.core.configkeys`)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from tarantula.core.configkeys import KEYS, SECTIONS, Invalid


@dataclass
class _Item:
    text: str
    pos: int  # offset of the first character (the quote, if quoted)


@dataclass
class _List:
    items: list[_Item]
    pos: int  # offset of "{"
    damaged: bool = False  # an item could not be read and was reported


_KEY_RE = re.compile(r"[\w-]+")
_BARE_RE = re.compile(r"[^\s;]+")


def _canonical(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _did_you_mean(name: str, choices: list[str], fmt: str) -> str:
    close = difflib.get_close_matches(name, choices, n=1)
    return f"; did you mean {fmt.format(close[0])}?" if close else ""


class Reader:
    """Reads the text statement by statement, collecting values and problems (by offset)."""

    def __init__(self, text: str) -> None:
        self.text, self.i = text, 0
        self.errors: list[tuple[int, str]] = []
        self.section: str | None = SECTIONS[0]  # a key before any section is a crawler option
        self.first_seen: dict[str, int] = {}
        self.values: dict[str, object] = {}

    def error(self, pos: int, message: str) -> None:
        self.errors.append((pos, message))

    def peek(self) -> str:
        return self.text[self.i : self.i + 1]

    def line_end(self, pos: int) -> int:
        end = self.text.find("\n", pos)
        return len(self.text) if end < 0 else end

    def comment_at(self, pos: int) -> bool:
        """Whether a comment starts at ``pos``: a ``#`` at the start of a line or after white
        space (quotes are read elsewhere, so a ``#`` in one never gets here)."""
        return self.text[pos] == "#" and (pos == 0 or self.text[pos - 1].isspace())

    def skip_blank(self) -> None:
        """Skip whitespace, line breaks and comments."""
        while c := self.peek():
            if self.comment_at(self.i):
                self.i = self.line_end(self.i)
            elif c.isspace():
                self.i += 1
            else:
                break

    def skip_statement(self) -> None:
        """Recover from an error: resume after the next ';' on this line, or on the next line."""
        end = self.line_end(self.i)
        semicolon = self.text.find(";", self.i, end)
        self.i = end if semicolon < 0 else semicolon + 1

    def read(self) -> None:
        while True:
            self.skip_blank()
            start, c = self.i, self.peek()
            if not c:
                return
            if c == ";":  # an empty statement is harmless
                self.i += 1
            elif c == "<":
                close = self.text.find(">", start, self.line_end(start))
                if close < 0:
                    self.error(start, "expected '>' to close the section name")
                    self.i = self.line_end(start)
                else:
                    self.i = close + 1
                    self.open_section(self.text[start + 1 : close].strip(), start)
            elif match := _KEY_RE.match(self.text, start):
                self.statement(match.group(), start)
            elif c == "#":  # e.g. "a = b;#x": a comment needs white space before it
                self.error(start, "unexpected '#'; a comment needs white space before it")
                self.skip_statement()
            else:
                self.error(start, f"unexpected '{c}'; expected a key or a <section>")
                self.skip_statement()

    def statement(self, key: str, start: int) -> None:
        self.i = start + len(key)
        while self.peek() in (" ", "\t", "\r"):
            self.i += 1
        if self.peek() != "=":
            self.error(self.i, f"expected '=' after '{key}'")
            self.skip_statement()
            return
        self.i += 1
        value = self.value(key)
        if value is not None:
            end = self.i
            self.skip_blank()
            if self.peek() == ";":
                self.i += 1
            else:
                self.error(end, f"expected ';' after the value of '{key}'")
                if self.peek() not in ("", "<") and "\n" not in self.text[end : self.i]:
                    self.skip_statement()  # garbage on the same line, not the next statement
        self.assign(key, start, value)

    def value(self, key: str) -> _Item | _List | None:
        """Read the value after '='; None (already reported) if there is none to read."""
        after_equals = self.i
        self.skip_blank()
        c = self.peek()
        at_line_start = not self.text[self.text.rfind("\n", 0, self.i) + 1 : self.i].strip()
        if not c or c == ";" or (c == "<" and at_line_start):
            self.error(after_equals, f"missing value for '{key}'")
            return None
        if c == "{":
            return self.list_value()
        if c == '"':
            item = self.quoted()
            if item is None:
                self.skip_statement()
            return item
        match = _BARE_RE.match(self.text, self.i)
        assert match is not None  # c is neither blank nor ';'
        self.i = match.end()
        return _Item(match.group(), match.start())

    def quoted(self) -> _Item | None:
        """Read a one-line ``"..."`` string, keeping backslashes; None if it is not closed."""
        start, stop = self.i, self.line_end(self.i)
        i = start + 1
        while i < stop:
            if self.text[i] == "\\":
                i += 2  # an escaped quote does not end the string; both characters are kept
            elif self.text[i] == '"':
                self.i = i + 1
                return _Item(self.text[start + 1 : i], start)
            else:
                i += 1
        self.error(start, "unclosed quote: expected '\"' before the end of the line")
        self.i = stop
        return None

    def list_value(self) -> _List | None:
        result = _List([], self.i)
        self.i += 1
        while True:
            self.skip_blank()
            c = self.peek()
            if not c:
                self.error(result.pos, "unclosed list: expected '}' to match this '{'")
                return None
            if c == "}":
                self.i += 1
                return result
            if c == ",":
                self.error(self.i, "empty list item")
                self.i += 1
                result.damaged = True
                continue
            item = self.quoted() if c == '"' else self.bare_item()
            if item is None:
                result.damaged = True
                continue
            result.items.append(item)
            self.skip_blank()
            c = self.peek()
            if c == ",":
                self.i += 1
            elif c and c != "}":
                self.error(self.i, "expected ',' or '}' after a list item")
                result.damaged = True

    def bare_item(self) -> _Item:
        """Read an unquoted list item: it ends at a ',' or '}' outside (), [] and {}, at a comment
        or at the end of its line, and is trimmed. Brackets that do not balance by then do not
        nest at all, so that they cannot carry the item past the list's '}': the item ends at its
        first ',' or '}'."""
        start = self.i
        end, balanced = self.bare_end(start, nest=True)
        if not balanced:
            end, _ = self.bare_end(start, nest=False)
        self.i = end
        return _Item(self.text[start:end].strip(), start)

    def bare_end(self, start: int, nest: bool) -> tuple[int, bool]:
        """Where the bare item at ``start`` ends, and whether its brackets balance.

        A backslash escapes the next character, so ``\\{`` and ``\\,`` are plain. Inside a
        ``[...]`` class, as in a regex, every character but an unescaped ``]`` is plain, and a
        ``]`` right after ``[`` or ``[^`` is plain too: ``[]}]`` is one class.
        """
        text, i = self.text, start
        closers: list[str] = []  # the brackets that close each "(" and "{" still open, in order
        class_body = -1  # where the current [...] class's characters start; -1: not in a class
        while i < len(text):
            c = text[i]
            if c == "\n" or self.comment_at(i):
                break
            if c == "\\" and text[i + 1 : i + 2] not in ("", "\n"):
                i += 2
                continue
            if not nest:
                if c in ",}":
                    break
            elif class_body >= 0:
                if c == "]" and i > class_body:
                    class_body = -1
            elif c == "[":
                class_body = i + 2 if text[i + 1 : i + 2] == "^" else i + 1
            elif c in "({":
                closers.append(")" if c == "(" else "}")
            elif closers and c == closers[-1]:
                closers.pop()
            elif not closers and c in ",}":
                break
            i += 1
        return i, not closers and class_body < 0

    def open_section(self, written: str, pos: int) -> None:
        name = _canonical(written)
        self.section = name if name in SECTIONS else None  # keys under it get no section check
        if self.section is None:
            known = "; known sections: " + ", ".join(f"<{s}>" for s in SECTIONS)
            hint = _did_you_mean(name, list(SECTIONS), "<{}>") or known
            self.error(pos, f"unknown section <{written}>{hint}")

    def assign(self, written: str, pos: int, value: _Item | _List | None) -> None:
        name = _canonical(written)
        key = KEYS.get(name)
        if key is None:
            hint = _did_you_mean(name, list(KEYS), "'{}'")
            self.error(pos, f"unknown key '{written}'{hint}")
            return
        if self.section is not None and key.section != self.section:
            self.error(pos, f"'{written}' belongs in <{key.section}>, not <{self.section}>")
        if name in self.first_seen:
            line = self.text.count("\n", 0, self.first_seen[name]) + 1
            self.error(pos, f"duplicate key '{written}' (first set on line {line})")
            return
        self.first_seen[name] = pos
        if isinstance(value, _List) and not key.many:
            self.error(value.pos, f"'{written}' takes a single value, not a list")
            return
        if value is None:
            return
        items = value.items if isinstance(value, _List) else [value]
        converted = []
        for item in items:
            try:
                converted.append(key.convert(written, item.text))
            except Invalid as exc:
                self.error(item.pos, str(exc))
        if len(converted) < len(items) or (isinstance(value, _List) and value.damaged):
            return  # already reported
        if key.required and not converted:
            self.error(value.pos, f"'{written}' is empty; at least one value is required")
        else:
            field = key.name.replace("-", "_")
            self.values[field] = tuple(converted) if key.many else converted[0]
