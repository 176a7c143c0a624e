"""Where batches come from: a directory, one file, the live quorum; one interface.

``open_source`` is the only place that picks a kind; everything above talks to
:class:`Source` and its :class:`BatchStream` s.
"""

from __future__ import annotations

from ..problems import SourceError
from .base import BatchStream, ControlEntry, FileRead, Located, Source, Stretch, control_entries
from .directory import DirectorySource
from .file import FileSource
from .layout import Checkpoint, Segment

__all__ = ["BatchStream", "Checkpoint", "ControlEntry", "DirectorySource", "FileRead",
           "FileSource", "Located", "Segment", "Source", "Stretch", "control_entries",
           "open_source"]


def open_source(directory: str | None = None, file: str | None = None, *,
                eager: bool = False) -> Source:
    """``eager`` decodes every record at load (``--strict``: no damage may hide undecoded)."""
    if directory is not None:
        return DirectorySource(directory, eager=eager)
    if file is not None:
        return FileSource(file, eager=eager)
    raise SourceError("give a metadata directory (-d DIR) or one file (-s FILE)")
