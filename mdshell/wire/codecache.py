"""Compiled decoders kept between runs, like Python's own ``__pycache__``.

Compiling a generated decoder costs ~1.5 ms, and a one-shot command on a small directory
needs a dozen of them: without this, compiling is most of the time it spends after imports.
Code objects are kept by their whole source (the source changes with the schema or the
generator, so a stale entry is never used, and no hash can collide) in one marshal file per
Python version, in mdshell's cache directory (:func:`mdshell.files.cache_dir`). The file is
written once at exit, and only when something new was compiled; a cache that cannot be read or
written is silently not used. Nothing here is ever written near the user's data;
``MDSHELL_NO_CODE_CACHE=1`` (or ``MDSHELL_NO_CACHE=1``, for every cache) turns it off.
"""

from __future__ import annotations

import atexit
import contextlib
import marshal
import os
import sys
from types import CodeType

from ..files import cache_dir, caching

_codes: dict[str, CodeType] | None = None
_dirty = False
_used: set[str] = set()
KEEP = 500  # entries beyond this (left by older releases) are dropped when saving
DISABLE_ENV = "MDSHELL_NO_CODE_CACHE"


def cache_file() -> str:
    return os.path.join(cache_dir(), f"decoders-{sys.implementation.cache_tag}.marshal")


def _enabled() -> bool:
    return caching() and not os.environ.get(DISABLE_ENV)


def compiled(source: str, name: str) -> CodeType:
    """The code object of ``source`` (a generated module body), from the cache if there."""
    global _dirty
    codes = _load()
    _used.add(source)
    code = codes.get(source)
    if code is None:
        code = codes[source] = compile(source, name, "exec")
        if not _dirty and _enabled():
            _dirty = True
            atexit.register(_save)
    return code


def _load() -> dict[str, CodeType]:
    global _codes
    if _codes is None:
        _codes = {}
        if _enabled():
            try:
                with open(cache_file(), "rb") as f:
                    loaded = marshal.loads(f.read())
                if isinstance(loaded, dict):
                    _codes = {k: v for k, v in loaded.items()
                              if isinstance(k, str) and isinstance(v, CodeType)}
            except (OSError, ValueError, EOFError, TypeError):
                pass
    return _codes


def _save() -> None:
    """Write the cache (atomically: a concurrent run sees the old file or the new one)."""
    path = cache_file()
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        codes = _codes or {}
        if len(codes) > KEEP:
            codes = {k: v for k, v in codes.items() if k in _used}
        with open(tmp, "wb") as f:
            f.write(marshal.dumps(codes))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
