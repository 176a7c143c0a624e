"""Kafka's navigation commands, done better: ls, cd, pwd, cat, tree, find."""

from __future__ import annotations

from collections.abc import Iterator

from ..tree.node import Node
from ..tree.paths import GlobError, Match, matchers, resolve
from ..tree.printer import tree_data, tree_lines
from . import results as r
from .base import ArgParser, Result, UsageError, command
from .shell import Shell

__all__ = ["cat", "cd", "find", "ls", "pwd", "tree", "tree_data", "tree_lines"]


def _matches(shell: Shell, cmd: str, target: str, errors: list[str]) -> list[Match]:
    try:
        found = list(resolve(shell.session.root, shell.session.cwd_pattern, target))
    except GlobError as e:
        errors.append(f"{cmd}: {e}")
        return []
    if not found:
        errors.append(f"{cmd}: {target}: No such file or directory.")
    return found


def _targets(args: list[str]) -> list[str]:
    return [a for a in args if a] or ["."]


@command("ls", "List metadata nodes.", "ls [PATH...]",
         details="Directories show their children, leaves their own name. Globs (*, ?, "
                 "{a,b}, [a-z]) match per path component; one that matches nothing is the "
                 "name as typed. A \\ makes the next character part of a name (\\* a star, "
                 "\\/ a slash inside a client id or user).")
def ls(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("ls", "ls [PATH...]")
    p.add_argument("paths", nargs="*")
    ns = p.parse_args(args)
    errors: list[str] = []
    files: list[r.NodeAt] = []
    dirs: list[r.DirListing] = []
    for target in _targets(ns.paths):
        for mt in _matches(shell, "ls", target, errors):
            if mt.node.is_dir:
                dirs.append(r.DirListing(mt.path, mt.name, sorted(mt.node.names())))
            else:
                files.append(r.NodeAt(mt.path, mt.name, mt.node))
    return Result(errors=errors, value=r.Listing(files, dirs))


@command("pwd", "Print the current working directory.", "pwd", args=("",))
def pwd(shell: Shell, args: list[str]) -> Result:
    ArgParser("pwd", "pwd").parse_args(args)
    return Result(value=r.WorkingDir(shell.session.cwd))


@command("cd", "Change the current working directory (no argument: /).", "cd [PATH]",
         shell_only=True, args=("dir", ""))
def cd(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("cd", "cd [PATH]")
    p.add_argument("path", nargs="?", default="/")
    ns = p.parse_args(args)
    errors: list[str] = []
    found = _matches(shell, "cd", ns.path, errors)
    if errors:
        return Result(errors=errors)
    if len(found) > 1:
        return Result(errors=[f"cd: {ns.path}: matches {len(found)} nodes; be more specific"])
    if not found[0].node.is_dir:
        return Result(errors=[f"cd: {ns.path}: Not a directory."])
    shell.session.cwd_parts = found[0].components
    return Result(value=r.WorkingDir(shell.session.cwd, show=False))


@command("cat", "Show the contents of metadata leaves.", "cat PATH...",
         details="A directory is an error (use ls or tree).")
def cat(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("cat", "cat PATH...")
    p.add_argument("paths", nargs="+")
    ns = p.parse_args(args)
    errors: list[str] = []
    leaves: list[r.NodeAt] = []
    for target in ns.paths:
        for mt in _matches(shell, "cat", target, errors):
            if mt.node.is_dir:
                errors.append(f"cat: {mt.path}: Is a directory (use ls or tree)")
            else:
                leaves.append(r.NodeAt(mt.path, mt.name, mt.node))
    return Result(errors=errors, value=r.Leaves(leaves, shell.opts))


@command("tree", "Show metadata nodes and everything below them.", "tree [PATH...]")
def tree(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("tree", "tree [PATH...]")
    p.add_argument("paths", nargs="*")
    ns = p.parse_args(args)
    errors: list[str] = []
    found = [r.NodeAt(mt.path, mt.name, mt.node)
             for t in _targets(ns.paths) for mt in _matches(shell, "tree", t, errors)]
    return Result(errors=errors, value=r.Tree(found, shell.opts))


@command("find", "Search for nodes below the given paths.",
         "find [PATH...] [-name GLOB] [-type d|f] [-maxdepth N]",
         details="-name matches the node's own name with a glob, as paths read them; -type d keeps "
                 "directories, -type f leaves; -maxdepth limits the depth below each path.",
         options=("-name", "-type", "-maxdepth"),
         values={"-name": "", "-type": "=d|f", "-maxdepth": ""})
def find(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("find", "find [PATH...] [-name GLOB] [-type d|f] [-maxdepth N]")
    p.add_argument("paths", nargs="*")
    p.add_argument("-name")
    p.add_argument("-type", choices=["d", "f"])
    p.add_argument("-maxdepth", type=_depth)
    ns = p.parse_args(args)
    try:
        named = None if ns.name is None else matchers([ns.name])[0]
    except GlobError as e:
        raise UsageError(f"find: -name {e}") from None
    errors: list[str] = []
    starts: list[tuple[str, Match]] = []
    for target in _targets(ns.paths):
        for mt in _matches(shell, "find", target, errors):
            shown = target if _is_plain(target) else mt.path
            starts.append((shown, mt))

    def keep(name: str, node: Node) -> bool:
        if ns.type == "d" and not node.is_dir:
            return False
        if ns.type == "f" and node.is_dir:
            return False
        return named is None or named(name)

    def walk(path: str, name: str, node: Node, depth: int) -> Iterator[str]:
        if keep(name, node):
            yield path
        if node.is_dir and (ns.maxdepth is None or depth < ns.maxdepth):
            for child_name in sorted(node.names()):
                child = node.child(child_name)
                if child is not None:
                    sub = path + child_name if path.endswith("/") else f"{path}/{child_name}"
                    yield from walk(sub, child_name, child, depth + 1)

    def lines() -> Iterator[str]:
        for shown, mt in starts:
            yield from walk(shown, mt.name, mt.node, 0)
    return Result(errors=errors, value=r.Paths(lines))


def _depth(text: str) -> int:
    n = int(text)
    if n < 0:
        raise ValueError(text)
    return n


_depth.__name__ = "depth (0 or more)"  # argparse names the type in its complaint


def _is_plain(target: str) -> bool:
    """A plain path prints as typed, like Kafka's find (relative stays relative); a glob
    prints the paths it matched (Kafka repeats the glob text, which says nothing)."""
    return "*" not in target and "?" not in target and "{" not in target and "[" not in target

