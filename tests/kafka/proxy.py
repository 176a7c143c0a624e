"""Loopback relays for fault tests: a proxy that delays every chunk, cuts the first
connections or never answers (:class:`Proxy`), and a controller kept as it was
(:class:`Recorder`).

Threads, bounded: ``close`` stops the listener and every relay it started.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable


class _Loopback:
    """A listener on a free loopback port, accepting in a thread; each connection accepted
    goes to :meth:`_take`. :meth:`close` stops the listener and every thread it started."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._socks: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self._spawn(self._accept)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _spawn(self, fn: Callable[..., None], *args: object) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True)
        t.start()
        self._threads.append(t)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            self._socks.append(client)
            self._take(client)

    def _take(self, client: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._stop.set()
        for s in [self.listener, *self._socks]:
            with contextlib.suppress(OSError):
                s.close()
        for t in self._threads:
            t.join(timeout=2)


class Proxy(_Loopback):
    def __init__(self, target: tuple[str, int], *, delay_s: float = 0.0,
                 cut_first: int = 0, cut_after_bytes: int = 0, silent: bool = False) -> None:
        self.target = target
        self.delay_s = delay_s
        self.cut_first = cut_first  # how many connections to cut mid-response
        self.cut_after = cut_after_bytes
        self.silent = silent  # accept and never answer (not a Kafka peer)
        self.connections = 0
        self.cuts = 0
        super().__init__()

    def _take(self, client: socket.socket) -> None:
        self.connections += 1
        if self.silent:
            return
        upstream = socket.create_connection(self.target, timeout=5)
        self._socks.append(upstream)
        cut = self.cuts < self.cut_first
        if cut:
            self.cuts += 1
        for a, b, limit in ((client, upstream, 0), (upstream, client,
                                                    self.cut_after if cut else 0)):
            self._spawn(self._pipe, a, b, limit)

    def _pipe(self, src: socket.socket, dst: socket.socket, limit: int) -> None:
        sent = 0
        src.settimeout(0.5)
        while not self._stop.is_set():
            try:
                data = src.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
            if limit and sent + len(data) >= limit:
                with contextlib.suppress(OSError):
                    dst.sendall(data[:max(limit - sent - 1, 0)])
                break
            if self.delay_s:
                time.sleep(self.delay_s)
            try:
                dst.sendall(data)
            except OSError:
                break
            sent += len(data)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()



class Recorder(_Loopback):
    """A controller as it was: a loopback relay to ``target`` that keeps the last answer to
    each kind of request (API key and version), until :meth:`freeze`; from then on it
    answers every request with the answer kept for its kind (its correlation id put in),
    as a controller cut off from the others would: a leader of the epoch it last knew.
    Only plaintext peers, one request in flight a connection (as mdshell's client)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.kept: dict[tuple[int, int], bytes] = {}  # (key, version) -> answer past its id
        self.frozen = False
        super().__init__()

    def freeze(self) -> None:
        self.frozen = True

    def _take(self, client: socket.socket) -> None:
        self._spawn(self._serve, client)

    def _serve(self, client: socket.socket) -> None:
        upstream = None
        try:
            while not self._stop.is_set():
                request = _frame(client)
                if request is None:
                    return
                key, version, corr = struct.unpack_from(">hhi", request)
                if self.frozen:
                    answer = self.kept.get((key, version))
                    if answer is None:
                        return
                else:
                    if upstream is None:
                        upstream = socket.create_connection(self.target, timeout=5)
                        self._socks.append(upstream)
                    upstream.sendall(struct.pack(">i", len(request)) + request)
                    got = _frame(upstream)
                    if got is None:
                        return
                    answer = self.kept[(key, version)] = got[4:]
                client.sendall(struct.pack(">ii", len(answer) + 4, corr) + answer)
        except OSError:
            return
        finally:
            for s in (client, upstream):
                if s is not None:
                    with contextlib.suppress(OSError):
                        s.close()



def _frame(sock: socket.socket) -> bytes | None:
    """One size-delimited Kafka frame's bytes (past its size), None at the end."""
    sock.settimeout(10)
    head = _exactly(sock, 4)
    if head is None:
        return None
    return _exactly(sock, struct.unpack(">i", head)[0])


def _exactly(sock: socket.socket, n: int) -> bytes | None:
    out = bytearray()
    while len(out) < n:
        try:
            chunk = sock.recv(n - len(out))
        except (TimeoutError, OSError):
            return None
        if not chunk:
            return None
        out += chunk
    return bytes(out)
