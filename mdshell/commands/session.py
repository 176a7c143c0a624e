"""Session commands: help, man, history, exit.

``help`` and ``man`` read the registry when they run, so commands registered by other modules
appear without any change here. Nothing in this module imports prompt_toolkit: ``help`` and
``man`` also serve the one-shot path.
"""

from __future__ import annotations

from . import history as hist
from . import results as r
from .base import (
    REGISTRY,
    ArgParser,
    Command,
    CommandError,
    Result,
    UsageError,
    closest,
    command,
)
from .shell import Shell


class ExitShell(Exception):
    """Raised by ``exit``; front ends catch it and end the session normally."""


@command("help", "List the commands, or show the help of one.", "help [CMD]",
         args=("command", ""))
def help_(shell: Shell, args: list[str]) -> Result:
    return _help(args, shell.interactive)


def _help(args: list[str], interactive: bool) -> Result:
    p = ArgParser("help", "help [CMD]")
    p.add_argument("cmd", metavar="CMD", nargs="?")
    ns = p.parse_args(args)
    if ns.cmd is not None:
        if ns.cmd not in REGISTRY:
            hint = closest(ns.cmd)
            advice = f"did you mean 'help {hint}'?" if hint else "'help' lists them"
            raise UsageError(f"help: unrecognized arguments: {ns.cmd} (not a command; "
                             f"{advice})")
        return _man([ns.cmd])
    return Result(value=r.Help(listed(), interactive))


def listed() -> list[Command]:
    """Every command, by name: what ``help`` and ``mdshell --help`` list."""
    return [REGISTRY[name] for name in sorted(REGISTRY)]


def answer_without_source(words: list[str], interactive: bool = False) -> Result | None:
    """``help``, ``help CMD``, ``man CMD`` and ``CMD --help`` answered without a metadata
    source (they read only the registry); None for any other command line."""
    if not words:
        return None
    name, args = words[0], words[1:]
    cmd = REGISTRY.get(name)
    if cmd is None:
        return None
    if "--help" in args:
        return Result(value=r.Manual(cmd))
    if name not in ("help", "man"):
        return None
    try:
        return _help(args, interactive) if name == "help" else _man(args)
    except UsageError as e:
        return Result(errors=[str(e)], exit_code=2)


@command("man", "Show the help text of a command.", "man CMD",
         args=("command", ""))
def man(shell: Shell, args: list[str]) -> Result:
    return _man(args)


def _man(args: list[str]) -> Result:
    p = ArgParser("man", "man CMD")
    p.add_argument("cmd", metavar="CMD")
    ns = p.parse_args(args)
    cmd = REGISTRY.get(ns.cmd)
    if cmd is None:
        hint = closest(ns.cmd)
        advice = f"did you mean '{hint}'?" if hint else "type 'help' for the list of commands"
        raise UsageError(f"man: {ns.cmd}: unknown command; {advice}")
    return Result(value=r.Manual(cmd))


@command("history", "Show the command history (the last N entries).", "history [N]",
         details="Entries are numbered from the first one saved; the history is kept across "
                 "sessions in $XDG_DATA_HOME/mdshell/history (override: $MDSHELL_HISTORY), "
                 "a file only you can read; a line typed with a space first is not kept (for "
                 "a line that holds a secret). Up/Down recall entries starting with the text "
                 "typed; Ctrl-R searches.",
         shell_only=True, completes_paths=False)
def history(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("history", "history [N]")
    p.add_argument("n", metavar="N", nargs="?", type=int)
    ns = p.parse_args(args)
    entries = hist.entries_of(shell)
    if entries is None:
        raise CommandError("no command history in this session")
    first = 0 if ns.n is None else max(len(entries) - max(ns.n, 0), 0)
    return Result(value=r.History([r.HistoryEntry(i + 1, entries[i])
                                   for i in range(first, len(entries))]))


@command("exit", "Leave the shell.", "exit", shell_only=True, completes_paths=False)
def exit_(shell: Shell, args: list[str]) -> Result:
    ArgParser("exit", "exit").parse_args(args)
    raise ExitShell
