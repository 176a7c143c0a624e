"""The colours of meanings (broken, attention, fine, informative), made from the theme shown
so that each is readable on it: text at least 4.5:1 against the backgrounds it is drawn on,
a badge's words at least 4.5:1 against the badge (WCAG's contrast ratio). Fixed colours
were bright yellow on white in the light themes (1.3:1). Under NO_COLOR severity shows by
weight and reverse video instead (a FAIL and a DAMAGED badge alike: bold, reversed).
No widgets here: screens and widgets ask :func:`palette` for the styles of the app's theme.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from textual.color import Color

MIN_CONTRAST = 4.5
BACKGROUNDS = ("background", "surface", "panel")  # what text is drawn on, in every theme
BLACK, WHITE = Color(0, 0, 0), Color(255, 255, 255)


def luminance(c: Color) -> float:
    """WCAG's relative luminance of an opaque colour."""
    def channel(v: int) -> float:
        x = v / 255
        return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b)


def contrast(a: Color, b: Color) -> float:
    """WCAG's contrast ratio of two colours (1 to 21)."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def readable(color: Color, backgrounds: list[Color]) -> Color:
    """``color``, moved towards black or white (whichever the backgrounds stand apart
    from more) until it reaches MIN_CONTRAST against every one of them."""
    darkest = min(backgrounds, key=luminance)
    toward = WHITE if luminance(darkest) < 0.18 else BLACK
    for step in range(21):
        c = color if step == 0 else color.blend(toward, step / 20)
        if all(contrast(c, b) >= MIN_CONTRAST for b in backgrounds):
            return c
    return toward


def name(c: Color) -> str:
    """A rich colour: an ANSI theme's own colours by number (the terminal's palette draws
    them), others by value."""
    return f"color({c.ansi})" if c.ansi is not None and c.ansi >= 0 else c.hex


def on(color: Color) -> Color:
    """Black or white, whichever reads better on ``color`` (at least 4.58:1)."""
    return BLACK if contrast(BLACK, color) >= contrast(WHITE, color) else WHITE


@dataclass(frozen=True)
class Palette:
    """Rich styles, one per meaning."""

    fail: str  # text: broken (a FAIL item, damage, an offline partition, a fenced broker)
    warn: str  # text: attention (a WARN item, a warning while reading)
    ok: str  # text: fine
    info: str  # text: informative
    fail_badge: str  # FAIL, DAMAGED, INCOMPLETE, SECRETS SHOWN
    warn_badge: str  # WARN, TIME TRAVEL, LIVE STALE
    info_badge: str
    ok_badge: str
    mono: bool = False

    def badge(self, status: str) -> str:
        return {"fail": self.fail_badge, "warn": self.warn_badge, "info": self.info_badge,
                "ok": self.ok_badge}.get(status, "")

    def text(self, status: str) -> str:
        return {"fail": self.fail, "warn": self.warn, "ok": self.ok,
                "info": self.info}.get(status, "")


MONO = Palette(fail="bold", warn="", ok="", info="", fail_badge="bold reverse",
               warn_badge="reverse", info_badge="", ok_badge="", mono=True)


def palette(variables: dict[str, str], dark: bool, mono: bool = False) -> Palette:
    """The palette of a theme (``App.theme_variables``, ``Theme.dark``); NO_COLOR: MONO."""
    if mono:
        return MONO
    return _palette(tuple(sorted(variables.items())), dark)


@lru_cache(maxsize=64)
def _palette(items: tuple[tuple[str, str], ...], dark: bool) -> Palette:
    v = dict(items)
    terminal = BLACK if dark else WHITE  # an ANSI theme draws on the terminal's own

    def color(name: str, default: str) -> Color:
        c = Color.parse(v.get(name, default))
        return terminal if c.a == 0 or c.ansi == -1 else c.with_alpha(1.0)

    grounds = [color(n, "transparent") for n in BACKGROUNDS]
    error, warning = color("error", "#ff0000"), color("warning", "#ffff00")
    success, primary = color("success", "#00ff00"), color("primary", "#0000ff")

    def text(c: Color, bold: bool = False) -> str:
        return ("bold " if bold else "") + name(readable(c, grounds))

    def badge(c: Color) -> str:
        return f"bold {on(c).hex} on {name(c)}"

    return Palette(fail=text(error, bold=True), warn=text(warning), ok=text(success),
                   info=text(primary), fail_badge=badge(error), warn_badge=badge(warning),
                   info_badge=badge(primary), ok_badge=badge(success))
