"""CRC-32C (Castagnoli) from the ``crc32c`` package, without its heavy package import:
``crc32c(data)``, or ``crc32c(more, crc)`` to carry a CRC on over more bytes.

``import crc32c`` runs ``importlib.metadata`` (email, urllib, pathlib...) just to set a
version string: ~40 ms of a one-shot command. The extension module itself is loaded
directly; if the package layout ever changes, the normal import is used.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
from collections.abc import Callable


def _load() -> Callable[..., int]:
    try:
        spec = importlib.util.find_spec("crc32c")
        if spec is not None and spec.submodule_search_locations:
            folder = next(iter(spec.submodule_search_locations))
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(folder, "_crc32c" + suffix)
                if os.path.exists(path):
                    ext = importlib.util.spec_from_file_location("crc32c._crc32c", path)
                    if ext is not None and ext.loader is not None:
                        module = importlib.util.module_from_spec(ext)
                        ext.loader.exec_module(module)
                        fn: Callable[..., int] = module.crc32c
                        return fn
    except (ImportError, OSError, AttributeError):
        pass
    import crc32c

    fallback: Callable[..., int] = crc32c.crc32c
    return fallback


crc32c = _load()
