"""The full-screen interface (Textual). Importing this package does not import textual: the
program enters through :func:`run_tui`, which loads the app module only then."""

from __future__ import annotations

import sys
from typing import Any


def run_tui(directory: str | None, file: str | None, *, show_secrets: bool = False,
            at: str | None = None, bootstrap: str | None = None,
            config: str | None = None, follow: bool = False,
            nodes: list[str] | None = None, node: str | None = None) -> int:
    """Open the source, run the app until the user quits; the process exit code. ``nodes``:
    several nodes' directories (-d once per node), ``node`` the one to read (--node)."""
    from .splash import Splash
    from .startup import started

    with started() as startup:  # GC, switch interval: undone on the way out
        from ..problems import SourceError
        from .engine import Engine

        try:
            engine = (Engine.open_live(bootstrap, config, show_secrets) if bootstrap
                      else Engine.open_nodes(nodes, node, show_secrets) if nodes
                      else Engine.open(directory, file, show_secrets))
        except SourceError as e:
            print(f"mdshell: {e}", file=sys.stderr)
            return 1
        early = startup.start_load(engine)  # small: in a thread, while Textual is imported
        # Textual's import and start take 0.2-0.4 s before the app draws anything: the
        # loading screen's first frame at once (splash.py; the overview replaces it when
        # the load is done by then), else a line saying what is being read.
        splash = Splash()
        drawn = not startup.plain and splash.draw(engine.label)
        if not early and not drawn and sys.stdout.isatty():
            print(f"mdshell: reading {engine.label}…", flush=True)
        handed = False
        try:
            from .app import make_app

            app = make_app(engine, at=at, follow=follow, loading_at_once=not early)
            splash.handed_over()
            handed = True
            app.run()
        finally:
            if not handed:
                splash.undo()
            engine.close()  # live: stop following the quorum
    code: Any = app.return_code
    if app.fatal:
        print(f"mdshell: {app.fatal}", file=sys.stderr)
    return int(code or 0)
