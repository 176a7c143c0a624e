"""The house keeps its shape: imports follow the layers of ``docs/design.md``, and no two
modules import each other (read from the source with ``ast``, nothing is imported).

Layers, lowest first: wire -> source and image (siblings) -> tree -> session -> spark ->
commands -> front ends (cli, repl, tui); docs/design.md says why each allowed edge exists.
Every import counts for the layers, also inside functions and under ``TYPE_CHECKING``. Cycles
are looked for among the imports that run when a module is imported (module level), and
separately among all the imports that run (function level too); imports under
``TYPE_CHECKING`` never run and are left out of the cycle checks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mdshell"

FRONT = ("cli", "repl", "tui", "__main__")
BELOW_ALL = {"source", "image", "tree", "session", "commands", "front", "synth", "spark"}
# layer -> (top-level names under mdshell, layers it must not import). design.md's table,
# made exact: the tree may read the source's facts (/local, /log and /quorum describe the
# files), the session ties source, image and tree together, and Spark sits beside the
# commands (it reads sources and images, and renders with the tree's redaction), so it is
# below them: `sql` imports it, never the other way round.
LAYERS: dict[str, tuple[tuple[str, ...], set[str]]] = {
    "shared": (("problems", "files"), BELOW_ALL | {"wire"}),
    "wire": (("wire",), BELOW_ALL),
    "source": (("source",), BELOW_ALL - {"source"}),
    "image": (("image",), BELOW_ALL - {"image"}),
    "tree": (("tree",), {"session", "commands", "front", "synth", "spark"}),
    "session": (("session",), {"commands", "front", "synth", "spark"}),
    "commands": (("commands",), {"front", "synth"}),
    "spark": (("spark",), {"commands", "front", "synth"}),
    "synth": (("synth",), BELOW_ALL - {"synth"}),
    "front": (FRONT, {"synth"}),
}
# Who may import the optional front ends and Spark (besides the package itself): the TUI is
# started by the command line, the REPL by the command line (and the TUI's command bar
# completes like it), Spark by `sql`/`tables` and the --spark-master option.
IMPORTERS = {
    "mdshell.tui": {"mdshell.cli"},
    "mdshell.repl": {"mdshell.cli", "mdshell.tui"},
    "mdshell.spark": {"mdshell.cli", "mdshell.commands.sparkcmds"},
}
# Third-party front-end libraries, and the only packages that may import them.
HEAVY = {"textual": "mdshell.tui", "rich": "mdshell.tui", "prompt_toolkit": "mdshell.repl",
         "pyspark": "mdshell.spark", "pyarrow": "mdshell.spark", "pandas": "mdshell.spark",
         "grpc": "mdshell.spark"}

def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_pkg: bool,
             known: set[str]) -> list[str]:
    """The package modules an import statement loads."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "mdshell"]
    if node.level:
        base = module.split(".") if is_pkg else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        name = ".".join([*base, node.module] if node.module else base)
    else:
        name = node.module or ""
    if name.split(".")[0] != "mdshell":
        return []
    subs = [f"{name}.{a.name}" for a in node.names if f"{name}.{a.name}" in known]
    return subs if len(subs) == len(node.names) else [name, *subs]


EAGER, LAZY, TYPING = "eager", "lazy", "typing"  # at import, in a function, types only


def imports(module: str, path: Path, known: set[str]) -> list[tuple[str, str]]:
    """(imported module, EAGER/LAZY/TYPING) for every import statement of a module."""
    is_pkg = path.name == "__init__.py"
    out: list[tuple[str, str]] = []

    def visit(node: ast.AST, when: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                out.extend((t, when) for t in _targets(child, module, is_pkg, known))
            elif isinstance(child, ast.If) and _is_type_checking(child):
                visit(child, TYPING)
            elif (isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                  and when == EAGER):
                visit(child, LAZY)
            else:
                visit(child, when)

    visit(ast.parse(path.read_text(), str(path)), EAGER)
    return out


def layer_of(module: str) -> str | None:
    rest = module.split(".")[1:]
    if not rest:
        return "shared"  # mdshell/__init__.py: the version
    for layer, (prefixes, _) in LAYERS.items():
        if rest[0] in prefixes:
            return layer
    return None


def graph(*kinds: str) -> dict[str, set[str]]:
    """Module -> the package modules it imports in the ways ``kinds`` name."""
    mods = modules()
    known = set(mods)
    return {m: {t for t, when in imports(m, p, known) if t != m and when in kinds}
            for m, p in mods.items()}


def test_every_module_has_a_layer() -> None:
    loose = [m for m in modules() if layer_of(m) is None]
    assert not loose, f"modules outside every layer (move them into one): {loose}"


def test_the_top_of_the_package_holds_only_front_ends_and_shared_modules() -> None:
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top <= {"__init__", "__main__", "cli", "problems", "files"}, top


def test_imports_follow_the_layers() -> None:
    bad = []
    for module, targets in graph(EAGER, LAZY, TYPING).items():
        layer = layer_of(module)
        assert layer is not None
        forbidden = LAYERS[layer][1]
        for target in sorted(targets):
            if layer_of(target) in forbidden:
                bad.append(f"{module} ({layer}) imports {target} ({layer_of(target)})")
    assert not bad, "\n".join(bad)


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_front_ends_and_spark_are_imported_only_where_allowed() -> None:
    bad = []
    for module, targets in graph(EAGER, LAZY, TYPING).items():
        for package, allowed in IMPORTERS.items():
            if _inside(module, package) or any(_inside(module, a) for a in allowed):
                continue
            bad += [f"{module} imports {t}" for t in sorted(targets) if _inside(t, package)]
    assert not bad, "\n".join(bad)


def third_party(path: Path) -> set[str]:
    """The top-level names of every absolute import in a file (functions included)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
    return out


def test_textual_prompt_toolkit_and_pyspark_stay_in_their_front_end() -> None:
    bad = []
    for module, path in modules().items():
        for name in sorted(third_party(path) & HEAVY.keys()):
            if not _inside(module, HEAVY[name]):
                bad.append(f"{module} imports {name} (only {HEAVY[name]} may)")
    assert not bad, "\n".join(bad)


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for t in sorted(edges.get(m, ())):
            if state.get(t) == 1:
                return [*stack[stack.index(t):], t]
            if t not in state:
                found = visit(t)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def _without_package_inits(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """A package's ``__init__`` importing its own modules (to register them, or re-export)
    is not a cycle with the modules below it that import a sibling: drop those edges."""
    return {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in edges.items()}


@pytest.mark.parametrize("kinds", [(EAGER,), (EAGER, LAZY)], ids=["at-import", "all-run"])
def test_no_import_cycles(kinds: tuple[str, ...]) -> None:
    cycle = find_cycle(_without_package_inits(graph(*kinds)))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_tui_reaches_the_data_through_the_session() -> None:
    """Nothing under ``mdshell/tui`` imports ``mdshell.source`` (types included): sources
    are opened, read and described through the session, as every other front end does."""
    bad = [f"{module} imports {target}" for module, targets in
           graph(EAGER, LAZY, TYPING).items() if _inside(module, "mdshell.tui")
           for target in sorted(targets) if _inside(target, "mdshell.source")]
    assert not bad, "\n".join(bad)


def test_no_import_circle_inside_the_tui() -> None:
    """No two TUI modules import each other, by any way (types included): the app composes
    the screens, the screens their widgets, and what goes up goes by messages."""
    inside = {m: {t for t in ts if _inside(t, "mdshell.tui")}
              for m, ts in graph(EAGER, LAZY, TYPING).items() if _inside(m, "mdshell.tui")}
    cycle = find_cycle(_without_package_inits(inside))
    assert cycle is None, "import circle in the TUI: " + " -> ".join(cycle or [])


def test_the_tui_sets_nothing_on_the_app_and_keeps_no_state_by_app() -> None:
    """No module-level dict keyed by ``id(app)`` and no ``# type: ignore[attr-defined]``
    (what marked attributes set on, or read from, the app behind its back) under tui/."""
    bad = []
    for module, path in modules().items():
        if not _inside(module, "mdshell.tui"):
            continue
        text = path.read_text(encoding="utf-8")
        bad += [f"{module}: {what}" for what in ("id(app)", "type: ignore[attr-defined]")
                if what in text]
    assert not bad, "\n".join(bad)


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_layer_check_sees_function_level_imports(tmp_path: Path) -> None:
    src = tmp_path / "mod.py"
    src.write_text("import os\n\ndef f():\n    from ..cli import main\n    return main\n")
    found = imports("mdshell.commands.mod", src, {"mdshell.cli"})
    assert found == [("mdshell.cli", LAZY)]


def _patches_a_source(tree: ast.AST) -> list[int]:
    """Lines that set or delete an attribute of a source (``source.x = ...``,
    ``self.source.x = ...``, ``del source.x``): a source says what it can do, nobody
    rewires it from outside."""
    found = []
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign | ast.Delete)
                   else [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign)
                   else [])
        for t in targets:
            if isinstance(t, ast.Attribute):
                owner = t.value
                name = (owner.id if isinstance(owner, ast.Name)
                        else owner.attr if isinstance(owner, ast.Attribute) else "")
                if name in ("source", "_source"):
                    found.append(t.lineno)
    return found


def test_no_module_outside_source_patches_a_source() -> None:
    bad = {name: lines for name, path in modules().items()
           if not name.startswith("mdshell.source")
           for lines in [_patches_a_source(ast.parse(path.read_text(encoding="utf-8")))]
           if lines}
    assert bad == {}


def test_the_patch_check_sees_a_patch() -> None:
    code = ("source.log_stream = f\n"
            "self.source.snapshot_stream = g\n"
            "del source.log_stream\n"
            "self._source = s\n")
    assert _patches_a_source(ast.parse(code)) == [1, 2, 3]


def source_classes() -> set[str]:
    """The names of the classes under ``mdshell/source`` that are sources (``Source`` and
    every class deriving from one, read with ``ast``)."""
    bases: dict[str, set[str]] = {}
    for path in (PACKAGE / "source").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = {b.id if isinstance(b, ast.Name) else
                                    b.attr if isinstance(b, ast.Attribute) else ""
                                    for b in node.bases}
    found = {"Source"}
    while more := {c for c, bs in bases.items() if c not in found and bs & found}:
        found |= more
    return found


def _names(node: ast.expr) -> list[str]:
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    return [n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute)
            else "" for n in items]


def _is_source(node: ast.expr) -> bool:
    """``source``, ``self._source``, ``shell.source``...: what a caller holds a source by."""
    name = (node.id if isinstance(node, ast.Name)
            else node.attr if isinstance(node, ast.Attribute) else "")
    return name in ("source", "_source")


def _probes_a_source(tree: ast.AST, concrete: set[str]) -> list[int]:
    """Lines that ask what a source is instead of what it can do: ``isinstance`` or
    ``issubclass`` against a concrete source class, ``hasattr`` or ``getattr`` with a
    default on a source (``Source`` declares every capability, with a default)."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        fn, args = node.func.id, node.args
        by_class = (fn in ("isinstance", "issubclass") and len(args) == 2
                    and bool(set(_names(args[1])) & concrete))
        by_name = ((fn == "hasattr" and len(args) == 2) or (fn == "getattr" and len(args) == 3)
                   ) and _is_source(args[0])
        if by_class or by_name:
            found.append(node.lineno)
    return found


def test_no_module_outside_source_asks_what_class_a_source_is() -> None:
    concrete = source_classes() - {"Source"}
    bad = {name: lines for name, path in modules().items()
           if not name.startswith("mdshell.source")
           for lines in [_probes_a_source(ast.parse(path.read_text(encoding="utf-8")),
                                          concrete)]
           if lines}
    assert bad == {}


def test_the_probe_check_sees_a_probe() -> None:
    concrete = source_classes() - {"Source"}
    assert {"DirectorySource", "FileSource", "LiveSource"} <= concrete
    code = ("isinstance(source, LiveSource)\n"
            "isinstance(x, (int, live.LiveSource))\n"
            "getattr(self.source, 'poll', None)\n"
            "hasattr(self._source, 'follow')\n"
            "isinstance(session, Session)\n"
            "source.follows\n")
    assert _probes_a_source(ast.parse(code), concrete) == [1, 2, 3, 4]
