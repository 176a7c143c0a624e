"""The inputs the fuzzer mutates: every data file of the fixtures (in its whole log dir) and
the small data files of the shared corpus (each alone in a directory).

A seed is one file to mutate and the log dir around it. Fixture seeds keep every file of
their fixture (snapshots, other segments, quorum-state, meta.properties), so ``-d`` reads the
mutated file where it belongs; corpus seeds hold their file alone (a corpus directory can be
megabytes; a case must stay small to be fast).
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from .mutate import Target

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
SHARED = Path(os.environ.get("MDSHELL_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus"
MD = "__cluster_metadata-0"
CORPUS_MAX = 192 << 10  # bytes: a corpus file above this is not a seed


@dataclass
class Seed:
    name: str  # "fixture:cluster-basic/0000...0.log" or "corpus:<dir>/<file>"
    files: dict[str, bytes]  # relative to the log dir
    target: str  # the file to mutate, relative to the log dir
    single: bool
    _topic: str | None = field(default=None, repr=False)

    @cached_property
    def mapped(self) -> Target:
        return Target.of(self.target, self.files[self.target])

    @cached_property
    def changes(self) -> str | None:
        """A topic of the undamaged directory's image (``changes`` looks at it), if any."""
        from mdshell.cli import main

        with tempfile.TemporaryDirectory() as tmp:
            for rel, data in self.files.items():
                p = Path(tmp, rel)
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                    contextlib.suppress(SystemExit):
                main(["-d", tmp, "ls", "/image/topics/byName"])
            import gc

            gc.unfreeze()
        names = sorted(n for n in out.getvalue().split() if n)
        return f"/image/topics/byName/{names[0]}" if names else None


def _data_files(md: Path) -> list[Path]:
    return sorted(p for p in md.iterdir()
                  if p.is_file() and p.name.endswith((".log", ".checkpoint")) and p.stat().st_size)


def fixture_seeds() -> list[Seed]:
    seeds = []
    for fx in sorted(p for p in FIXTURES.iterdir() if (p / MD).is_dir()):
        files = {str(p.relative_to(fx)): p.read_bytes()
                 for p in sorted(fx.rglob("*")) if p.is_file()}
        for f in _data_files(fx / MD):
            rel = str(f.relative_to(fx))
            seeds.append(Seed(f"fixture:{fx.name}/{f.name}", files, rel, False))
    return seeds


def corpus_seeds() -> list[Seed]:
    if not CORPUS.is_dir():
        return []
    seeds = []
    for d in sorted(p for p in CORPUS.iterdir() if (p / MD).is_dir()):
        for f in _data_files(d / MD):
            if f.stat().st_size <= CORPUS_MAX:
                rel = f"{MD}/{f.name}"
                seeds.append(Seed(f"corpus:{d.name}/{f.name}", {rel: f.read_bytes()}, rel,
                                  True))
    return seeds


def all_seeds(corpus: bool = True) -> list[Seed]:
    return fixture_seeds() + (corpus_seeds() if corpus else [])
