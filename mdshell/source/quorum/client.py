"""Connections to the ``-q`` controllers: each endpoint on its own short clock, raced.

A frozen controller (SIGSTOP, a GC pause, a half-open TCP peer) accepts connections and
never answers; it must not use the whole request timeout. Each request has an answer
timeout of a few seconds (the first bytes of the reply, :data:`ANSWER_S`); endpoints are
tried in turn and, when one has not answered within :data:`STAGGER_S`, the next one starts
in parallel (the first answer wins). An endpoint that failed goes to the back of the order
for :data:`QUARANTINE_S`, and one connection is never used by two threads at once.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from .config import ClientConfig
from .connection import Connection, split_endpoint
from .errors import LiveError, Refused, RetriableError

T = TypeVar("T")
Endpoint = tuple[str, int]
BACKOFF_MS = (100, 1000)  # Kafka's retry.backoff.ms / retry.backoff.max.ms defaults
STAGGER_S = 0.5  # start the next endpoint too when one has not answered by then
QUARANTINE_S = 10.0  # a failed endpoint is tried last for this long


class Busy(RetriableError):
    """An earlier request to this endpoint is still unanswered."""


class Client:
    """The bootstrap controllers plus any node learnt later, one cached connection each."""

    def __init__(self, bootstrap: str, config: ClientConfig) -> None:
        self.config = config
        parts = [p for p in bootstrap.split(",") if p.strip()]
        if not parts:
            raise LiveError("-q: give at least one controller HOST:PORT")
        self.bootstrap = [split_endpoint(p) for p in parts]
        self.conns: dict[Endpoint, Connection] = {}
        self.bytes_in = 0
        self.requests = 0
        self.connects = 0  # connections opened or tried
        self._guard = threading.Lock()  # the dicts and counters below
        self._locks: dict[Endpoint, threading.Lock] = {}
        self._failed: dict[Endpoint, float] = {}  # endpoint -> monotonic time of its failure
        self._threads: list[threading.Thread] = []
        self.answered = False  # some endpoint answered once: a refusal may be a restart

    def _lock(self, endpoint: Endpoint) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(endpoint, threading.Lock())

    def connect(self, host: str, port: int) -> Connection:
        key = (host, port)
        conn = self.conns.get(key)
        if conn is not None and conn.sock is not None:
            if conn.alive():
                return conn
            conn.close()  # closed by the peer while idle (a restart): open a new one
        conn = Connection(host, port, self.config)
        self.conns[key] = conn  # registered first, so that close() can interrupt opening
        with self._guard:
            self.connects += 1
        return conn.open()

    def call(self, endpoint: Endpoint, fn: Callable[[Connection], T]) -> T:
        """``fn`` on ``endpoint``'s connection; its failure sends the endpoint to the back."""
        lock = self._lock(endpoint)
        if not lock.acquire(timeout=self.config.answer_timeout_s):
            raise Busy(f"{endpoint[0]}:{endpoint[1]}: an earlier request there is still "
                       f"unanswered after {self.config.answer_timeout_s:g} s")
        try:
            conn = self.connect(*endpoint)
            before_in, before_n = conn.stats.bytes_in, conn.stats.requests
            try:
                result = fn(conn)
            finally:
                with self._guard:
                    self.bytes_in += conn.stats.bytes_in - before_in
                    self.requests += conn.stats.requests - before_n
        except RetriableError:
            with self._guard:
                self._failed[endpoint] = time.monotonic()
            raise
        finally:
            lock.release()
        with self._guard:
            self._failed.pop(endpoint, None)
            self.answered = True
        return result

    def ordered(self, prefer: list[Endpoint] | None = None, *,
                healthy_only: bool = False) -> list[Endpoint]:
        """``prefer`` then the bootstrap list; endpoints that failed lately or are still
        busy go last (``healthy_only``: are left out, unless that leaves none)."""
        first = list(prefer or [])
        base = first + [e for e in self.bootstrap if e not in first]
        good = [e for e in base if self.healthy(e)]
        if healthy_only and good:
            return good
        return good + [e for e in base if e not in good]

    def healthy(self, endpoint: Endpoint) -> bool:
        """Whether ``endpoint`` neither failed lately nor is still busy with a request."""
        failed = self._failed.get(endpoint)
        return not ((failed is not None and time.monotonic() - failed < QUARANTINE_S)
                    or self._lock(endpoint).locked())

    def ask_each(self, endpoints: list[Endpoint], fn: Callable[[Connection], T],
                 budget_s: float) -> list[tuple[Endpoint, T]]:
        """``fn`` on every endpoint at once; the answers that came within ``budget_s``, in
        the order they came. Failures are left out (each one quarantines its endpoint, as
        :meth:`call` does); attempts still running end on their own, within their answer
        timeout (:meth:`close` waits for them)."""
        results: queue.SimpleQueue[tuple[Endpoint, bool, Any]] = queue.SimpleQueue()
        for endpoint in endpoints:
            self._start(endpoint, fn, results)
        deadline = time.monotonic() + budget_s
        out: list[tuple[Endpoint, T]] = []
        for _ in endpoints:
            try:
                endpoint, ok, value = results.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if ok:
                out.append((endpoint, value))
            elif not isinstance(value, LiveError):
                raise value
        return out

    def any_node(self, fn: Callable[[Connection], T], *, budget_s: float | None = None,
                 prefer: list[Endpoint] | None = None) -> T:
        """``fn`` on the first node that answers: raced over the list, retried with backoff
        within the budget (the request timeout)."""
        budget = budget_s if budget_s is not None else self.config.request_timeout_ms / 1000
        deadline = time.monotonic() + budget
        errors: list[tuple[Endpoint, LiveError]] = []
        attempt = 0
        while True:
            order = self.ordered(prefer)
            before = len(errors)
            found = self._race(order, fn, deadline, errors)
            if found:
                return found[0]
            attempt += 1
            if time.monotonic() + backoff(attempt) > deadline or attempt >= 8:
                break
            if not self.answered and _all_refused(errors[before:], order):
                break  # nothing listens anywhere, and nothing ever did: known at once
            time.sleep(backoff(attempt))
        names = ", ".join(dict.fromkeys(f"{h}:{p}" for (h, p), _ in errors))
        last = errors[-1][1] if errors else None
        raise LiveError(f"no controller answered (tried {names}); last error: {last}") from last

    def _race(self, order: list[Endpoint], fn: Callable[[Connection], Any], deadline: float,
              errors: list[tuple[Endpoint, LiveError]]) -> tuple[Any] | None:
        """One round: start each endpoint in turn, the next one when the ones running have
        failed or :data:`STAGGER_S` passed; the first answer wins (a 1-tuple)."""
        results: queue.SimpleQueue[tuple[Endpoint, bool, Any]] = queue.SimpleQueue()
        running = 0
        started: list[Endpoint] = []
        settled: set[Endpoint] = set()

        def settle(until: float) -> tuple[Any] | None:
            nonlocal running
            while running:
                try:
                    endpoint, ok, value = results.get(timeout=max(0.0, until - time.monotonic()))
                except queue.Empty:
                    return None
                running -= 1
                settled.add(endpoint)
                if ok:
                    return (value,)
                if not isinstance(value, RetriableError):
                    raise value
                errors.append((endpoint, value))
            return None

        for endpoint in order:
            self._start(endpoint, fn, results)
            started.append(endpoint)
            running += 1
            found = settle(min(time.monotonic() + STAGGER_S, deadline))
            if found or time.monotonic() > deadline:
                break
        else:
            found = settle(deadline)
        if not found and running:
            # Out of time: the attempts still running end within their answer timeout;
            # their own errors say more than "out of time".
            found = settle(time.monotonic() + self.config.answer_timeout_s + 0.5)
            if not found:
                errors.extend((e, RetriableError(f"{e[0]}:{e[1]}: no answer in time"))
                              for e in started if e not in settled)
        return found

    def _start(self, endpoint: Endpoint, fn: Callable[[Connection], Any],
               results: queue.SimpleQueue[tuple[Endpoint, bool, Any]]) -> None:
        def run() -> None:
            try:
                results.put((endpoint, True, self.call(endpoint, fn)))
            except BaseException as err:  # handed to the caller's thread
                results.put((endpoint, False, err))

        thread = threading.Thread(target=run, name=f"mdshell-{endpoint[0]}:{endpoint[1]}",
                                  daemon=True)
        with self._guard:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def close(self) -> None:
        """Close every connection (interrupting requests still waiting) and wait for the
        attempts still running, bounded."""
        for conn in list(self.conns.values()):
            conn.close()
        with self._guard:
            threads, self._threads = self._threads, []
        for t in threads:
            t.join(timeout=self.config.answer_timeout_s + 1)
        for conn in list(self.conns.values()):
            conn.close()
        self.conns.clear()


def _all_refused(errors: list[tuple[Endpoint, LiveError]], order: list[Endpoint]) -> bool:
    """Whether a round's every endpoint refused the connection (nothing listens there)."""
    refused = {e for e, err in errors if isinstance(err, Refused)}
    return bool(order) and refused >= set(order) and len(refused) == len(
        {e for e, _ in errors})


def backoff(attempt: int) -> float:
    """Exponential backoff with jitter, in seconds (Kafka's 100 ms doubling to 1 s)."""
    base = min(BACKOFF_MS[1], BACKOFF_MS[0] * 2 ** max(attempt - 1, 0))
    return base * random.uniform(0.8, 1.2) / 1000
