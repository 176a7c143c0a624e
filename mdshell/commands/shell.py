"""What commands run against: a session (source, images, working directory) and the render
options. Front-end state (output format, terminal width) stays in the front ends: they give
it to the renderer (``render.emit``)."""

from __future__ import annotations

import shlex

from ..problems import SourceError
from ..session import Loaded, Session
from ..source import Source
from ..tree.node import RenderOptions
from ..tree.paths import GlobError
from .base import REGISTRY, CommandError, Result, UsageError, closest
from .results import Manual


class Shell:
    """Runs command lines against a :class:`Session`: the render options and the dispatcher.
    Commands read the session's state (source, images, working directory) from ``session``.

    ``Shell(session)`` or, for short, ``Shell(source, loaded)`` (a session over them).
    """

    def __init__(self, session: Session | Source, loaded: Loaded | None = None,
                 opts: RenderOptions | None = None, interactive: bool = False) -> None:
        self.session = session if isinstance(session, Session) else Session(session, loaded)
        self.opts = opts or RenderOptions()
        self.interactive = interactive
        # Warnings the front end printed when it opened the source: a command that reads the
        # same file finds the same problem, and renderers do not say it again.
        self.said: set[str] = set()

    def run_line(self, line: str) -> Result:
        try:
            words = shlex.split(line, comments=False, posix=True)
        except ValueError as e:
            return Result(errors=[f"cannot parse the line: {e}"], exit_code=2)
        if words and _unquoted(line, "|"):
            return Result(errors=["pipes (|) are not supported inside mdshell; quote the | "
                                  "to use it literally, or run the command from your shell: "
                                  "mdshell -d DIR CMD | ..."],
                          exit_code=2)
        return self.run(words)

    def run(self, words: list[str]) -> Result:
        """Run one command; its result is data (front ends render it: see ``render``)."""
        if not words:
            return Result()
        name, args = words[0], words[1:]
        self.session.poll_source()  # live follow: commands see the newest committed image
        cmd = REGISTRY.get(name)
        if cmd is None:
            hint = closest(name)
            msg = f"{name}: unknown command"
            msg += f"; did you mean '{hint}'?" if hint else "; type 'help' for the list"
            return Result(errors=[msg], exit_code=2)
        if "--help" in args:
            return Result(value=Manual(cmd))
        if cmd.shell_only and not self.interactive:
            return Result(errors=[f"{name}: only available in the interactive shell "
                                  "(run mdshell without a command, or with --repl)"],
                          exit_code=2)
        try:
            return cmd.run(self, args)
        except UsageError as e:
            msg = str(e)  # one line that says where: the command, unless it says so
            return Result(errors=[msg if msg.startswith(f"{name}:") else f"{name}: {msg}"],
                          exit_code=2)
        except (CommandError, SourceError, GlobError) as e:
            # SourceError: a file went away or cannot be read now (a live directory).
            return Result(errors=[f"{name}: {e}"], exit_code=1)


def _unquoted(line: str, chars: str) -> bool:
    """True when one of ``chars`` appears outside quotes and unescaped (shlex rules)."""
    quote = ""
    escaped = False
    for c in line:
        if escaped:
            escaped = False
        elif quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"':
                escaped = True
        elif c == "\\":
            escaped = True
        elif c in "'\"":
            quote = c
        elif c in chars:
            return True
    return False

