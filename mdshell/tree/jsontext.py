"""JSON text as ``json.dumps(value, indent=2, ensure_ascii=False)`` writes it, in pieces.

The JSON of a large subtree is written as it is made, from pieces: a value nested ``level``
deep is its own ``dumps`` with every line break followed by ``level`` more indents (strings
never hold a raw line break), so pieces can be made once and joined (100k partitions' JSON
is 130 MB). ``json`` is imported on first use: text output never needs it.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def safe(text: str) -> str:
    """Valid UTF-8 whatever the data: a file name's undecodable bytes (held as lone
    surrogates) are written as ``\\udcXX`` escapes."""
    if text.isascii():  # constant time: most text needs no look
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def dumps(value: Any, level: int = 0) -> str:
    """``value`` as JSON text, indented two spaces a level, as placed ``level`` deep."""
    import json

    text = json.dumps(value, indent=2, ensure_ascii=False)
    if level and "\n" in text:
        text = text.replace("\n", "\n" + "  " * level)
    return safe(text)


def string(text: str) -> str:
    """A string (or an object's key) as JSON text: ``"text"``, escaped where needed."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'  # node names, topic names, ids: nothing to escape
    return dumps(text)
