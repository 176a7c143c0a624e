"""The palette's Screenshot: an SVG of the screen in ~/Downloads when it exists, else in the
working directory; the path, or the reason it could not be written, in a notification
(Textual's own delivery fails without a word when ~/Downloads is missing)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from textual._files import generate_datetime_filename

if TYPE_CHECKING:
    from textual.app import App


def target_dir(path: str | None = None) -> Path:
    """Where a screenshot goes: ``path``, else ~/Downloads if it is a directory, else here."""
    if path:
        return Path(os.path.expanduser(path))
    downloads = Path.home() / "Downloads"
    return downloads if downloads.is_dir() else Path.cwd()


def save(app: App[int], filename: str | None = None, path: str | None = None) -> Path | None:
    """Write the screen as SVG; tell where, or why not."""
    target = target_dir(path) / (filename or generate_datetime_filename(app.title, ".svg"))
    try:
        target.write_text(app.export_screenshot(), encoding="utf-8")
    except OSError as e:
        app.notify(f"cannot write {target}: {e.strerror or e}; "
                   "run from a writable directory", title="Screenshot", severity="error")
        return None
    app.notify(f"saved {target}", title="Screenshot")
    return target
