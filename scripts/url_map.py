"""The URL map in docs/architecture.md: for every URL, the view that answers it and the domain
functions it uses.

    .venv/bin/python scripts/url_map.py            print the table
    .venv/bin/python scripts/url_map.py --write    replace the block in docs/architecture.md
    .venv/bin/python scripts/url_map.py --check    exit 1, with a diff, when the block is stale

It walks theater_site/urls.py through Django's resolver and reads each view's source with ``ast``.
A view uses a domain function (booking.sales, payments, notifications, reports, venues, upkeep)
when its body names one, called (``holds.toggle_seat(...)``) or handed on
(``partial(holds.toggle_seat, ...)``), or when a helper of its own package that the body names
does (one level: shared rendering helpers further down would list the same reads everywhere).
A class-based view is read method by method; the pages Django's admin makes for itself (index,
login, the models of other apps) are one row. A REST API URL (django-ninja) names the functions
of its operations, one per HTTP method.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import functools
import importlib
import inspect
import os
import re
import sys
import types
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.urls import URLPattern

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
START, END = "<!-- url-map:start -->", "<!-- url-map:end -->"
DOMAINS = tuple(f"booking.{name}." for name in ("sales", "payments", "notifications", "reports", "venues", "upkeep"))
DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
HEADER = "| URL | view (file under booking/, function) | domain functions it uses |\n| --- | --- | --- |\n"


def url_patterns() -> Iterator[tuple[str, URLPattern]]:
    """(readable path, URLPattern) for every pattern, includes flattened, in the URLconf's order."""
    from django.urls import URLResolver, get_resolver

    def walk(patterns, prefix: str) -> Iterator[tuple[str, URLPattern]]:
        for pattern in patterns:
            path = prefix + readable(str(pattern.pattern))
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, path)
            else:
                yield path, pattern

    yield from walk(get_resolver().url_patterns, "/")


def readable(route: str) -> str:
    """``sessions/<str:session_id>/`` -> ``sessions/<session_id>/``; a regex's groups likewise."""
    route = re.sub(r"<\w+:(\w+)>", r"<\1>", route)
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)(\{[\d,]+\})?", r"<\1>", route)
    return route.removeprefix("^").removesuffix("$").replace("\\.", ".")


def view_of(callback):
    """The function or class behind a URL: decorators, ``as_view()`` and the admin's wrapper off."""
    if hasattr(callback, "view_class"):
        return callback.view_class
    view = inspect.unwrap(callback)
    view = getattr(view, "__func__", view)  # an admin view: a bound method of its ModelAdmin
    while isinstance(view, functools.partial):  # django-ninja's schema and docs views
        view = inspect.unwrap(view.func)
    while "<locals>" in view.__qualname__ and view.__closure__:  # a decorator without functools.wraps
        inner = [cell.cell_contents for cell in view.__closure__ if inspect.isfunction(cell.cell_contents)]
        if not inner:
            break
        view = inner[0]
    return view


def api_operations(callback) -> list | None:
    """The functions of a django-ninja URL's operations (its PathView, which the URL's view closes
    over), or None for any other view."""
    for cell in getattr(inspect.unwrap(callback), "__closure__", None) or ():
        operations = getattr(cell.cell_contents, "operations", None)
        if isinstance(operations, list) and operations and hasattr(operations[0], "view_func"):
            return [operation.view_func for operation in operations]
    return None


def admin_class(callback) -> type | None:
    """The ModelAdmin class whose method a URL's callback wraps, if any."""
    while callback is not None:
        if inspect.ismethod(callback):
            return type(callback.__self__)
        callback = getattr(callback, "__wrapped__", None)
    return None


def source_file(obj) -> str:
    return Path(inspect.getsourcefile(obj) or "?").resolve().relative_to(ROOT).as_posix()


@cache
def module_tree(path: str) -> ast.Module:
    return ast.parse((ROOT / path).read_text(), path)


def definition(func) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function's ``def`` in its module, found by its qualified name (``Class.method``)."""
    body: list[ast.stmt] = module_tree(source_file(func)).body
    node = None
    for name in func.__qualname__.split("."):
        node = next((n for n in body if isinstance(n, DEFINITIONS) and n.name == name), None)
        if node is None:
            return None
        body = node.body
    return node if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else None


def local_imports(node: ast.AST) -> dict[str, object]:
    """The names a function imports inside its own body."""
    names: dict[str, object] = {}
    for child in ast.walk(node):
        if isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
            module = importlib.import_module(child.module)
            for alias in child.names:
                value = getattr(module, alias.name, None)
                names[alias.asname or alias.name] = value or importlib.import_module(f"{child.module}.{alias.name}")
    return names


def resolve(node: ast.expr, namespace: dict, owner: type | None):
    """What a name (``holds``), dotted name (``holds.toggle_seat``) or ``self.method`` refers to."""
    if isinstance(node, ast.Name):
        return namespace.get(node.id)
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id == "self" and owner is not None:
            return getattr(owner, node.attr, None)
        base = resolve(node.value, namespace, owner)
        if isinstance(base, types.ModuleType):
            return getattr(base, node.attr, None)
    return None


def uses(func, owner: type | None, depth: int = 1) -> set[str]:
    """The domain functions (``sales.holds.toggle_seat``) a view names, and its helpers do."""
    func = inspect.unwrap(getattr(func, "__func__", func))
    node = definition(func) if inspect.isfunction(func) else None
    if node is None:
        return set()
    namespace = {**func.__globals__, **local_imports(node)}
    own_package = ".".join(func.__module__.split(".")[:2]) + "."  # booking.presale., booking.control., ...
    found: set[str] = set()
    for child in (child for statement in node.body for child in ast.walk(statement)):
        target = resolve(child, namespace, owner) if isinstance(child, ast.Name | ast.Attribute) else None
        target = inspect.unwrap(getattr(target, "__func__", target)) if callable(target) else None
        if not inspect.isfunction(target):
            continue
        if target.__module__.startswith(DOMAINS):
            found.add(f"{target.__module__.removeprefix('booking.')}.{target.__name__}")
        elif depth > 0 and target is not func and target.__module__.startswith((own_package, "booking.web.")):
            found |= uses(target, owner, depth - 1)
    return found


def row(path: str, pattern: URLPattern) -> str | None:
    """The table's row for one URL; None for a view that is Django's own."""
    operations = api_operations(pattern.callback)
    if operations is not None:
        names = sorted(set().union(*(uses(function, None) for function in operations)))
        functions = ", ".join(f"`{function.__qualname__}`" for function in operations)
        where = f"`{source_file(operations[0]).removeprefix('booking/')}` {functions}"
        return f"| `{path}` | {where} | {', '.join(f'`{name}`' for name in names) or '-'} |\n"
    view = view_of(pattern.callback)
    if not view.__module__.startswith(("booking.", "theater_site.")):
        return None
    owner: type | None
    if inspect.isclass(view):
        owner, methods = view, [method for method in vars(view).values() if inspect.isfunction(method)]
    else:
        owner, methods = admin_class(pattern.callback), [view]
    names = sorted(set().union(*(uses(method, owner) for method in methods)))
    where = f"`{source_file(view).removeprefix('booking/')}` `{view.__qualname__}`"
    return f"| `{path}` | {where} | {', '.join(f'`{name}`' for name in names) or '-'} |\n"


def table() -> str:
    from django.contrib.admin import ModelAdmin

    rows, other_apps = [HEADER], []
    for path, pattern in url_patterns():
        line = row(path, pattern)
        if line is not None and line != rows[-1]:  # django-ninja names a path once per operation
            rows.append(line)
        elif line is not None:
            continue
        elif not path.startswith("/admin/"):
            view = view_of(pattern.callback)
            rows.append(f"| `{path}` | Django's `{view.__module__}.{view.__qualname__}` | - |\n")
        elif issubclass(admin_class(pattern.callback) or object, ModelAdmin) and path.count("/") == 4:
            model = path.split("/")
            other_apps.append(f"{model[2]}.{model[3]}")
    rows.append(
        "| `/admin/...`, the rest | Django admin's own pages: index, login, logout, password change, "
        f"an app's index, the models of other apps ({', '.join(other_apps)}) | - |\n"
    )
    return "".join(rows)


def replace_block(text: str, block: str) -> str:
    before, rest = text.split(START, 1)
    _old, after = rest.split(END, 1)
    return f"{before}{START}\n{block}{END}{after}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The URL map in docs/architecture.md.")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="replace the block in docs/architecture.md")
    mode.add_argument("--check", action="store_true", help="exit 1 when the block in the doc differs")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "theater_site.settings_test")
    import django

    django.setup()
    block = table()
    if not (args.write or args.check):
        sys.stdout.write(block)
        return 0
    text = DOC.read_text()
    wanted = replace_block(text, block)
    if args.write:
        DOC.write_text(wanted)
        return 0
    if text != wanted:
        diff = difflib.unified_diff(text.splitlines(True), wanted.splitlines(True), str(DOC.relative_to(ROOT)), "urls")
        sys.stdout.writelines(diff)
        print("docs/architecture.md's URL map is stale: run `make url-map`.")
        return 1
    print("OK: docs/architecture.md's URL map matches the URLconf.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
