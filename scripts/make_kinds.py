"""Write ``mdshell/wire/kinds.py``: the record kinds by name, generated from the schemas.

Usage: python scripts/make_kinds.py [--check]

Run it after adding a record type to ``mdshell/wire/records.py``; ``--check`` exits 1 when the
file is out of date (``tests/test_kinds.py`` checks the same).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "mdshell" / "wire" / "kinds.py"
sys.path.insert(0, str(ROOT))

from mdshell.wire.records import METADATA, constant_name  # noqa: E402

HEADER = '''"""Metadata record kinds by name (api key -> ``RecordKind.PARTITION``...).

Generated from the schemas in ``records.py`` by ``scripts/make_kinds.py``: do not edit.
Plain ints, not an enum: replay compares kinds once per record, and a class attribute is read
several times faster than an enum member.
"""

from __future__ import annotations

from typing import Final


class RecordKind:
    """The api key of each metadata record type."""

'''

FOOTER = '''

# name -> api key, for every kind above
KINDS: Final[dict[str, int]] = {
    name: key for name, key in vars(RecordKind).items() if name.isupper()}
'''


def source() -> str:
    """The text ``kinds.py`` must hold for today's schemas."""
    rows = [f"    {constant_name(m.name)}: Final = {key}  # {m.name}\n"
            for key, m in sorted(METADATA.items())]
    return HEADER + "".join(rows) + FOOTER


def main(argv: list[str]) -> int:
    text = source()
    if "--check" in argv:
        if TARGET.read_text() != text:
            print(f"{TARGET} is out of date: run python scripts/make_kinds.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
