"""The package's layout keeps the design the docs tell (docs/architecture.md): one place picks the
store's backend, no backend imports another, core/ imports neither Scrapy nor Twisted, and the
architecture's module tree names every module of the package."""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "tarantula"
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


def modules() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(path: Path) -> set[str]:
    """The modules ``path`` imports (absolute names), at any depth of its code."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_one_place_picks_the_store_backend():
    readers = [
        f"{name}:{number}"
        for name, path in modules().items()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bconfig\.redis\b", line) and not name.startswith("tarantula.store.redis")
    ]
    # The Redis backend reads its server's address; anything else asks tarantula.store.backend()
    assert [reader.partition(":")[0] for reader in readers] == ["tarantula.store"], readers


def test_no_backend_imports_another_and_nothing_outside_imports_a_backend():
    sqlite, redis = "tarantula.store.sqlite", "tarantula.store.redis"
    wrong = []
    for name, path in modules().items():
        for imported in imports(path):
            for backend in (sqlite, redis):
                inside = name == backend or name.startswith(backend + ".")
                # The one place that picks a backend names both: tarantula.store.backend().
                if (
                    (imported == backend or imported.startswith(backend + "."))
                    and not inside
                    and name != "tarantula.store"
                ):
                    wrong.append(f"{name} imports {imported}")
    assert wrong == []


def test_core_imports_neither_scrapy_nor_twisted():
    wrong = [
        f"{name} imports {imported}"
        for name, path in modules().items()
        if name.startswith("tarantula.core")
        for imported in imports(path)
        if imported.split(".")[0] in ("scrapy", "twisted")
    ]
    assert wrong == []


def test_the_architecture_s_module_tree_names_every_module():
    """docs/architecture.md's tree lists each module by its file name under its folder; a module
    added, moved or removed shows here until the tree says so."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    tree = text[text.index("    tarantula/\n") :].split("\n\n")[0]
    named = set(re.findall(r"[\w]+\.(?:py|lua|html)", tree))
    missing = sorted(
        f"{path.relative_to(PACKAGE)}"
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" and path.name not in named
    )
    assert missing == []


def _library_private_names() -> set[str]:
    """The private attribute names (one leading underscore) of the classes of Scrapy, Twisted's
    web client and internet, and redis-py."""
    import importlib
    import pkgutil

    import redis
    import scrapy
    import twisted.internet
    import twisted.web

    names: set[str] = set()
    for package in (scrapy, redis, twisted.web, twisted.internet):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            # tests, Windows' and reactors' modules (importing a reactor's may install it)
            if any(part in info.name for part in (".test", "win32", "iocp", "reactor", "gtk")):
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # deprecated modules say so when imported
                    module = importlib.import_module(info.name)
            except Exception:  # a module that needs what is not installed
                continue
            for value in list(vars(module).values()):
                if isinstance(value, type) and value.__module__ == module.__name__:
                    names.update(n for n in vars(value) if n[:1] == "_" and n[:2] != "__")
    return names


def test_no_private_name_of_scrapy_twisted_or_redis_py_but_in_compat():
    """Private names of the libraries live in tarantula/compat.py only (each with its canary):
    an import of one, an attribute of that name that Tarantula's own code never sets, or a
    getattr of one, anywhere else fails here."""
    private = _library_private_names()
    own = set()
    for path in modules().values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                own.add(node.name)  # a method of Tarantula's own
    wrong = []
    for name, path in modules().items():
        if name == "tarantula.compat":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                top = node.module.split(".")[0]
                if top in ("scrapy", "twisted", "redis") and (
                    any(part[:1] == "_" for part in node.module.split("."))
                    or any(alias.name[:1] == "_" for alias in node.names)
                ):
                    wrong.append(f"{name}:{node.lineno}: from {node.module} import ...")
            elif isinstance(node, ast.Attribute) and node.attr in private - own:
                wrong.append(f"{name}:{node.lineno}: .{node.attr}")
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) in ("getattr", "hasattr")
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in private - own
            ):
                wrong.append(f"{name}:{node.lineno}: getattr {node.args[1].value}")
    assert wrong == []
