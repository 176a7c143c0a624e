"""Regenerate the README's screenshots: SVGs of the main screens on fixture data.

Usage: python scripts/screenshots.py   (writes docs/screenshots/<screen>.svg)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    from textual._doc import take_svg_screenshot

    from mdshell.tui.scenes import SCENES, SIZE

    out = ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    for scene in SCENES:
        svg = take_svg_screenshot(app=scene.app(), terminal_size=SIZE,
                                  run_before=scene.before())
        (out / f"{scene.name}.svg").write_text(svg, encoding="utf-8")
        print(f"wrote docs/screenshots/{scene.name}.svg")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
