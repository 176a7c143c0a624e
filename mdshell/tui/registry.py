"""The screens the app switches between, each with its key: the one place to add a screen.

A screen is a class deriving from ``screen.DataScreen`` (it takes the engine, gets the
header, the image's generation and the health checks pushed down as reactive attributes,
and posts ``messages.Jump``/``GoBack`` upward). To add one (the Nodes screen, say):
write ``mdshell/tui/nodes.py`` with ``class NodesScreen(DataScreen)``, then add
``ScreenSpec("nodes", "n", "Nodes", "every node's directory side by side", "nodes",
"NodesScreen")`` to ``SCREENS`` below. The app makes its mode, its key binding, its
command-palette entry and its place in the footer from that line; its module is imported
when the screen is first shown. No textual here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScreenSpec:
    mode: str  # the app's mode name (also what the back stack remembers)
    key: str  # the key that shows it (a Textual key name)
    title: str  # the footer's and the palette's word
    help: str  # the palette's line
    module: str  # the module under mdshell.tui that holds the screen
    cls: str  # the screen's class in it


SCREENS: list[ScreenSpec] = [
    ScreenSpec("overview", "o", "Overview", "health, counts, brokers, controllers, features",
               "overview", "OverviewScreen"),
    ScreenSpec("tree", "t", "Tree", "the whole image as a tree, with details", "browser",
               "BrowserScreen"),
    ScreenSpec("health", "h", "Health", "every check; Enter jumps to the node at fault",
               "health", "HealthScreen"),
    ScreenSpec("history", "l", "History", "timeline, time travel (at) and diff", "history",
               "HistoryScreen"),
    ScreenSpec("nodes", "n", "Nodes", "several nodes' logs side by side (-d once per node)",
               "nodes", "NodesScreen"),
]
HOME = "overview"  # the screen the app opens on
TREE = "tree"  # where jumps land


def spec(mode: str) -> ScreenSpec:
    return next(s for s in SCREENS if s.mode == mode)
