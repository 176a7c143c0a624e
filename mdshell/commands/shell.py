"""The state every front end shares: the source, the loaded image, the working directory."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from ..loader import Loaded, Source
from ..problems import SourceError
from ..tree.node import Node, RenderOptions
from ..tree.paths import GlobError, join, lookup, split_path
from ..tree.root import RootInfo, root_node
from .base import REGISTRY, CommandError, Result, UsageError, closest


@dataclass
class Shell:
    source: Source
    loaded: Loaded
    opts: RenderOptions = field(default_factory=RenderOptions)
    output: str = "text"  # "text" or "json"
    width: int | None = None  # terminal width for ls columns; None: one entry per line
    interactive: bool = False
    cwd: str = "/"

    def __post_init__(self) -> None:
        self.latest: Loaded = self.loaded  # the image at the end of the log
        self._notes_key: object = None
        self._notes_shown = 0
        self.root: Node = self._build_root()

    def _build_root(self) -> Node:
        loaded, source = self.loaded, self.source
        info = RootInfo(source.describe(), source.kind, [f.path for f in loaded.files],
                        [p.message for p in loaded.problems], loaded.upto)
        info.extra["quorum"] = lambda: _quorum(source, loaded)
        info.extra["log"] = lambda: _log(source, loaded)
        if source.kind == "live":
            from .live import live_extra

            live_extra(source, info)
        return root_node(loaded.image, info)

    def refresh(self) -> None:
        """Live follow: show newly committed records (not while looking at an older image)."""
        refresh = getattr(self.source, "refresh", None)
        if refresh is None or self.loaded is not self.latest or not refresh():
            return
        self.latest = self.source.load()
        self.set_loaded(self.latest)

    def new_notes(self) -> list[str]:
        """Problems found since the last call while reading the image (records decoded on
        first use), so that front ends report each once."""
        notes = self.loaded.image.notes
        if self._notes_key is not notes:
            self._notes_key, self._notes_shown = notes, 0
        fresh = notes.messages[self._notes_shown:]
        self._notes_shown = len(notes.messages)
        return fresh

    def set_loaded(self, loaded: Loaded) -> str | None:
        """Show another image; returns the new working directory when the old one does not
        exist in it (the nearest ancestor that does)."""
        self.loaded = loaded
        self.root = self._build_root()
        comps = split_path(self.cwd)
        while comps and lookup(self.root, comps) is None:
            comps.pop()
        if join(comps) != self.cwd:
            self.cwd = join(comps)
            return self.cwd
        return None

    def run_line(self, line: str) -> Result:
        try:
            words = shlex.split(line, comments=False, posix=True)
        except ValueError as e:
            return Result(errors=[f"cannot parse the line: {e}"], exit_code=2)
        return self.run(words)

    def run(self, words: list[str]) -> Result:
        if not words:
            return Result()
        name, args = words[0], words[1:]
        self.refresh()
        cmd = REGISTRY.get(name)
        if cmd is None:
            hint = closest(name)
            msg = f"{name}: unknown command"
            msg += f"; did you mean '{hint}'?" if hint else "; type 'help' for the list"
            return Result(errors=[msg], exit_code=2)
        if cmd.shell_only and not self.interactive:
            return Result(errors=[f"{name}: only available in the interactive shell "
                                  "(run mdshell without a command, or with --repl)"],
                          exit_code=2)
        try:
            return cmd.run(self, args)
        except UsageError as e:
            return Result(errors=[str(e)], exit_code=2)
        except (CommandError, SourceError, GlobError) as e:
            # SourceError: a file went away or cannot be read now (a live directory).
            return Result(errors=[f"{name}: {e}"], exit_code=1)


def _quorum(source: Source, loaded: Loaded) -> Node:
    from ..loginfo import quorum_info
    from ..tree.source_tree import quorum_node

    return quorum_node(quorum_info(source, loaded))


def _log(source: Source, loaded: Loaded) -> Node:
    from ..loginfo import log_info
    from ..tree.source_tree import log_node

    return log_node(log_info(source, loaded))
