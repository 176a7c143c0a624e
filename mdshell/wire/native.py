"""The optional compiled pieces (setup.py builds them when a C compiler is there).

Each stands for pure-Python code that gives the same results; tests compare the two.
``MDSHELL_PURE=1`` in the environment (read once, at import) makes mdshell use the
pure-Python code only: for comparisons, and as a way out should a compiled piece ever be
wrong.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

PURE = os.environ.get("MDSHELL_PURE", "") == "1"


def piece(name: str) -> ModuleType | None:
    """The compiled module ``mdshell.wire.<name>``; None when it is not built or not
    wanted."""
    if PURE:
        return None
    try:
        return importlib.import_module(f"{__package__}.{name}")
    except ImportError:
        return None
