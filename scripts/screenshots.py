"""Regenerate the README's screenshots: SVGs of the main screens on fixture data.

Usage: python scripts/screenshots.py [--no-sql] [--live]   (writes docs/screenshots/<name>.svg)

The ``sql`` screen runs a real query on a local Spark (pyspark and Java 17+; skipped with a
note when either is missing, or with --no-sql). ``--live`` also starts a real KRaft quorum
(Kafka's jars, as tests/test_live.py does: about a minute) and shows its live header.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--no-sql", action="store_true", help="skip the sql screen (Spark)")
    p.add_argument("--live", action="store_true", help="also the live header (a real quorum)")
    ns = p.parse_args()
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    from textual._doc import take_svg_screenshot

    from mdshell.tui.scenes import SCENES, SIZE, SQL_SCENE

    out = ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    scenes = list(SCENES)
    if not ns.no_sql:
        missing = _spark_missing()
        if missing:
            print(f"skipped docs/screenshots/sql.svg: {missing}")
        else:
            scenes.append(SQL_SCENE)
    for scene in scenes:
        svg = take_svg_screenshot(app=scene.app(), terminal_size=SIZE,
                                  run_before=scene.before())
        _write(out / f"{scene.name}.svg", svg)
    if ns.live:
        from livescene import live_svg  # type: ignore[import-not-found]

        _write(out / "live.svg", live_svg(SIZE))
    return 0


def _write(path: Path, svg: str) -> None:
    path.write_text(svg, encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)}")


def _spark_missing() -> str | None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "needs pyspark (pip install -e '.[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "needs Java 17+"
    return None


if __name__ == "__main__":
    raise SystemExit(main())
