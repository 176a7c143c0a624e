"""What screens, widgets and background work tell the app (upward, as Textual messages).

Screens and widgets never reach into the app: they post one of these and the app, the
composition root, decides (switch screens, remember where a jump came from, check the new
image). Work done off the UI thread posts its result and its problems the same way, from its
worker thread (``post_message`` is thread-safe).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.message import Message

from .rows import CheckRow, ListTable

SearchEntry = tuple[str, str, str]  # (what, kind, path)


# ---------------------------------------------------------------- from screens and widgets

@dataclass
class Jump(Message):
    """Show ``path`` in the tree, selected, with its details; Esc comes back."""

    path: str


class GoBack(Message):
    """Esc (or backspace) with nothing left to cancel, clear or close: the place before."""


class ImageMoved(Message):
    """The image shown changed (time travel by ``at`` or the history screen): every
    screen shows it, its health is checked again."""


# ---------------------------------------------------------------- from background work

@dataclass
class LoadDone(Message):
    """The first load (and ``--at``'s time travel) is done."""

    seconds: float


@dataclass
class LoadFailed(Message):
    """The first load failed: one line, shown, then printed on exit (code 1)."""

    message: str


@dataclass
class ChecksReady(Message):
    """The health checks of the image of ``generation``."""

    checks: list[CheckRow]
    generation: int


@dataclass
class IndexReady(Message):
    """What ``/`` searches, for the image of ``generation``."""

    index: list[SearchEntry]
    generation: int


@dataclass
class TablesReady(Message):
    """The Topics and Brokers tables of the image of ``generation``, with the problems
    found while reading every partition for them (records that do not decode): they are
    in the image's notes, so the verdict (header, health) says them too."""

    tables: dict[str, ListTable]
    generation: int
    problems: list[str] = field(default_factory=list)


@dataclass
class Reread(Message):
    """``r`` or a followed directory's read: the latest image's next offset before and
    after, and what the reading found (a verdict that changed, a file that shrank)."""

    before: int
    after: int
    said: list[str] = field(default_factory=list)
    quiet: bool = False  # a follow tick: no word when nothing is new


@dataclass
class RereadFailed(Message):
    """``r`` could not read the directory: one line."""

    message: str


class Advanced(Message):
    """Live or followed: the session's image moved on (from the polling thread)."""
