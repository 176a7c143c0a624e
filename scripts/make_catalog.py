"""Write ``mdshell/spark/catalog.py``: the tables ``sql`` can query and their columns, as
``tables`` lists them, generated from the tables' Arrow schemas through Spark's own type
mapping (so ``tables`` needs neither pyspark nor pyarrow).

Usage: python scripts/make_catalog.py [--check]   (needs the spark extra)

Run it after changing a table of ``mdshell/spark/``; ``--check`` exits 1 when the file is out
of date (``tests/test_tables_catalog.py`` checks the same).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "mdshell" / "spark" / "catalog.py"
sys.path.insert(0, str(ROOT))

HEADER = '''"""The tables ``sql`` can query, what each holds and its columns with their Spark
SQL types: what ``tables`` lists, readable without pyspark or pyarrow (``sql`` needs them,
``tables`` does not).

Generated from the tables' Arrow schemas (``tables.py``) by ``scripts/make_catalog.py``: do not
edit; ``tests/test_tables_catalog.py`` fails when a table changed and this was not made again.
"""

from __future__ import annotations

# name -> (what the table holds, its columns as (name, Spark SQL type))
CATALOG: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
'''


def render() -> str:
    from mdshell.spark.query import describe_tables

    out = [HEADER]
    for name, table in describe_tables().items():
        out.append(f"    {name!r}: (\n")
        out.append(_wrapped(table["description"], 8) + ",\n")
        out.append("        (\n")
        for c in table["columns"]:
            out.append(f"            ({c['name']!r}, {c['type']!r}),\n")
        out.append("        ),\n    ),\n")
    out.append("}\n")
    return "".join(out)


def _wrapped(text: str, indent: int, width: int = 100) -> str:
    """A string literal over as many lines as it needs, implicitly joined."""
    pad = " " * indent
    room = width - indent - 3  # the quotes and a space kept inside
    parts, line = [], ""
    for word in text.split(" "):
        if line and len(line) + len(word) + 1 > room:
            parts.append(line + " ")
            line = word
        else:
            line = f"{line} {word}" if line else word
    parts.append(line)
    return "\n".join(pad + repr(p) for p in parts)


def main() -> int:
    text = render()
    if sys.argv[1:] == ["--check"]:
        if TARGET.read_text() != text:
            print(f"{TARGET.relative_to(ROOT)} is out of date: python scripts/make_catalog.py",
                  file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
