"""A loopback TCP proxy for fault tests: delays every chunk, or cuts the first connections.

Threads, bounded: :meth:`Proxy.close` stops the listener and every relay it started.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class Proxy:
    def __init__(self, target: tuple[str, int], *, delay_s: float = 0.0,
                 cut_first: int = 0, cut_after_bytes: int = 0, silent: bool = False) -> None:
        self.target = target
        self.delay_s = delay_s
        self.cut_first = cut_first  # how many connections to cut mid-response
        self.cut_after = cut_after_bytes
        self.silent = silent  # accept and never answer (not a Kafka peer)
        self.connections = 0
        self.cuts = 0
        self._stop = threading.Event()
        self._socks: list[socket.socket] = []
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            self._socks.append(client)
            if self.silent:
                continue
            upstream = socket.create_connection(self.target, timeout=5)
            self._socks.append(upstream)
            cut = self.cuts < self.cut_first
            if cut:
                self.cuts += 1
            for a, b, limit in ((client, upstream, 0), (upstream, client,
                                                        self.cut_after if cut else 0)):
                t = threading.Thread(target=self._pipe, args=(a, b, limit), daemon=True)
                t.start()
                self._threads.append(t)

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

    def close(self) -> None:
        self._stop.set()
        for s in [self.listener, *self._socks]:
            with contextlib.suppress(OSError):
                s.close()
        for t in self._threads:
            t.join(timeout=2)
