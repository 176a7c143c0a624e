"""The REPL's command history: where it lives and how it is stored.

The REPL keeps its history in prompt-toolkit's ``FileHistory`` format, in the user's data
directory, so it survives sessions; the file is made readable by the user alone, and a line
typed with a space first is not kept (bash's ignorespace). A history file that cannot be
read or written must never stop the shell: the first failure is reported once and the
session goes on with the entries it has in memory.

prompt_toolkit is imported only inside :func:`open_history`, so scripts read from stdin never
load it. The ``history`` command reads the entries through :mod:`mdshell.commands.history`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..commands.history import attach, entries_of, numbered

__all__ = ["attach", "entries_of", "history_path", "numbered", "open_history"]

if TYPE_CHECKING:
    from prompt_toolkit.history import FileHistory

ENV_VAR = "MDSHELL_HISTORY"
MAX_ENTRIES = 10_000  # loaded from the file; older entries stay in it but are not recalled

Warn = Callable[[str], None]


def history_path(env: Mapping[str, str] | None = None) -> Path:
    """``$MDSHELL_HISTORY``, else ``$XDG_DATA_HOME/mdshell/history`` (XDG default applies)."""
    env = os.environ if env is None else env
    if env.get(ENV_VAR):
        return Path(env[ENV_VAR]).expanduser()
    base = env.get("XDG_DATA_HOME") or ""
    # The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
    data_home = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "share"
    return data_home / "mdshell" / "history"


def open_history(path: Path, warn: Warn) -> FileHistory:
    """A ``FileHistory`` on ``path`` that degrades to memory (one warning) on I/O errors."""
    return _safe_file_history()(path, warn)


def _create_private(path: Path) -> None:
    """Make ``path`` (and its directory) readable by the user alone if it does not exist:
    the commands typed name the cluster's topics, users and principals."""
    if path.exists():
        return
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))


@functools.cache
def _safe_file_history() -> Callable[[Path, Warn], FileHistory]:
    """The class is built on first use so that importing this module never loads prompt_toolkit."""
    from prompt_toolkit.history import FileHistory

    class SafeFileHistory(FileHistory):
        """FileHistory that never raises: read and write failures are reported once."""

        def __init__(self, path: Path, warn: Warn) -> None:
            super().__init__(path)
            self.path = path
            self._warn = warn
            self._failed = False
            # Load now (not in prompt-toolkit's background task), so the ``history`` command
            # and the first Up press see the same entries.
            self._loaded_strings = list(self.load_history_strings())
            self._loaded = True

        def _fail(self, action: str, err: OSError) -> None:
            if not self._failed:
                self._failed = True
                reason = err.strerror or type(err).__name__
                self._warn(f"cannot {action} the history file {self.path} ({reason}); "
                           "history is kept for this session only")

        def load_history_strings(self) -> list[str]:
            try:
                return list(super().load_history_strings())[:MAX_ENTRIES]
            except OSError as e:
                self._fail("read", e)
                return []

        def append_string(self, string: str) -> None:
            """A line typed with a space first is neither saved nor recalled (bash's
            ignorespace): the way to run a line that holds a secret."""
            if string[:1].isspace():
                return
            super().append_string(string)

        def store_string(self, string: str) -> None:
            if self._failed:
                return
            try:
                _create_private(self.path)
                super().store_string(string)
            except OSError as e:
                self._fail("write", e)

    return SafeFileHistory
