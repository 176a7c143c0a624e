"""Shared test helpers: the real corpus (skipped when absent) and running the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MDSHELL_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus"
GOLDEN = SHARED / "golden"
FIXTURES = ROOT / "fixtures"


def corpus_dirs() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.iterdir() if (p / "__cluster_metadata-0").is_dir())


def corpus_ids() -> list[str]:
    return [p.name for p in corpus_dirs()] or ["no-corpus"]


def need_corpus() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"the shared corpus is absent ({CORPUS})")


def run_cli(*args: str, stdin: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``python -m mdshell ARGS`` and capture text output."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-m", "mdshell", *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout, env=full_env,
                          cwd=ROOT)


def batches_of(path: Path) -> list[Any]:
    """Every batch of a well-formed file, parsed with the wire layer."""
    from mdshell.wire.batch import parse_header

    data = path.read_bytes()
    out, pos = [], 0
    while pos < len(data):
        b = parse_header(data, pos)
        out.append(b)
        pos += b.size
    return out
