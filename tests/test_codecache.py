"""The compiled-decoder cache: written outside the user's data, reused, and harmless when
damaged or turned off."""

from __future__ import annotations

import sys
from pathlib import Path

from .conftest import FIXTURES, run_cli


def _tree(cache: Path, **env: str) -> str:
    r = run_cli("-d", str(FIXTURES / "cluster-basic"), "tree", "/image",
                env={"MDSHELL_CACHE": str(cache), **env})
    assert r.returncode == 0 and not r.stderr, r.stderr
    return r.stdout


def test_cache_is_written_reused_and_survives_damage(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _tree(cache)
    (file,) = cache.glob("decoders-*.marshal")
    assert sys.implementation.cache_tag in file.name
    stamp = file.stat().st_mtime_ns
    assert _tree(cache) == first
    assert file.stat().st_mtime_ns == stamp  # nothing new compiled: not written again
    file.write_bytes(b"\x00garbage")
    assert _tree(cache) == first
    assert file.read_bytes() != b"\x00garbage"  # rebuilt


def test_cache_can_be_turned_off(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _tree(cache, MDSHELL_NO_CODE_CACHE="1")
    assert not cache.exists()


def test_unwritable_cache_is_ignored(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    _tree(blocker / "cache")  # makedirs fails: the command still works, silently
