"""Persistent worker processes, each one way of reading (compiled, ``MDSHELL_PURE=1``, a
sanitizer build), watched from outside: a case that takes more CPU time or resident memory
than its bound gets the worker's stacks dumped (SIGUSR1, ``faulthandler``) and the worker
killed and started again. A worker that dies on its own (an abort, a sanitizer report) is
reported with the tail of its stderr.

A worker is the same process for thousands of cases (start-up, imports and compiled
decoders are paid once): that is the fuzzer's throughput.
"""

from __future__ import annotations

import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .readers import Case
from .worker import recv, send

ROOT = Path(__file__).resolve().parents[2]
_LEN = struct.Struct(">I")
_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass
class Mode:
    """One way of reading: its name and the environment its workers get."""

    name: str
    env: dict[str, str] = field(default_factory=dict)
    memory_cap: bool = True  # RLIMIT_AS as a backstop (not under AddressSanitizer)


@dataclass
class Limits:
    cpu: float = 10.0  # CPU seconds a case may take (all its readers)
    wall: float = 60.0
    rss: int = 1536 << 20  # resident bytes a worker may reach
    address_space: int = 6 << 30  # RLIMIT_AS (backstop)


@dataclass
class Killed:
    """A case its worker could not finish: why, in which reader, and the stacks."""

    why: str  # "time", "memory", "died (code)"
    reader: str
    stack: str
    cpu: float = 0.0
    rss: int = 0


class Worker:
    def __init__(self, mode: Mode, limits: Limits, scratch: str) -> None:
        self.mode, self.limits, self.scratch = mode, limits, scratch
        self.proc: subprocess.Popen[bytes] | None = None
        self.errpath = ""
        self.info: dict[str, Any] = {}
        self.started = 0

    def start(self) -> None:
        env = dict(os.environ)
        env.pop("MDSHELL_PURE", None)
        env.update(self.mode.env)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (env.get("PYTHONPATH"), str(ROOT)) if p)
        if self.mode.memory_cap:
            env["MDSHELL_FUZZ_AS"] = str(self.limits.address_space)
        fd, self.errpath = tempfile.mkstemp(prefix=f"{self.mode.name}-", suffix=".err",
                                            dir=self.scratch)
        os.close(fd)
        # appended to, so that truncating it between cases leaves no hole
        fd = os.open(self.errpath, os.O_WRONLY | os.O_APPEND)
        root = tempfile.mkdtemp(prefix=f"{self.mode.name}-", dir=self.scratch)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fuzz.worker", root],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=fd, env=env, cwd=root)
        os.close(fd)
        self.started += 1
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 120)
        info = recv(self.proc.stdout) if ready else None
        if not info:
            raise RuntimeError(f"fuzz worker {self.mode.name} did not start: "
                               f"{self._tail(4000)}")
        self.info = info

    def close(self) -> None:
        if self.proc is not None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self.errpath:
            with _quiet():
                os.unlink(self.errpath)

    def run(self, case: Case) -> dict[str, Any] | Killed:
        """The worker's answer for ``case``, or why it gave none (it is restarted)."""
        if self.proc is None or self.proc.poll() is not None:
            self.close()
            self.start()
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        with open(self.errpath, "r+b") as f:  # keep stderr to what this case writes
            f.truncate(0)
        cpu0 = self._cpu()
        t0 = time.monotonic()
        try:
            send(proc.stdin, case)
        except BrokenPipeError:
            return self._died()
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], 0.02)
            if ready:
                answer = recv(proc.stdout)
                if answer is None:
                    return self._died()
                return answer  # type: ignore[no-any-return]
            if proc.poll() is not None:
                return self._died()
            cpu, rss = self._cpu() - cpu0, self._rss()
            if cpu > self.limits.cpu or time.monotonic() - t0 > self.limits.wall:
                return self._kill("time", cpu, rss)
            if rss > self.limits.rss:
                return self._kill("memory", cpu, rss)

    def _cpu(self) -> float:
        assert self.proc is not None
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            return (int(parts[11]) + int(parts[12])) / _TICK
        except (OSError, IndexError, ValueError):
            return 0.0

    def _rss(self) -> int:
        assert self.proc is not None
        try:
            with open(f"/proc/{self.proc.pid}/statm") as f:
                return int(f.read().split()[1]) * _PAGE
        except (OSError, IndexError, ValueError):
            return 0

    def _kill(self, why: str, cpu: float, rss: int) -> Killed:
        assert self.proc is not None
        with _quiet():
            os.kill(self.proc.pid, signal.SIGUSR1)
        time.sleep(0.3)
        self.proc.kill()
        self.proc.wait()
        self.proc = None
        reader, stack = self._where()
        return Killed(why, reader, stack, cpu, rss)

    def _died(self) -> Killed:
        assert self.proc is not None
        code = self.proc.wait()
        self.proc = None
        reader, stack = self._where()
        return Killed(f"died ({code})", reader, stack)

    def _where(self) -> tuple[str, str]:
        text = self._tail(200_000)
        reader, rest = "?", text
        marks = [i for i in range(len(text)) if text.startswith("@@ ", i)]
        if marks:
            line = text[marks[-1]:].split("\n", 1)
            reader, rest = line[0][3:], line[1] if len(line) > 1 else ""
        return reader, rest[-6000:]

    def _tail(self, n: int) -> str:
        try:
            with open(self.errpath, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - n))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], OSError)  # type: ignore[arg-type]
