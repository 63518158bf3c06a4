"""CutProxy: a TCP proxy of ours on 127.0.0.1 in front of a database, which cuts the network
between the client and the server (tools/faults' network fault, tests/test_errors.py). What the
client sees does not depend on the server behind it."""
import socket
import threading
import time

HOST = "127.0.0.1"


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class CutProxy:
    """A TCP proxy on 127.0.0.1 in front of a server. drop(seconds) is a network failure:
    every connection through it is cut at once and new ones are refused (the listening socket
    is closed) for that long, then it listens again on the same port."""

    def __init__(self, target_port):
        self.target = target_port
        self.port = free_port()
        self.pairs = []
        self.lock = threading.Lock()
        self.srv = None
        self.closed = False
        self._listen()

    def _listen(self):
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind((HOST, self.port))
        self.srv.listen(512)
        threading.Thread(target=self._accept, args=(self.srv,), daemon=True).start()

    def _accept(self, srv):
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            try:
                u = socket.create_connection((HOST, self.target), timeout=5)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.pairs.append((c, u))
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for c, u in pairs:
            for s in (c, u):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                    s.close()
                except OSError:
                    pass
        return len(pairs)

    def refuse(self):
        # shutdown wakes the thread blocked in accept(); a bare close() would leave the
        # listening socket alive (and accepting) under it
        try:
            self.srv.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.srv.close()

    def listen(self):
        if not self.closed:
            self._listen()

    def drop(self, seconds):
        self.refuse()
        n = self.cut()
        time.sleep(seconds)
        self.listen()
        return n

    def close(self):
        self.closed = True
        self.refuse()
        self.cut()
