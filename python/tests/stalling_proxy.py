"""A TCP proxy to Redis for fault tests: connections held back, cut or refused on demand."""

from __future__ import annotations

import socket
import threading
import time


def port_of(url: str) -> int:
    """The port of a ``redis://host:port[/db]`` URL."""
    return int(url.rsplit(":", 1)[1].split("/")[0])


class StallingProxy:
    """A TCP proxy to Redis whose connections' requests can be held back one by one (a
    connection stalled in the network while the others pass), in order, until released."""

    def __init__(self, upstream_port: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.upstream_port = upstream_port
        self.stalled: "set[int]" = set()
        self.accepted = 0
        self.refuse = False  # new connections are closed at once
        self.open: "list[socket.socket]" = []
        self.by_number: "dict[int, list[socket.socket]]" = {}
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refuse:
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            with self.lock:
                self.open += [client, upstream]
                self.accepted += 1
                number = self.accepted
                self.by_number[number] = [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, number), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, 0), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, number: int) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                for s in (src, dst):
                    s.close()
                return
            while number in self.stalled:  # held back, then delivered in order
                time.sleep(0.005)
            try:
                dst.sendall(data)
            except OSError:
                return

    def reset_all(self) -> None:
        """Cuts every connection open now (both ends see it closed)."""
        with self.lock:
            cut, self.open = self.open, []
        for s in cut:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self, number: int) -> None:
        """Cuts connection ``number`` (counted from 1, in the order accepted)."""
        with self.lock:
            cut = self.by_number.pop(number, [])
        for s in cut:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.listener.close()
        self.reset_all()


def lose_the_multiplexed_connection_soon(proxy: StallingProxy) -> threading.Timer:
    """In 0.1 s, cuts the multiplexed connection (the proxy's first) and refuses new ones: a
    watchdog renewal (every 0.1 s here) then finds it gone, and the client has no multiplexed
    connection and cannot make one."""

    def lose() -> None:
        proxy.refuse = True
        proxy.cut(1)

    timer = threading.Timer(0.1, lose)
    timer.start()
    return timer
