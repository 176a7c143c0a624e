"""Placeholder for the line shell (prompt-toolkit); see issue 3."""

from __future__ import annotations

import sys


def run_repl(shell: object) -> int:
    from .cli import run_script

    return run_script(shell, sys.stdin, sys.stdout)
