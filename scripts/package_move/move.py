"""Move booking/'s modules into sub-packages (layout.py's MOVES) and rewrite every reference.

Usage: python move.py <repo root> [--venv PATH] [--verify]

Runs on a clean checkout of main and leaves the result staged, uncommitted. Deterministic: the
same tree in gives the same tree out. It stops (exit 2, naming the problem) on anything it does
not know: a module in booking/ that layout.py does not place, a Celery task without an explicit
name, a moved file that finds its way by __file__ in a way not handled here, an import it cannot
rewrite, or a reference to an old module left in Python code after the rewrite.

Steps: relative imports in booking/ become absolute (ruff TID252); modules and tests move with
`git mv`; new packages get an __init__.py; Python imports, dotted names (settings, mock targets,
urls), file paths (booking/services/holds.py, services/holds.py, holds.py) in code comments,
docstrings and every other text file are rewritten; ruff sorts the imports and formats; what is
left that names an old module is listed.
"""

from __future__ import annotations

import argparse
import ast
import collections
import io
import os
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Text the rewrite cannot derive: (file, old text, new text); each old text must occur once.
PATCHES = [
    # Celery finds tasks in each installed app's tasks.py; the app is `booking`, the tasks now
    # live in booking/sales/tasks.py.
    (
        "theater_site/celery.py",
        "tasks are found in each app's tasks.py (booking/tasks.py); the",
        "tasks are found in booking/sales/tasks.py (autodiscover_tasks below); the",
    ),
    ("theater_site/celery.py", "app.autodiscover_tasks()\n", 'app.autodiscover_tasks(["booking.sales"])\n'),
    # The architecture checker keeps ContextVars out of the services package until its modules move.
    (
        "scripts/check_architecture.py",
        "# The layers where no ContextVar may live: everything below the web helpers, and today's services\n"
        "# package until its modules have moved into those layers.\n",
        "# The layers where no ContextVar may live: everything below the web helpers.\n",
    ),
    (
        "scripts/check_architecture.py",
        'CONTEXTVAR_FREE_EXTRA = ["booking.services"]\n',
        "CONTEXTVAR_FREE_EXTRA: list[str] = []\n",
    ),
]
# Patches of files that a tree may not have yet (applied where the file exists).
OPTIONAL_PATCH_FILES = {"scripts/check_architecture.py"}
# The architecture checker's ratchet: its known violations are named by module, so it is
# rewritten from the moved code (the move makes upward imports visible that unplaced modules hid).
ARCHITECTURE_CHECK = "scripts/check_architecture.py"

# In translation catalogs only comment lines are rewritten (a msgid is what the code says).
CATALOG_SUFFIX = ".po"


class Stop(Exception):
    """Something the script does not know: it says what and stops."""


def fail(message: str) -> None:
    raise Stop(message)


# --- running things -------------------------------------------------------------------------


def run(args: list[str], cwd: Path, check: bool = True, capture: bool = False) -> subprocess.CompletedProcess:
    result = subprocess.run(args, cwd=cwd, text=True, capture_output=capture)
    if check and result.returncode != 0:
        if capture:
            sys.stderr.write(result.stdout + result.stderr)
        fail(f"command failed ({result.returncode}): {' '.join(args)}")
    return result


def git(repo: Path, *args: str, capture: bool = True) -> str:
    return run(["git", *args], repo, capture=capture).stdout


def find_venv(repo: Path, given: str | None) -> Path:
    candidates = []
    if given:
        candidates.append(Path(given))
    if os.environ.get("MOVE_VENV"):
        candidates.append(Path(os.environ["MOVE_VENV"]))
    candidates.append(repo / ".venv")
    candidates.append(Path(sys.prefix))
    candidates.append(Path("/work/main/.venv"))
    for venv in candidates:
        if (venv / "bin" / "ruff").exists() and (venv / "bin" / "python").exists():
            return venv.resolve() if venv.is_symlink() else venv
    fail("no virtualenv with ruff found (tried: " + ", ".join(map(str, candidates)) + "); pass --venv")
    raise AssertionError


# --- the layout -----------------------------------------------------------------------------


def load_layout():
    sys.path.insert(0, str(HERE))
    import layout  # noqa: PLC0415

    return layout


def dotted_to_path(dotted: str) -> str:
    return dotted.replace(".", "/")


class Mapping:
    """Old dotted module -> new dotted module, for modules, packages and test files."""

    def __init__(self, moves: dict[str, str]):
        self.moves = dict(moves)

    def add(self, old: str, new: str) -> None:
        self.moves[old] = new

    def map(self, dotted: str) -> str | None:
        """The new name of a dotted name whose prefix is a moved module (or package); else None."""
        parts = dotted.split(".")
        for i in range(len(parts), 1, -1):
            prefix = ".".join(parts[:i])
            if prefix in self.moves:
                return ".".join([self.moves[prefix], *parts[i:]])
        return None


# --- inventory: every module of booking/ is placed or known to stay ---------------------------


def old_modules(repo: Path) -> dict[str, str]:
    """dotted name -> path (relative) of every tracked .py file in booking/ (packages by __init__)."""
    modules = {}
    for path in git(repo, "ls-files", "booking").split("\n"):
        if not path.endswith(".py"):
            continue
        dotted = path[:-3].replace("/", ".")
        if dotted.endswith(".__init__"):
            dotted = dotted[: -len(".__init__")]
        modules[dotted] = path
    return modules


def check_inventory(repo: Path, layout, modules: dict[str, str]) -> None:
    problems = []
    stays = set(layout.STAYS)
    mapping = Mapping(layout.MOVES)
    for dotted in sorted(modules):
        if dotted == "booking" or dotted.startswith("booking.tests.") or dotted == "booking.tests":
            continue
        if mapping.map(dotted) is not None:
            continue
        if any(dotted == s or dotted.startswith(s + ".") for s in stays) or dotted in layout.DISSOLVED:
            continue
        problems.append(f"  {modules[dotted]} ({dotted}): not placed by layout.MOVES nor listed in layout.STAYS")
    for old in sorted(layout.MOVES):
        if old not in modules:
            # Nothing to move; a module renamed on main shows up above as one not placed.
            print(f"note: layout.MOVES names {old}, which is not in this tree: skipped")
    for old, new in sorted(layout.MOVES.items()):
        if new in modules and new != old:
            problems.append(f"  {old} -> {new}: the target already exists")
    dissolved = set(layout.DISSOLVED)
    for package in sorted(dissolved):
        for dotted in modules:
            if dotted.startswith(package + ".") and dotted not in layout.MOVES:
                problems.append(f"  {modules[dotted]}: in {package}, which goes away, but not placed")
    if problems:
        fail("the layout does not place every module:\n" + "\n".join(problems))


# --- Celery task names stay what they were ----------------------------------------------------


def task_names(repo: Path, tasks_path: str) -> set[str]:
    source = (repo / tasks_path).read_text()
    tree = ast.parse(source)
    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for deco in node.decorator_list:
            call = deco if isinstance(deco, ast.Call) else None
            func = call.func if call else deco
            fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if fname not in {"shared_task", "task"}:
                continue
            explicit = [k for k in (call.keywords if call else []) if k.arg == "name"]
            if not explicit or not isinstance(explicit[0].value, ast.Constant):
                fail(
                    f"{tasks_path}: task {node.name} has no explicit name=; its registered name would change "
                    "with the move (queued messages would find no task). Give it name=<old dotted name>."
                )
            names.add(explicit[0].value.value)
    if not names:
        fail(f"{tasks_path}: no Celery task found")
    return names


def logger_names(repo: Path, files: list[str]) -> set[str]:
    names = set()
    rx = re.compile(r"getLogger\(\s*[\"']([\w.]+)[\"']\s*\)")
    for path in files:
        if path.endswith(".py"):
            names.update(rx.findall((repo / path).read_text()))
    return names


# --- tests: which package each test file belongs to -------------------------------------------


def imported_modules(source: str, known: set[str], package: str) -> list[str]:
    """The booking modules a file imports (each once), as dotted names of the tree it was read in;
    ``package``: the file's own package, for relative imports."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = ".".join(filter(None, (parent, node.module)))
            names = []
            for alias in node.names:
                full = f"{base}.{alias.name}"
                names.append(full if full in known else base)
        else:
            continue
        for name in names:
            if name.split(".")[0] == "booking" and name not in found:
                found.append(name)
    return found


def package_of(new_dotted: str, layout) -> str | None:
    parts = new_dotted.split(".")
    if len(parts) < 2 or parts[1] == "tests":
        return None
    if parts[1] in layout.TEST_PACKAGES:
        return parts[1]
    return layout.TEST_PACKAGE_OF.get(parts[1])


def place_tests(repo: Path, layout, mapping: Mapping, modules: dict[str, str]) -> dict[str, str]:
    """booking.tests.test_x -> booking.tests.<package>.test_x, with the decision printed."""
    known = set(modules)
    places = {}
    print("\nTest files -> package (counts: booking modules each file imports, by package)")
    for dotted in sorted(modules):
        parts = dotted.split(".")
        if len(parts) != 3 or parts[1] != "tests" or not parts[2].startswith("test_"):
            continue
        counts: collections.Counter[str] = collections.Counter()
        for module in imported_modules((repo / modules[dotted]).read_text(), known, "booking.tests"):
            new = mapping.map(module) or module
            package = package_of(new, layout)
            if package:
                counts[package] += 1
        by_imports = None
        if counts:
            # Most imports wins; a tie goes to the higher layer (the code under test sits on top of
            # what the test only uses to set things up).
            order = layout.TEST_PACKAGES
            by_imports = max(counts, key=lambda p: (counts[p], order.index(p)))
        chosen, how = layout.TEST_PLACES.get(parts[2]), "layout.TEST_PLACES"
        if chosen is None:
            prefix = next((p for p in sorted(layout.TEST_NAME_PREFIXES) if parts[2].startswith(p)), None)
            chosen, how = (
                (layout.TEST_NAME_PREFIXES[prefix], f"name {prefix}*") if prefix else (by_imports, "by imports")
            )
        if chosen is None:
            fail(f"{modules[dotted]}: imports no booking module; add it to layout.TEST_PLACES")
        if chosen not in layout.TEST_PACKAGES:
            fail(f"layout.TEST_PLACES[{parts[2]!r}] = {chosen!r} is not one of {layout.TEST_PACKAGES}")
        summary = ", ".join(f"{p} {n}" for p, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        note = "" if chosen == by_imports else f"  (imports say {by_imports})"
        print(f"  {parts[2]:38} -> {chosen:13} [{how}] {summary}{note}")
        places[dotted] = f"booking.tests.{chosen}.{parts[2]}"
    unknown = set(layout.TEST_PLACES) - {d.split(".")[2] for d in places}
    if unknown:
        print(f"  note: layout.TEST_PLACES names test files not in this tree: {sorted(unknown)}")
    return places


# --- rewriting Python imports ----------------------------------------------------------------


def line_offsets(text: str) -> list[int]:
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def rewrite_imports(path: str, text: str, mapping: Mapping, dissolved: set[str]) -> str:
    """`from booking import views` -> `from booking.presale.views import pages as views`, etc.

    Each imported name is mapped as `<module>.<name>`, so a module imported from its parent moves
    to its new parent and keeps the local name the code uses. Other forms (`import booking.x`,
    `from booking.x import y`) are dotted names, rewritten with all the others."""
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        fail(f"{path}: does not parse: {error}")
    offsets = line_offsets(text)
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in dissolved:
                    fail(f"{path}:{node.lineno}: imports {alias.name}, a package that goes away")
            continue
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        if node.module.split(".")[0] != "booking":
            continue
        groups: dict[str, list[str]] = {}
        changed = False
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            if full in dissolved:
                fail(f"{path}:{node.lineno}: imports {full}, a package that goes away")
            new_full = mapping.map(full)
            if new_full is None:
                parent, name = node.module, alias.name
            else:
                parent, name = new_full.rsplit(".", 1)
            if parent != node.module or name != alias.name:
                changed = True
            local = alias.asname or alias.name
            spec = name if local == name else f"{name} as {local}"
            groups.setdefault(parent, []).append(spec)
        if not changed:
            continue
        start = offsets[node.lineno - 1] + node.col_offset
        end = offsets[node.end_lineno - 1] + node.end_col_offset
        original = text[start:end]
        if "#" in original:
            fail(f"{path}:{node.lineno}: an import to split has comments inside it; rewrite it by hand first")
        before = text[offsets[node.lineno - 1] : start]
        if before.strip():
            fail(f"{path}:{node.lineno}: an import shares its line with other code; cannot rewrite it")
        parts = [f"from {parent} import {', '.join(specs)}" for parent, specs in groups.items()]
        line_end = text.find("\n", end)
        rest = text[end : line_end if line_end != -1 else len(text)]
        if len(parts) > 1 and rest.strip().startswith("#"):
            comment = rest.strip()
            if comment.startswith("# noqa"):  # it applies to each import the line becomes
                parts = [f"{part}  {comment}" for part in parts]
                end += len(rest)
            else:
                print(f"  note: {path}:{node.lineno}: the comment {comment!r} stays on the last of the split imports")
        edits.append((start, end, ("\n" + before).join(parts)))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


# --- rewriting names and paths in any text ----------------------------------------------------

DOTTED = re.compile(r"(?<![\w.])booking(?:\.[A-Za-z_]\w*)+")
FULL_PATH = re.compile(r"(?<![\w/.-])(booking(?:/\w+)+)(\.py\b|/|(?=\.\w))?")
SHORT_PATH = re.compile(r"(?<![\w/.-])((?:services|staff)(?:/\w+)+)(\.py\b|(?=\.\w))")
SHORT_DOTTED = re.compile(r"(?<![\w./-])((?:services|staff)(?:\.\w+)+)")
BARE = re.compile(r"(?<![\w/.-])(\w+)\.py\b")
# An import written in a string or a doc (a subprocess's script, a code sample): one line.
IMPORT_LINE = re.compile(r"(?m)^([ \t]*)from (booking(?:\.\w+)*) import (\w+(?: as \w+)?(?:, \w+(?: as \w+)?)*)[ \t]*$")


class Rewriter:
    def __init__(self, mapping, old_modules, old_dirs, moved_files, task_names, logger_names, package_moves):
        self.mapping = mapping
        self.old_modules = old_modules  # dotted -> old path
        self.old_paths = set(old_modules.values())
        self.old_dirs = old_dirs
        self.moved_files = moved_files  # new path -> old path
        self.task_names = task_names
        self.logger_names = logger_names
        self.package_moves = package_moves  # old package -> new package (directory renames)
        self.changes: collections.Counter[str] = collections.Counter()
        self.unresolved: list[str] = []
        stems = collections.defaultdict(list)
        for dotted, path in old_modules.items():
            if path.endswith("__init__.py") or ".tests" in dotted or ".migrations" in dotted:
                continue
            stems[dotted.rsplit(".", 1)[-1]].append(dotted)
        self.stems = stems

    def note(self, old: str, new: str) -> None:
        self.changes[f"{old} -> {new}"] += 1

    def new_path_of(self, dotted: str) -> str | None:
        new = self.mapping.map(dotted)
        return None if new is None else dotted_to_path(new) + ".py"

    def dotted(self, text: str) -> str:
        def repl(m):
            name = m.group(0)
            if name in self.task_names:
                return name
            before = text[m.start() - 1 : m.start()]
            after = text[m.end() : m.end() + 1]
            if name in self.logger_names and before in "\"'" and before and after == before:
                return name
            new = self.mapping.map(name)
            if new is None:
                return name
            self.note(name, new)
            return new

        return DOTTED.sub(repl, text)

    def full_paths(self, text: str) -> str:
        def repl(m):
            path, suffix = m.group(1), m.group(2) or ""
            module_like = suffix == "" and m.group(2) is not None  # booking/services/holds.seats_free
            if module_like and path.replace("/", ".") not in self.old_modules:
                return m.group(0)
            if suffix == ".py" or module_like:
                new = self.mapping.map(path.replace("/", "."))
                if new is None:
                    return m.group(0)
                self.note(path + suffix, dotted_to_path(new) + suffix)
                return dotted_to_path(new) + suffix
            # a directory: only a package that moves as a whole (booking/staff/ -> booking/control/)
            dotted = path.replace("/", ".")
            if path not in self.old_dirs:
                return m.group(0)
            for old, new in self.package_moves.items():
                if dotted == old or dotted.startswith(old + "."):
                    out = dotted_to_path(new + dotted[len(old) :]) + suffix
                    self.note(m.group(0), out)
                    return out
            return m.group(0)

        return FULL_PATH.sub(repl, text)

    def prose(self, text: str, where: str) -> str:
        """Mentions relative to booking/ or bare file names: in comments, docstrings and docs only."""

        def short_path(m):
            old = "booking." + m.group(1).replace("/", ".")
            if old not in self.old_modules:
                return m.group(0)
            new = self.mapping.map(old)
            if new is None:
                return m.group(0)
            out = dotted_to_path(new[len("booking.") :]) + m.group(2)
            self.note(m.group(0), out)
            return out

        def short_dotted(m):
            name = m.group(1)
            parts = name.split(".")
            module = "booking." + ".".join(parts[:2])
            if module not in self.old_modules:
                return name
            new = self.mapping.map("booking." + name)
            if new is None:
                return name
            out = new[len("booking.") :]
            self.note(name, out)
            return out

        def bare(m):
            stem = m.group(1)
            if stem.startswith("test_") or stem not in self.stems:
                return m.group(0)
            old_where = self.moved_files.get(where, where)
            here = old_where.rsplit("/", 1)[0].replace("/", ".") if "/" in old_where else ""
            if f"{here}.{stem}" in self.old_modules:
                target = f"{here}.{stem}"
            elif len(self.stems[stem]) == 1:
                target = self.stems[stem][0]
            else:
                if any(self.mapping.map(c) for c in self.stems[stem]):
                    self.unresolved.append(f"{where}: {m.group(0)} (which of {self.stems[stem]}?)")
                return m.group(0)
            new = self.mapping.map(target)
            if new is None:
                return m.group(0)
            new_path = dotted_to_path(new) + ".py"
            where_dir = where.rsplit("/", 1)[0] if "/" in where else ""
            if new_path.rsplit("/", 1)[0] == where_dir:
                out = new_path.rsplit("/", 1)[1]  # beside the file that names it
                if out == m.group(0):
                    return out
            else:
                out = new_path[len("booking/") :]
            self.note(f"{m.group(0)} (in {where})", out)
            return out

        text = IMPORT_LINE.sub(self.import_line, text)
        text = SHORT_PATH.sub(short_path, text)
        text = SHORT_DOTTED.sub(short_dotted, text)
        return BARE.sub(bare, text)

    def import_line(self, m) -> str:
        indent, module, names = m.group(1), m.group(2), m.group(3)
        groups: dict[str, list[str]] = {}
        for spec in names.split(", "):
            name, _, local = spec.partition(" as ")
            local = local or name
            new_full = self.mapping.map(f"{module}.{name}")
            parent, new_name = new_full.rsplit(".", 1) if new_full else (self.mapping.map(module) or module, name)
            groups.setdefault(parent, []).append(new_name if new_name == local else f"{new_name} as {local}")
        out = "\n".join(f"{indent}from {parent} import {', '.join(specs)}" for parent, specs in groups.items())
        if out != m.group(0):
            self.note(m.group(0).strip(), out.strip().replace("\n", " / "))
        return out

    def rewrite_text(self, text: str, where: str) -> str:
        text = self.dotted(text)
        text = self.full_paths(text)
        return self.prose(text, where)

    def rewrite_python(self, text: str, where: str) -> str:
        text = self.dotted(text)
        text = self.full_paths(text)
        # prose rewrites only inside comments and strings
        offsets = line_offsets(text)
        spans = []
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        except (tokenize.TokenError, SyntaxError) as error:
            fail(f"{where}: cannot tokenize: {error}")
        prose_types = {tokenize.COMMENT, tokenize.STRING}
        if hasattr(tokenize, "FSTRING_MIDDLE"):
            prose_types.add(tokenize.FSTRING_MIDDLE)
        for tok in tokens:
            if tok.type in prose_types:
                start = offsets[tok.start[0] - 1] + tok.start[1]
                end = offsets[tok.end[0] - 1] + tok.end[1]
                spans.append((start, end))
        for start, end in reversed(spans):
            text = text[:start] + self.prose(text[start:end], where) + text[end:]
        return text


# --- special cases ----------------------------------------------------------------------------


def adjust_file_paths(repo: Path, new_path: str, old_path: str) -> None:
    """A file one directory deeper than before: Path(__file__).resolve().parents[n] gets n + 1."""
    depth = new_path.count("/") - old_path.count("/")
    file = repo / new_path
    text = file.read_text()
    if "__file__" not in text:
        return
    rx = re.compile(r"Path\(__file__\)\.resolve\(\)\.parents\[(\d+)\]")
    new = rx.sub(lambda m: f"Path(__file__).resolve().parents[{int(m.group(1)) + depth}]", text)
    if new.count("__file__") != len(rx.findall(text)):
        fail(f"{new_path} (was {old_path}) uses __file__ in a way the move does not adjust; handle it in move.py")
    if new != text:
        file.write_text(new)
        print(f"  {new_path}: Path(__file__).parents[] one deeper")


def apply_patches(repo: Path, patches) -> None:
    for path, old, new in patches:
        file = repo / path
        if path in OPTIONAL_PATCH_FILES and not file.exists():
            print(f"  {path}: not in this tree, not patched")
            continue
        text = file.read_text()
        if text.count(old) != 1:
            fail(f"{path}: expected exactly one {old!r} to patch, found {text.count(old)}")
        file.write_text(text.replace(old, new))
        print(f"  {path}: patched ({old.strip()[:60]!r} ...)")


# --- the leftovers ----------------------------------------------------------------------------


def leftovers(repo: Path, files: list[str], rewriter: Rewriter, layout) -> tuple[list[str], list[str]]:
    """Mentions of old modules left: in Python code or strings (errors), in comments, docstrings
    and other files (listed for a look)."""
    old_names = set(layout.MOVES) | set(layout.DISSOLVED)
    name_rx = re.compile(r"(?<![\w.])booking(?:\.\w+)+")
    path_rx = re.compile(
        r"(?<![\w/.-])(?:booking/)?(?:"
        + "|".join(re.escape(dotted_to_path(d).split("/", 1)[1]) for d in layout.DISSOLVED)
        + r")/(?:\w+\.py\b)?"
    )
    errors, notes = [], []
    for path in files:
        file = repo / path
        if not file.is_file():
            continue
        try:
            text = file.read_text()
        except UnicodeDecodeError:
            continue
        prose_spans = None
        if path.endswith(".py"):
            offsets = line_offsets(text)
            prose_spans = []
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                is_doc = tok.type == tokenize.STRING and tok.string.lstrip("rbuRBU").startswith(('"""', "'''"))
                if tok.type == tokenize.COMMENT or is_doc:
                    prose_spans.append((offsets[tok.start[0] - 1] + tok.start[1], offsets[tok.end[0] - 1] + tok.end[1]))
        offsets = line_offsets(text)

        def where(pos, path=path, text=text, offsets=offsets):
            lineno = next(i for i in range(len(offsets)) if offsets[i + 1] > pos)
            return f"{path}:{lineno + 1}: {text.splitlines()[lineno].strip()[:150]}"

        def in_prose(pos, spans=prose_spans):
            return spans is None or any(a <= pos < b for a, b in spans)

        for m in name_rx.finditer(text):
            name = m.group(0)
            if name in rewriter.task_names:
                continue
            if name in rewriter.logger_names and text[m.start() - 1 : m.start()] in "\"'":
                continue
            if not any(name == o or name.startswith(o + ".") for o in old_names):
                continue
            if rewriter.mapping.map(name) and name not in layout.DISSOLVED:
                pass  # a name that should have been rewritten: report it wherever it is
            (notes if in_prose(m.start()) else errors).append(where(m.start()))
        for m in path_rx.finditer(text):
            (notes if in_prose(m.start()) else errors).append(where(m.start()))
    return errors, sorted(set(notes))


def rule_counts(baseline: str) -> dict[str, int]:
    counts: collections.Counter[str] = collections.Counter()
    for line in baseline.splitlines():
        if line.strip() and not line.startswith("#"):
            counts[line.split()[0]] += 1
    return dict(counts)


# --- main -------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--venv", help="virtualenv with ruff (default: <repo>/.venv, then this Python's)")
    parser.add_argument("--verify", action="store_true", help="afterwards run ruff, mypy, manage.py check, collection")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    if not (repo / ".git").exists() or not (repo / "booking").is_dir():
        fail(f"{repo}: not the project's git checkout")
    venv = find_venv(repo, args.venv)
    if sys.version_info < (3, 12):  # noqa: UP036 - may be started by an older python3
        # The code uses 3.12 syntax; read it with the project's Python.
        os.execv(str(venv / "bin" / "python"), [str(venv / "bin" / "python"), __file__, *argv, "--venv", str(venv)])  # noqa: S606
    ruff = str(venv / "bin" / "ruff")
    layout = load_layout()

    if git(repo, "status", "--porcelain", "--untracked-files=no").strip():
        fail(f"{repo}: the working tree has changes; run on a clean checkout")
    if (repo / "booking" / "core").exists():
        fail(f"{repo}: booking/core exists already; the move has been made here")

    modules = old_modules(repo)
    check_inventory(repo, layout, modules)
    tasks = task_names(repo, modules[layout.TASKS_MODULE])
    tracked = [p for p in git(repo, "ls-files").split("\n") if p]
    loggers = logger_names(repo, tracked)
    old_dirs = {p.rsplit("/", 1)[0] for p in tracked if p.startswith("booking/")}
    old_dirs |= {"/".join(d.split("/")[:i]) for d in old_dirs for i in range(1, d.count("/") + 2)}

    mapping = Mapping({old: new for old, new in layout.MOVES.items() if old in modules})
    test_places = place_tests(repo, layout, mapping, modules)
    for old, new in test_places.items():
        mapping.add(old, new)

    print("\n1. relative imports in booking/ become absolute (ruff TID252)")
    run(
        [
            ruff,
            "check",
            "--no-cache",
            "--select",
            "TID252",
            "--fix",
            "--unsafe-fixes",
            "--quiet",
            "--config",
            'lint.flake8-tidy-imports.ban-relative-imports = "all"',
            "booking",
        ],
        repo,
        check=False,
    )
    left = run(["git", "grep", "-nE", r"^\s*from \.", "--", "booking/*.py"], repo, check=False, capture=True).stdout
    if left.strip():
        fail("relative imports left after ruff's fix:\n" + left)

    print("\n2. git mv")
    moved_files: dict[str, str] = {}  # new path -> old path
    package_moves = {}
    # Whole packages first: a module moved into the renamed package must not make its directory first.
    order = sorted(mapping.moves.items(), key=lambda kv: (not modules[kv[0]].endswith("/__init__.py"), kv[0]))
    for old, new in order:
        old_path = modules[old]
        if old_path.endswith("/__init__.py"):  # a package moves as a whole
            package_moves[old] = new
            src, dst = dotted_to_path(old), dotted_to_path(new)
            if (repo / dst).exists():
                fail(f"{dst} exists already; cannot move {src} there")
            for p in tracked:
                if p.startswith(src + "/"):
                    moved_files[dst + p[len(src) :]] = p
        else:
            src, dst = old_path, dotted_to_path(new) + ".py"
            moved_files[dst] = src
        (repo / dst).parent.mkdir(parents=True, exist_ok=True)
        git(repo, "mv", src, dst)
    created = []
    for new in sorted({*mapping.moves.values()}):
        parts = new.split(".")
        for i in range(2, len(parts)):
            package = ".".join(parts[:i])
            init = repo / dotted_to_path(package) / "__init__.py"
            if init.exists():
                continue
            if package.startswith("booking.tests."):
                doc = f"Tests of {package.replace('booking.tests.', 'booking.')}."
            else:
                doc = layout.PACKAGE_DOCS.get(package)
                if not doc:
                    fail(f"new package {package} has no docstring in layout.PACKAGE_DOCS")
            init.write_text(f'"""{doc}"""\n')
            created.append(str(init.relative_to(repo)))
    git(repo, "add", *created)
    print(f"  moved {len(moved_files)} files, created {len(created)} packages: {', '.join(created)}")
    for package in layout.DISSOLVED:
        directory = repo / dotted_to_path(package)
        rest = [p for p in git(repo, "ls-files", str(directory.relative_to(repo))).split("\n") if p]
        if rest != [f"{dotted_to_path(package)}/__init__.py"]:
            fail(f"{package} should hold only its __init__.py after the moves, holds: {rest}")
        git(repo, "rm", "-q", rest[0])
        shutil.rmtree(directory, ignore_errors=True)
        print(f"  removed {package} (every module moved)")
    for new_path, old_path in sorted(moved_files.items()):
        if new_path.endswith(".py"):
            adjust_file_paths(repo, new_path, old_path)

    print("\n3. patches the rewrite cannot know")
    apply_patches(repo, PATCHES)

    print("\n4. rewriting imports, dotted names and paths")
    rewriter = Rewriter(mapping, modules, old_dirs, moved_files, tasks, loggers, package_moves)
    files = [p for p in git(repo, "ls-files").split("\n") if p]
    dissolved = set(layout.DISSOLVED)
    changed_files = []
    for path in files:
        file = repo / path
        if not file.is_file():
            continue
        try:
            text = file.read_text()
        except UnicodeDecodeError:
            continue
        if path.endswith(".py"):
            new = rewrite_imports(path, text, mapping, dissolved)
            new = rewriter.rewrite_python(new, path)
        elif path.endswith(CATALOG_SUFFIX):
            lines = text.splitlines(keepends=True)
            new = "".join(rewriter.rewrite_text(ln, path) if ln.startswith("#") else ln for ln in lines)
        else:
            new = rewriter.rewrite_text(text, path)
        if new != text:
            file.write_text(new)
            changed_files.append(path)
    print(f"  {len(changed_files)} files changed")
    for change, count in sorted(rewriter.changes.items()):
        print(f"    {count:4} x {change}")
    for item in rewriter.unresolved:
        print(f"  left as is (ambiguous): {item}")

    print("\n5. ruff: import order, format")
    run([ruff, "check", "--no-cache", "--select", "I", "--fix", "--quiet", "."], repo, check=False)
    run([ruff, "format", "--no-cache", "--quiet", "."], repo)

    if (repo / ARCHITECTURE_CHECK).exists():
        print(f"\n6. {ARCHITECTURE_CHECK}: its baseline rewritten from the moved code")
        baseline = repo / "scripts" / "architecture_baseline.txt"
        before = rule_counts(git(repo, "show", f"HEAD:{baseline.relative_to(repo)}")) if baseline.exists() else {}
        run([str(venv / "bin" / "python"), ARCHITECTURE_CHECK, "--update-baseline"], repo, capture=True)
        after = rule_counts(baseline.read_text()) if baseline.exists() else {}
        for rule in sorted(set(before) | set(after)):
            print(f"  {rule:16} {before.get(rule, 0):4} -> {after.get(rule, 0):4}")

    errors, notes = leftovers(repo, files, rewriter, layout)
    if notes:
        print("\nMentions of old places left in prose (check by hand):")
        for note in notes:
            print("  " + note)
    if errors:
        fail("old module names left in Python code:\n" + "\n".join("  " + e for e in errors))

    git(repo, "add", "-A", ".")
    print("\nDone: the move is staged (git diff --cached -M --stat), not committed.")
    if args.verify:
        verify(repo, venv)
    return 0


def verify(repo: Path, venv: Path) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "theater_site.settings_test"}
    bin_ = venv / "bin"
    for cmd in (
        [str(bin_ / "ruff"), "check", "."],
        [str(bin_ / "ruff"), "format", "--check", "."],
        [str(bin_ / "mypy")],
        [str(bin_ / "python"), "manage.py", "check"],
        [str(bin_ / "pytest"), "--collect-only", "-q", "-p", "no:randomly"],
    ):
        print("\n$ " + " ".join(cmd), flush=True)
        result = subprocess.run(cmd, cwd=repo, env=env, text=True, capture_output=True)
        out = (result.stdout + result.stderr).strip().split("\n")
        print("\n".join(out[-5:]))
        if result.returncode != 0:
            fail(f"verification failed: {' '.join(cmd)}")


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Stop as stop:
        print(f"\nSTOP: {stop}", file=sys.stderr)
        sys.exit(2)
