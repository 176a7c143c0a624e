"""Connections to the ``-q`` controllers: try each, retry with backoff, bounded in count/time."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from .config import ClientConfig
from .connection import Connection, split_endpoint
from .errors import LiveError, RetriableError

T = TypeVar("T")
BACKOFF_MS = (100, 1000)  # Kafka's retry.backoff.ms / retry.backoff.max.ms defaults


class Client:
    """The bootstrap controllers plus any node learnt later, one cached connection each."""

    def __init__(self, bootstrap: str, config: ClientConfig) -> None:
        self.config = config
        parts = [p for p in bootstrap.split(",") if p.strip()]
        if not parts:
            raise LiveError("-q: give at least one controller HOST:PORT")
        self.bootstrap = [split_endpoint(p) for p in parts]
        self.conns: dict[tuple[str, int], Connection] = {}
        self.bytes_in = 0
        self.requests = 0

    def connect(self, host: str, port: int) -> Connection:
        key = (host, port)
        conn = self.conns.get(key)
        if conn is not None and conn.sock is not None:
            return conn
        conn = Connection(host, port, self.config).open()
        self.conns[key] = conn
        return conn

    def call(self, endpoint: tuple[str, int], fn: Callable[[Connection], T]) -> T:
        conn = self.connect(*endpoint)
        before_in, before_n = conn.stats.bytes_in, conn.stats.requests
        try:
            return fn(conn)
        finally:
            self.bytes_in += conn.stats.bytes_in - before_in
            self.requests += conn.stats.requests - before_n

    def any_node(self, fn: Callable[[Connection], T], *, budget_s: float | None = None,
                 prefer: list[tuple[str, int]] | None = None) -> T:
        """``fn`` on the first bootstrap node that works, retrying the list with backoff."""
        budget = budget_s if budget_s is not None else self.config.request_timeout_ms / 1000
        deadline = time.monotonic() + budget
        order = list(prefer or []) + [e for e in self.bootstrap if e not in (prefer or [])]
        tried: list[str] = []
        last: LiveError | None = None
        attempt = 0
        while True:
            for endpoint in order:
                try:
                    return self.call(endpoint, fn)
                except RetriableError as e:
                    last = e
                    tried.append(f"{endpoint[0]}:{endpoint[1]}")
                if time.monotonic() > deadline:
                    break
            attempt += 1
            if time.monotonic() + backoff(attempt) > deadline or attempt >= 8:
                break
            time.sleep(backoff(attempt))
        names = ", ".join(dict.fromkeys(tried))
        raise LiveError(f"no controller answered (tried {names}); last error: {last}") from last

    def close(self) -> None:
        for conn in self.conns.values():
            conn.close()
        self.conns.clear()


def backoff(attempt: int) -> float:
    """Exponential backoff with jitter, in seconds (Kafka's 100 ms doubling to 1 s)."""
    base = min(BACKOFF_MS[1], BACKOFF_MS[0] * 2 ** max(attempt - 1, 0))
    return base * random.uniform(0.8, 1.2) / 1000
