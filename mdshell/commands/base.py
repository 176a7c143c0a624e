"""The command framework shared by the one-shot mode, the REPL and the TUI.

A command takes the shell state and its arguments and returns a :class:`Result`: a typed
value (:mod:`.results`) plus error and warning lines. :mod:`.render` turns values into text or
JSON; front ends decide where each goes.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from ..problems import CommandError

__all__ = ["REGISTRY", "ArgParser", "Command", "CommandError", "Result", "UsageError",
           "closest", "command"]

if TYPE_CHECKING:
    from .shell import Shell


class UsageError(Exception):
    """Wrong arguments: the message is the one-line usage complaint (exit 2)."""


class Result:
    """A command's outcome: its typed value (:mod:`.results`), and the lines for stderr.

    Commands that make their own lines and JSON (tables, ``sql``) give a
    :class:`~.results.Text`. ``lines`` and ``json()`` render the value through :mod:`.render`
    (``lines`` without a terminal width: one ``ls`` name a line). ``errors`` and ``warnings``
    may grow while a lazy value is rendered (a file that cannot be read half-way through
    ``records``): front ends read them after the output.
    """

    def __init__(self, *, value: Any = None, errors: list[str] | None = None,
                 warnings: list[str] | None = None, exit_code: int | None = None) -> None:
        self.value = value
        self.errors: list[str] = [] if errors is None else errors
        self.warnings: list[str] = [] if warnings is None else warnings  # printed; succeeded
        # Set by commands whose exit code does not follow from the errors (health).
        self.exit_code = exit_code

    @property
    def lines(self) -> Iterator[str]:
        """The text form (rendered anew at each access)."""
        from .textform import text_lines

        return text_lines(self.value)

    def json(self) -> Any:
        """The JSON form (computed now when the command made it lazy)."""
        from .jsonform import json_value

        return json_value(self.value)

    @property
    def code(self) -> int:
        if self.exit_code is not None:
            return self.exit_code
        return 1 if self.errors else 0


Runner = Callable[["Shell", list[str]], Result]


@dataclass
class Command:
    """A registered command: what help and completion show, and its runner."""

    name: str
    summary: str
    usage: str
    run: Runner
    details: str = ""
    shell_only: bool = False  # needs an interactive session (cd, history, exit)
    completes_paths: bool = True  # the default of ``args``: ("path",) or ("",)
    options: tuple[str, ...] = ()  # for completion
    # What completion offers, so that it offers only what the command accepts: one kind per
    # positional word (the last repeats; "" ends them) and per option that takes a value.
    # Kinds: "path", "dir", "topic" (a topic name), "type" (record type names), "command",
    # "=a|b" (these words), "" (nothing to offer).
    args: tuple[str, ...] | None = None
    values: dict[str, str] = field(default_factory=dict)

    def arg_kind(self, position: int) -> str:
        """The kind of the positional word at ``position`` (0: the first after the name)."""
        kinds = self.args if self.args is not None else (
            ("path",) if self.completes_paths else ("",))
        return kinds[min(position, len(kinds) - 1)] if kinds else ""

    def help_text(self) -> str:
        text = f"{self.name}: {self.summary}\n\nusage: {self.usage}\n"
        if self.details:
            text += "\n" + self.details.rstrip() + "\n"
        return text


REGISTRY: dict[str, Command] = {}


def command(name: str, summary: str, usage: str, **kw: Any) -> Callable[[Runner], Runner]:
    """Register a command implementation."""
    def wrap(fn: Runner) -> Runner:
        REGISTRY[name] = Command(name, summary, usage, fn, **kw)
        return fn
    return wrap


def closest(name: str) -> str | None:
    import difflib  # only for a mistyped command

    match = difflib.get_close_matches(name, sorted(REGISTRY), n=1, cutoff=0.5)
    if match:
        return match[0]
    prefixed = [c for c in sorted(REGISTRY) if c.startswith(name)]
    return prefixed[0] if prefixed else None


class _NoHelpLayout(argparse.HelpFormatter):
    """A command's parser never prints help (its errors give the usage line), so no terminal
    width is read: argparse's default would import shutil for it (with zlib, bz2 and lzma: 2
    ms of every start), once per ``add_argument``."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None, **kw: Any) -> None:
        super().__init__(prog, indent_increment, max_help_position, width or 80, **kw)


class ArgParser(argparse.ArgumentParser):
    """argparse that raises :class:`UsageError` with the usage line instead of exiting."""

    def __init__(self, name: str, usage: str) -> None:
        super().__init__(prog=name, usage=usage, add_help=False, allow_abbrev=False,
                         formatter_class=_NoHelpLayout)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (usage: {self.usage})")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(message or f"usage: {self.usage}")
