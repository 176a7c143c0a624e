"""The command framework shared by the one-shot mode, the REPL and the TUI.

A command takes the shell state and its arguments and returns a :class:`Result`: text lines
(rendered lazily, so a huge ``tree`` streams) and JSON data, plus error lines. Front ends
decide where each goes.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from .shell import Shell


class UsageError(Exception):
    """Wrong arguments: the message is the one-line usage complaint (exit 2)."""


class CommandError(Exception):
    """The command cannot run (e.g. an offset outside the log): one line, exit 1."""


@dataclass
class Result:
    lines: Iterable[str] = ()
    data: Any = None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # printed, but the command succeeded
    # Set by commands whose text form must be computed before errors are known.
    exit_code: int | None = None

    def json(self) -> Any:
        """The JSON data (computed now when the command made it lazy)."""
        return self.data() if callable(self.data) else self.data

    @property
    def code(self) -> int:
        if self.exit_code is not None:
            return self.exit_code
        return 1 if self.errors else 0


Runner = Callable[["Shell", list[str]], Result]


@dataclass
class Command:
    name: str
    summary: str
    usage: str
    run: Runner
    details: str = ""
    shell_only: bool = False  # needs an interactive session (cd, history, exit)
    completes_paths: bool = True
    options: tuple[str, ...] = ()  # for completion

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
    match = difflib.get_close_matches(name, sorted(REGISTRY), n=1, cutoff=0.5)
    if match:
        return match[0]
    prefixed = [c for c in sorted(REGISTRY) if c.startswith(name)]
    return prefixed[0] if prefixed else None


class ArgParser(argparse.ArgumentParser):
    """argparse that raises :class:`UsageError` with the usage line instead of exiting."""

    def __init__(self, name: str, usage: str) -> None:
        super().__init__(prog=name, usage=usage, add_help=False, allow_abbrev=False)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (usage: {self.usage})")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(message or f"usage: {self.usage}")
