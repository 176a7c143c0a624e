"""Where mdshell keeps the files it writes on its own (docs/files.md lists them all).

One cache directory for everything that can be rebuilt (compiled decoders, Spark's class
archive and logs): ``$MDSHELL_CACHE``, else ``$XDG_CACHE_HOME/mdshell``, else
``~/.cache/mdshell``. ``MDSHELL_NO_CACHE=1`` writes nothing there (and reads nothing). Shared by
every layer, so it imports nothing of the package.
"""

from __future__ import annotations

import os

CACHE_ENV = "MDSHELL_CACHE"
NO_CACHE_ENV = "MDSHELL_NO_CACHE"


def cache_dir() -> str:
    """The directory of everything mdshell caches (not created here)."""
    mine = os.environ.get(CACHE_ENV)
    if mine:
        return os.path.expanduser(mine)
    base = os.environ.get("XDG_CACHE_HOME", "")
    # The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mdshell")


def caching() -> bool:
    """False when ``MDSHELL_NO_CACHE=1``: nothing is read from or written to the cache."""
    return os.environ.get(NO_CACHE_ENV, "") != "1"
