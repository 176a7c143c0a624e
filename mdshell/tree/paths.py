"""Paths and globs over the tree, with Kafka's shell rules plus ``[...]`` ranges.

A path is split on every ``/`` that no ``\\`` escapes; ``.`` and ``..`` are resolved first
(``..`` at the root stays at the root). Each component may be a glob: ``*``, ``?``,
``{a,b}``, ``[a-z]``/``[!a-z]``, and ``\\`` escapes the next character (``\\/`` is a ``/``
inside a name). A glob that matches nothing stands for itself, as in a POSIX shell: a name
such as ``clientId(br[ack])`` is found as typed, as Kafka's shell (which has no ranges) finds
it. :func:`literal` writes a node's name as a component that matches it alone. Matches are
visited in sorted order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from .node import Node


class GlobError(ValueError):
    """A malformed glob (unterminated group or range)."""


_SPECIAL = frozenset("*?[]{}\\/")  # what ``literal`` escapes


def split_path(path: str) -> list[str]:
    """The names of a displayed path (``join``'s output): split on every ``/``."""
    return [c for c in path.split("/") if c]


def split_pattern(path: str) -> list[str]:
    """The components of a path as typed: split on every ``/`` that no ``\\`` escapes; the
    escapes stay in the components, for :func:`compile_glob` and :func:`unescape`."""
    if "\\" not in path:
        return split_path(path)
    comps: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(path):
        c = path[i]
        if c == "\\" and i + 1 < len(path):
            current.append(path[i:i + 2])
            i += 2
            continue
        if c != "/":
            current.append(c)
        elif current:
            comps.append("".join(current))
            current = []
        i += 1
    if current:
        comps.append("".join(current))
    return comps


def literal(name: str) -> str:
    """``name`` as a path component that matches that node alone: glob characters and ``/``
    escaped with ``\\``, and a name ``.`` or ``..`` escaped so that it means no move."""
    if name in (".", ".."):
        return "\\." * len(name)
    return "".join("\\" + c if c in _SPECIAL else c for c in name)


def pattern_of(names: tuple[str, ...] | list[str]) -> str:
    """A path to the node at ``names`` (exact names) that :func:`absolute` and
    :func:`resolve` read back as exactly those names, whatever characters they hold."""
    return "/" + "/".join(literal(n) for n in names)


def normalize(components: list[str]) -> list[str]:
    out: list[str] = []
    for c in components:
        if c == "..":
            if out:
                out.pop()
        elif c != ".":
            out.append(c)
    return out


def absolute(cwd: str, path: str) -> list[str]:
    """Components (patterns, escapes kept) of ``path`` resolved against the working
    directory ``cwd``, itself a pattern (a session's ``cwd_pattern``: its names literal)."""
    full = path if path.startswith("/") else f"{cwd}/{path}"
    return normalize(split_pattern(full))


def join(components: list[str]) -> str:
    return "/" + "/".join(components)


@lru_cache(maxsize=512)
def compile_glob(component: str) -> re.Pattern[str] | None:
    """A regex for a glob component, or None when it is a literal (after unescaping)."""
    out: list[str] = []
    literal = True
    in_group = False
    i = 0
    n = len(component)
    while i < n:
        c = component[i]
        i += 1
        if c == "\\":
            if i < n:
                out.append(re.escape(component[i]))
                i += 1
            else:
                out.append(re.escape("\\"))
        elif c == "*":
            literal = False
            out.append(".*")
        elif c == "?":
            literal = False
            out.append(".")
        elif c == "{":
            if in_group:
                raise GlobError(f"{component}: nested {{...}} groups are not supported")
            literal = False
            in_group = True
            out.append("(?:")
        elif c == "," and in_group:
            out.append("|")
        elif c == "}" and in_group:
            in_group = False
            out.append(")")
        elif c == "[":
            end = _range_end(component, i)
            if end < 0:
                raise GlobError(f"{component}: unterminated [...] range")
            body = component[i:end]
            i = end + 1
            literal = False
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = body.replace("\\", "\\\\").replace("]", "\\]").replace("[", "\\[")
            out.append(f"[{'^' if negate else ''}{body}]")
        else:
            out.append(re.escape(c))
    if in_group:
        raise GlobError(f"{component}: unterminated {{...}} group")
    if literal:
        return None
    try:
        return re.compile("".join(out) + r"\Z", re.DOTALL)
    except re.error as e:
        raise GlobError(f"{component}: {e}") from None


def _range_end(text: str, start: int) -> int:
    """Index of the ``]`` closing a range opened just before ``start`` (-1 if none)."""
    i = start
    if i < len(text) and text[i] in "!^":
        i += 1
    if i < len(text) and text[i] == "]":
        i += 1  # a leading ] is literal
    while i < len(text):
        if text[i] == "]":
            return i
        i += 1
    return -1


def unescape(component: str) -> str:
    return re.sub(r"\\(.)", r"\1", component)


def has_glob(path: str) -> bool:
    return any(compile_glob(c) is not None for c in split_path(path))


@dataclass(frozen=True, slots=True)
class Match:
    """A path a glob matched, and its node."""

    components: tuple[str, ...]
    node: Node

    @property
    def path(self) -> str:
        return join(list(self.components))

    @property
    def name(self) -> str:
        return self.components[-1] if self.components else "/"


def resolve(root: Node, cwd: str, pattern: str) -> Iterator[Match]:
    """Every node matching ``pattern`` (relative to ``cwd``), in sorted order."""
    yield from _walk(root, absolute(cwd, pattern), 0, ())


def _walk(node: Node, comps: list[str], i: int, path: tuple[str, ...]) -> Iterator[Match]:
    if i == len(comps):
        yield Match(path, node)
        return
    if not node.is_dir:
        return
    regex = compile_glob(comps[i])
    if regex is None:
        name = unescape(comps[i])
        child = node.child(name)
        if child is not None:
            yield from _walk(child, comps, i + 1, (*path, name))
        return
    matched = False
    for name in sorted(node.names()):
        if regex.match(name):
            child = node.child(name)
            if child is not None:
                matched = True
                yield from _walk(child, comps, i + 1, (*path, name))
    if not matched:  # a glob that matches nothing stands for itself (a POSIX shell's rule)
        name = unescape(comps[i])
        child = node.child(name)
        if child is not None:
            yield from _walk(child, comps, i + 1, (*path, name))


def lookup(root: Node, components: list[str]) -> Node | None:
    """The node at exact (already normalized, unescaped) components, or None."""
    node: Node | None = root
    for c in components:
        if node is None or not node.is_dir:
            return None
        node = node.child(c)
    return node


Matcher = Callable[[str], bool]


def matchers(pattern: list[str]) -> list[Matcher]:
    """One test per component of a path pattern (globs allowed), compiled once; a glob also
    matches the name it spells as typed (see the module's rule)."""
    out: list[Matcher] = []
    for comp in pattern:
        regex = compile_glob(comp)
        out.append(unescape(comp).__eq__ if regex is None else _glob_test(regex, unescape(comp)))
    return out


def _glob_test(regex: re.Pattern[str], itself: str) -> Matcher:
    def test(name: str) -> bool:
        return regex.match(name) is not None or name == itself
    return test


def related(pattern: list[Matcher], path: list[str]) -> bool:
    """True when ``path`` is the node ``pattern`` names, below it or above it (components
    compared pairwise)."""
    return all(test(c) for test, c in zip(pattern, path, strict=False))
