"""Checks the import rules of booking/ (docs/architecture.md, "Parts"):

    .venv/bin/python scripts/check_architecture.py [--all] [--update-baseline] [--root DIR]

Rules, over every module of booking/ but its tests and migrations:
- import-loop: no two modules import each other, directly or through others. Every import counts,
  the ones inside functions too; imports under ``if TYPE_CHECKING:`` do not (they never run, so
  they cannot make a half-initialised module, and type-only references between two modules are
  what TYPE_CHECKING is for). One entry per import that closes a loop, with a loop it closes.
  ``from pkg import module`` imports the module, ``from pkg import name`` the package; a package's
  ``__init__`` running before its submodule is not counted (every package re-exporting its
  submodules would be a loop).
- upward-import: a module imports only its own layer and the layers below it (LAYERS). Type-only
  imports count here: a lower layer naming an upper layer's type depends on it all the same.
  Imports from or to a module in no layer are not judged (it is reported as unplaced).
- sibling-import: the audiences (INDEPENDENT: the buyer's, the door's and the staff's packages)
  do not import each other; what two of them share moves down to the web helpers or a domain.
- unplaced: every module belongs to a layer, so the table stays complete.
- contextvar: no ContextVar (nor the contextvars module) below the web layer: services take what
  they depend on as arguments.
- private-name: no module uses another module's ``_name`` (``from m import _name`` or
  ``m._name``), its own package's ``__init__`` included: make it public or move it.
- function-import: every import of a booking module inside a function is listed, so the imports
  placed there to dodge a loop stay visible and only go down (an app's ``ready()`` excepted:
  Django has apps import there what must wait for the app registry, such as signal receivers).

Today's violations are in scripts/architecture_baseline.txt (one key per violation: rule, module,
target; no line numbers, so edits elsewhere do not disturb it). The check fails on a violation not
in the baseline, and on a baseline entry that is gone: the baseline only shrinks, and a fixed
violation cannot come back unnoticed. ``--update-baseline`` rewrites it from the code.

Only the standard library (ast): import-linter's contracts know neither imports inside functions
as such, nor private names or ContextVars, and its ignore lists are no ratchet.
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "booking"
BASELINE = ROOT / "scripts" / "architecture_baseline.txt"
# Package names left out wherever they sit under booking/ (tests may mirror the packages).
EXCLUDED_PARTS = frozenset({"tests", "migrations", "__pycache__"})

# Layers, lowest first: a module may import its own layer and the layers below, never above. A
# module belongs to the layer of the longest prefix it starts with (at a dot).
LAYERS = [
    ["booking.core"],
    ["booking.venues"],
    ["booking.accounts"],
    [
        "booking.sales",
        "booking.payments",
        "booking.notifications",
        "booking.reports",
        "booking.webhooks",
        "booking.models",
    ],
    ["booking.upkeep"],
    ["booking.web"],
    [
        "booking.presale",
        "booking.checkin",
        "booking.control",
        "booking.admin",
        "booking.templatetags",
        "booking.management",
        "booking.apps",  # the AppConfig: its ready() may import what must wait for the app registry
    ],
]
# The layers where no ContextVar may live: everything below the web helpers.
WEB_LAYER = 5
CONTEXTVAR_FREE_EXTRA: list[str] = []

# The audiences' packages stand side by side: the buyer's, the door's and the staff's pages share
# only what lies below them (the web helpers and the domains), never each other's modules.
INDEPENDENT = ["booking.presale", "booking.checkin", "booking.control"]

RULES = (
    "import-loop",
    "upward-import",
    "sibling-import",
    "unplaced",
    "contextvar",
    "private-name",
    "function-import",
    "syntax",
)


@dataclass(frozen=True)
class Violation:
    rule: str
    module: str
    target: str  # what the key names besides the module ("" for a rule about the module alone)
    path: str
    line: int
    message: str

    @property
    def key(self) -> str:
        return f"{self.rule} {self.module} -> {self.target}" if self.target else f"{self.rule} {self.module}"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.message}"


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    line: int
    in_function: bool
    type_only: bool


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    imports: list[Import] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)


def is_under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str, layers: list[list[str]] = LAYERS) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for index, prefixes in enumerate(layers):
        for prefix in prefixes:
            if is_under(module, prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    return best[1] if best else None


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def find_modules(root: Path, package: str = PACKAGE) -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if EXCLUDED_PARTS.intersection(parts[:-1]):
            continue
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        modules[name] = Module(name, path, is_package)
    return modules


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
# Nodes that hold no import, call or attribute: not descended into (a third of a module's nodes).
_LEAVES = (ast.Constant, ast.Name, ast.expr_context, ast.operator, ast.cmpop, ast.boolop, ast.unaryop)


def _walk(tree: ast.AST) -> Iterator[tuple[ast.AST, str | None, bool]]:
    """Every node in source order, with the function it sits in (the innermost one's name, None
    outside functions) and whether it is under ``if TYPE_CHECKING:`` (a hand-made walk:
    ast.NodeVisitor takes twice as long)."""
    stack: list[tuple[ast.AST, str | None, bool]] = [(tree, None, False)]
    while stack:
        node, function, type_only = stack.pop()
        yield node, function, type_only
        if isinstance(node, _FUNCTIONS):
            function = "<lambda>" if isinstance(node, ast.Lambda) else node.name
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend((child, function, type_only) for child in reversed(node.orelse))
            stack.extend((child, function, True) for child in reversed(node.body))
            continue
        children: list[ast.AST] = []
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                children.extend(item for item in value if isinstance(item, ast.AST) and not isinstance(item, _LEAVES))
            elif isinstance(value, ast.AST) and not isinstance(value, _LEAVES):
                children.append(value)
        stack.extend((child, function, type_only) for child in reversed(children))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Reader:
    """One module's imports, the names they bind to booking modules, its ContextVars and its uses
    of other modules' private names."""

    def __init__(self, module: Module, modules: dict[str, Module], root: Path, package: str) -> None:
        self.module = module
        self.modules = modules
        self.package = package
        self.path = module.path.relative_to(root).as_posix()
        self.bindings: dict[str, str] = {}  # local name -> booking module (or a package above one)
        self.contextvar_free = layer_is_below_web(module.name)
        self.private_seen: set[str] = set()

    def read(self, tree: ast.Module) -> None:
        attributes: list[ast.Attribute] = []
        for node, function, type_only in _walk(tree):
            if isinstance(node, ast.Import):
                self._add(node, self._import(node), function, type_only)
            elif isinstance(node, ast.ImportFrom):
                self._add(node, self._import_from(node), function, type_only)
            elif isinstance(node, ast.Attribute):
                if is_private(node.attr):
                    attributes.append(node)  # resolved once every import has bound its name
            elif isinstance(node, ast.Call):
                self._call(node)
        for attribute in attributes:
            owner = self._dotted(attribute.value)
            if owner is not None and owner in self.modules and owner != self.module.name:
                self._private(attribute, owner, attribute.attr)

    # Imports.
    def _import(self, node: ast.Import) -> list[str]:
        targets = []
        for alias in node.names:
            if alias.name == "contextvars" or alias.name.startswith("contextvars."):
                self._contextvar(node, "import contextvars", "imports contextvars")
            target = self._known(alias.name)
            if target is None:
                continue
            targets.append(target)
            top = alias.name.split(".")[0]
            # `import booking.a.b` binds `booking`: `booking.a.b._x` is resolved through it.
            self.bindings[alias.asname or top] = target if alias.asname else top
        return targets

    def _import_from(self, node: ast.ImportFrom) -> list[str]:
        """The modules the statement runs: `from pkg import module` is the module, `from pkg
        import name` the package."""
        base = self._absolute(node)
        if base == "contextvars":
            self._contextvar(node, "import contextvars", "imports from contextvars")
        if base is None or not is_under(base, self.package):
            return []
        targets = []
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if alias.name != "*" and submodule in self.modules:
                targets.append(submodule)
                self.bindings[alias.asname or alias.name] = submodule
                continue
            target = self._known(base)
            if target is None:
                continue
            targets.append(target)
            if is_private(alias.name):
                self._private(node, target, alias.name)
        return targets

    def _absolute(self, node: ast.ImportFrom) -> str | None:
        if not node.level:
            return node.module
        parts = self.module.name.split(".")
        if not self.module.is_package:
            parts = parts[:-1]
        if node.level > 1:
            parts = parts[: len(parts) - (node.level - 1)]
        if not parts:
            return None
        return ".".join(parts + ([node.module] if node.module else []))

    def _known(self, dotted: str) -> str | None:
        """The module an import statement runs: the longest known prefix of the dotted name."""
        parts = dotted.split(".")
        while parts:
            name = ".".join(parts)
            if name in self.modules:
                return name
            parts.pop()
        return None

    def _add(
        self, node: ast.Import | ast.ImportFrom, targets: list[str], function: str | None, type_only: bool
    ) -> None:
        for target in dict.fromkeys(targets):  # one statement, one import of each module
            if target == self.module.name:
                continue
            self.module.imports.append(Import(self.module.name, target, node.lineno, function is not None, type_only))
            # An app's ready() is where Django has apps import what must wait for the registry.
            app_ready = function == "ready" and self.module.name.rsplit(".", 1)[-1] == "apps"
            if function is not None and not type_only and not app_ready:
                message = f"{self.module.name} imports {target} inside a function ({function})"
                self._report("function-import", target, node.lineno, message)

    # ContextVars.
    def _call(self, node: ast.Call) -> None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name == "ContextVar":
            first = node.args[0] if node.args else None
            label = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else "ContextVar"
            self._contextvar(node, f"ContextVar({label})", f"makes ContextVar {label!r}")

    def _contextvar(self, node: ast.stmt | ast.expr, target: str, what: str) -> None:
        if self.contextvar_free:
            self._report(
                "contextvar", target, node.lineno, f"{self.module.name} {what}: pass what a service needs as arguments"
            )

    # Private names reached through a module.
    def _dotted(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.bindings.get(node.id)
        if isinstance(node, ast.Attribute):
            owner = self._dotted(node.value)
            return f"{owner}.{node.attr}" if owner is not None else None
        return None

    def _private(self, node: ast.stmt | ast.expr, owner: str, name: str) -> None:
        target = f"{owner}.{name}"
        if target in self.private_seen:
            return
        self.private_seen.add(target)
        self._report("private-name", target, node.lineno, f"{self.module.name} uses {owner}'s private {name}")

    def _report(self, rule: str, target: str, line: int, message: str) -> None:
        self.module.violations.append(Violation(rule, self.module.name, target, self.path, line, message))


def layer_is_below_web(module: str) -> bool:
    layer = layer_of(module)
    if layer is not None:
        return layer < WEB_LAYER
    return any(is_under(module, prefix) for prefix in CONTEXTVAR_FREE_EXTRA)


def read(root: Path, package: str = PACKAGE) -> dict[str, Module]:
    modules = find_modules(root, package)
    for module in modules.values():
        try:
            tree = ast.parse(module.path.read_bytes(), filename=str(module.path))
        except SyntaxError as error:
            path = module.path.relative_to(root).as_posix()
            module.violations.append(Violation("syntax", module.name, "", path, error.lineno or 1, str(error)))
            continue
        _Reader(module, modules, root, package).read(tree)
    return modules


# Loops: Tarjan's strongly connected components of the runtime import graph.
def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return components


def shortest_path(graph: dict[str, set[str]], start: str, goal: str, within: set[str]) -> list[str]:
    previous: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            path: list[str] = []
            step: str | None = node
            while step is not None:
                path.append(step)
                step = previous[step]
            return path[::-1]
        for successor in sorted(graph.get(node, ())):
            if successor in within and successor not in previous:
                previous[successor] = node
                queue.append(successor)
    raise ValueError(f"no path from {start} to {goal}")  # cannot happen inside a component


@dataclass
class Report:
    violations: list[Violation]
    loops: list[tuple[list[str], list[str]]]  # (members, an example cycle)


def check(root: Path = ROOT, package: str = PACKAGE) -> Report:
    modules = read(root, package)
    violations = [violation for module in modules.values() for violation in module.violations]

    runtime: dict[str, set[str]] = {name: set() for name in modules}
    first_line: dict[tuple[str, str], int] = {}
    for module in modules.values():
        for imported in module.imports:
            if not imported.type_only:
                runtime[module.name].add(imported.target)
                first_line.setdefault((module.name, imported.target), imported.line)

    loops = []
    for members in strongly_connected(runtime):
        if len(members) < 2:
            continue
        within = set(members)
        loops.append((members, [members[0], *shortest_cycle(runtime, members[0], within)]))
        for importer in members:
            for target in sorted(runtime[importer] & within):
                back = shortest_path(runtime, target, importer, within)
                path = " -> ".join([importer, *back])
                violations.append(
                    Violation(
                        "import-loop",
                        importer,
                        target,
                        modules[importer].path.relative_to(root).as_posix(),
                        first_line[(importer, target)],
                        f"{importer} imports {target}, which leads back: {path} (a loop of {len(members)} modules)",
                    )
                )

    for module in modules.values():
        own = layer_of(module.name)
        relative = module.path.relative_to(root).as_posix()
        if own is None:
            if module.name != package:
                violations.append(
                    Violation("unplaced", module.name, "", relative, 1, f"{module.name} belongs to no layer (LAYERS)")
                )
            continue
        reported: set[str] = set()
        for imported in module.imports:
            other = layer_of(imported.target)
            if other is not None and other > own and imported.target not in reported:
                reported.add(imported.target)
                violations.append(
                    Violation(
                        "upward-import",
                        module.name,
                        imported.target,
                        relative,
                        imported.line,
                        f"{module.name} (layer {own}) imports {imported.target} (layer {other}, above it)",
                    )
                )
    violations.extend(sibling_imports(modules, root))
    violations.sort(key=lambda violation: (violation.path, violation.line, violation.rule, violation.target))
    return Report(violations, loops)


def sibling_of(module: str) -> str | None:
    return next((prefix for prefix in INDEPENDENT if is_under(module, prefix)), None)


def sibling_imports(modules: dict[str, Module], root: Path) -> list[Violation]:
    found = []
    for module in modules.values():
        own = sibling_of(module.name)
        if own is None:
            continue
        reported: set[str] = set()
        for imported in module.imports:
            other = sibling_of(imported.target)
            if other is not None and other != own and imported.target not in reported:
                reported.add(imported.target)
                message = f"{module.name} imports {imported.target}: {own} and {other} share only what lies below them"
                relative = module.path.relative_to(root).as_posix()
                found.append(
                    Violation("sibling-import", module.name, imported.target, relative, imported.line, message)
                )
    return found


def shortest_cycle(graph: dict[str, set[str]], start: str, within: set[str]) -> list[str]:
    """A shortest cycle from start back to itself, without the first start."""
    best: list[str] | None = None
    for successor in sorted(graph[start] & within):
        path = shortest_path(graph, successor, start, within)
        if best is None or len(path) < len(best):
            best = path
    assert best is not None  # start is in a component of two or more
    return best


# The baseline: a multiset of keys (the same key twice for two imports of one module inside two
# functions of another).
def read_baseline(path: Path) -> Counter[str]:
    if not path.exists():
        return Counter()
    lines = (line.strip() for line in path.read_text().splitlines())
    return Counter(line for line in lines if line and not line.startswith("#"))


def write_baseline(path: Path, violations: Iterable[Violation]) -> None:
    header = (
        "# Known violations of scripts/check_architecture.py's rules, one per line (rule module -> target).\n"
        "# Only ever remove lines: fix a violation, then run\n"
        "#   .venv/bin/python scripts/check_architecture.py --update-baseline\n"
    )
    path.write_text(header + "".join(f"{key}\n" for key in sorted(violation.key for violation in violations)))


def rule_of(key: str) -> str:
    return key.split(" ", 1)[0]


def compare(report: Report, baseline: Counter[str]) -> tuple[list[Violation], Counter[str]]:
    """The violations not in the baseline, and the baseline's entries that are gone."""
    allowed = baseline.copy()
    new: list[Violation] = []
    for violation in report.violations:
        if allowed[violation.key] > 0:
            allowed[violation.key] -= 1
        else:
            new.append(violation)
    return new, +allowed


def summary(report: Report, baseline: Counter[str], new: list[Violation], gone: Counter[str]) -> Iterator[str]:
    now = Counter(violation.rule for violation in report.violations)
    before = Counter({rule: 0 for rule in RULES})
    for key, count in baseline.items():
        before[rule_of(key)] += count
    new_by_rule = Counter(violation.rule for violation in new)
    gone_by_rule: Counter[str] = Counter()
    for key, count in gone.items():
        gone_by_rule[rule_of(key)] += count
    yield f"{'rule':<16} {'now':>5} {'baseline':>9} {'new':>5} {'gone':>5}"
    for rule in RULES:
        if now[rule] or before[rule]:
            yield f"{rule:<16} {now[rule]:>5} {before[rule]:>9} {new_by_rule[rule]:>5} {gone_by_rule[rule]:>5}"
    sizes = ", ".join(str(len(members)) for members, _ in report.loops) or "none"
    yield f"loops (modules in each): {sizes}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], prog="check_architecture.py")
    parser.add_argument("--all", action="store_true", help="print every violation, the known ones too")
    parser.add_argument("--update-baseline", action="store_true", help="rewrite the baseline from the code")
    parser.add_argument("--root", type=Path, default=ROOT, help="the project to check (default: this one)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    baseline_path = root / BASELINE.relative_to(ROOT)

    started, started_cpu = time.perf_counter(), time.process_time()
    report = check(root)
    if args.update_baseline:
        write_baseline(baseline_path, report.violations)
    baseline = read_baseline(baseline_path)
    new, gone = compare(report, baseline)

    shown = report.violations if args.all else new
    for violation in shown:
        print(violation)
    in_new_loop = {violation.module for violation in new if violation.rule == "import-loop"}
    shown_loops = [loop for loop in report.loops if args.all or in_new_loop.intersection(loop[0])]
    for members, cycle in shown_loops:
        print(f"loop of {len(members)} modules: {', '.join(members)}\n  e.g. {' -> '.join(cycle)}")
    baseline_name = baseline_path.relative_to(root).as_posix()
    for key in sorted(gone.elements()):
        print(f"{baseline_name}: gone: {key} (fixed: run with --update-baseline so it cannot come back)")
    for line in summary(report, baseline, new, gone):
        print(line)
    elapsed = f"{time.perf_counter() - started:.2f} s, {time.process_time() - started_cpu:.2f} s CPU"
    if new or gone:
        print(f"FAILED: {len(new)} new violation(s), {sum(gone.values())} baseline entr(y/ies) gone ({elapsed})")
        return 1
    print(f"OK: no violation beyond the baseline ({elapsed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
