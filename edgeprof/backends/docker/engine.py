"""The Docker Engine API, spoken over the daemon's socket with the standard library alone.

Written by hand because the Docker SDK's import (``requests``, ``urllib3``, and
``http.client`` with the ``email`` package) took 88 ms (``-X importtime``), and a run asked
the daemon for ``/version`` first: one container run took 632 ms with the SDK and 457 ms with
this module, against 237 ms for ``docker run --rm`` (``benchmarks/README.md``).  This module
adds nothing to import but ``socket`` and ``json``.
It speaks the calls edgeprof makes and no more: HTTP/1.1, one connection a call
(``Connection: close``: a local socket connects in microseconds), bodies by length, chunked or
to the end, and the upgraded stream of ``attach``.  Paths carry no API version: the daemon
then answers in its own, as ``docker`` does after negotiating it.

``DOCKER_HOST``: ``unix://PATH`` (default ``/var/run/docker.sock``) or ``tcp://HOST:PORT``,
with TLS where ``DOCKER_TLS_VERIFY`` is set (``DOCKER_CERT_PATH``'s ``ca.pem``, ``cert.pem``,
``key.pem``, as the docker CLI reads them).  ``ssh://`` is refused with a way round it.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

DEFAULT_SOCKET = "/var/run/docker.sock"
CALL_TIMEOUT_S = 60.0
"""A call's read timeout; ``wait`` passes its own, and streams (build, attach) have none."""
_OWN = -1.0
"""A call's ``timeout`` meaning the engine's own (``None`` is no timeout at all)."""
_MAX_HEADER = 64 * 1024


class DaemonError(Exception):
    """The daemon said no (``status``: the HTTP status) or could not be spoken to (``None``)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class NotFound(DaemonError):
    """404: no such container or image."""


class Unreachable(DaemonError):
    """No daemon at the address (no socket, refused, reset)."""


class CallTimeout(DaemonError):
    """The daemon did not answer within the call's timeout."""


class Address:
    """Where the daemon listens, parsed from ``DOCKER_HOST``-style text."""

    def __init__(self, url: str | None, env: Mapping[str, str] = os.environ) -> None:
        url = url or env.get("DOCKER_HOST") or f"unix://{DEFAULT_SOCKET}"
        self.url = url
        parts = urlsplit(url)
        self.tls_dir: str | None = None
        if parts.scheme in ("unix", "npipe") or (not parts.scheme and url.startswith("/")):
            if parts.scheme == "npipe":
                raise Unreachable(f"{url}: Windows named pipes are not supported")
            self.unix: str | None = parts.path or url
            self.host, self.port = "localhost", 0
        elif parts.scheme in ("tcp", "http", "https"):
            self.unix = None
            tls = parts.scheme == "https" or env.get("DOCKER_TLS_VERIFY", "") not in ("", "0")
            self.host = parts.hostname or "localhost"
            self.port = parts.port or (2376 if tls else 2375)
            if tls:
                self.tls_dir = env.get("DOCKER_CERT_PATH") or os.path.expanduser("~/.docker")
        elif parts.scheme == "ssh":
            raise Unreachable(
                f"{url}: ssh:// is not supported; forward the daemon's socket "
                "(ssh -nNT -L /tmp/docker.sock:/var/run/docker.sock HOST) and set "
                "DOCKER_HOST=unix:///tmp/docker.sock"
            )
        else:
            raise Unreachable(f"{url}: not a Docker address (unix://PATH or tcp://HOST:PORT)")

    @property
    def local(self) -> bool:
        """This host's daemon: its socket, or TCP to the loopback."""
        return self.unix is not None or self.host in ("localhost", "127.0.0.1", "::1")

    def connect(self, timeout: float | None) -> socket.socket:
        try:
            if self.unix is not None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(timeout)
                try:
                    sock.connect(self.unix)
                except BaseException:
                    sock.close()
                    raise
                return sock
            sock = socket.create_connection((self.host, self.port), timeout=timeout)
            if self.tls_dir is not None:
                sock = _tls(sock, self.host, self.tls_dir)
            return sock
        except TimeoutError as exc:
            raise CallTimeout(f"cannot connect to {self.url}: timed out") from exc
        except OSError as exc:
            raise Unreachable(f"cannot connect to {self.url}: {exc.strerror or exc}") from exc


def _tls(sock: socket.socket, host: str, cert_dir: str) -> socket.socket:
    import ssl  # only for a TLS daemon: ~5 ms to import

    ctx = ssl.create_default_context(cafile=os.path.join(cert_dir, "ca.pem"))
    ctx.load_cert_chain(os.path.join(cert_dir, "cert.pem"), os.path.join(cert_dir, "key.pem"))
    try:
        return ctx.wrap_socket(sock, server_hostname=host)
    except BaseException:
        sock.close()
        raise


class _Reader:
    """Buffered reads of one response from a socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    def _fill(self) -> bool:
        try:
            chunk = self.sock.recv(65536)
        except TimeoutError as exc:
            raise CallTimeout("the Docker daemon did not answer in time") from exc
        except OSError as exc:
            raise Unreachable(f"lost the Docker daemon: {exc.strerror or exc}") from exc
        self.buf += chunk
        return bool(chunk)

    def line(self) -> bytes:
        while (end := self.buf.find(b"\r\n")) < 0:
            if len(self.buf) > _MAX_HEADER or not self._fill():
                raise Unreachable("the Docker daemon closed the connection mid-response")
        out = bytes(self.buf[:end])
        del self.buf[: end + 2]
        return out

    def exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            if not self._fill():
                raise Unreachable("the Docker daemon closed the connection mid-response")
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def some(self) -> bytes:
        """What is buffered, else the next read; ``b""`` at the end of the stream."""
        if not self.buf and not self._fill():
            return b""
        out = bytes(self.buf)
        self.buf.clear()
        return out


class _Response:
    def __init__(self, sock: socket.socket) -> None:
        self.reader = _Reader(sock)
        status_line = self.reader.line().decode("latin-1")
        try:
            self.status = int(status_line.split()[1])
        except (IndexError, ValueError):
            raise DaemonError(f"not an HTTP response: {status_line[:80]!r}") from None
        self.headers: dict[str, str] = {}
        while line := self.reader.line():
            name, _, value = line.decode("latin-1").partition(":")
            self.headers[name.strip().lower()] = value.strip()

    def chunks(self) -> Iterator[bytes]:
        """The body, as it arrives."""
        r = self.reader
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            while size := _chunk_size(r.line()):
                yield r.exact(size)
                r.line()
            return
        length = self.headers.get("content-length")
        if length is not None:
            left = int(length)
            while left > 0:
                data = r.some()
                if not data:
                    raise Unreachable("the Docker daemon closed the connection mid-response")
                yield data[:left]
                left -= len(data)
            return
        while data := r.some():  # to the end (an upgraded stream, or no length given)
            yield data

    def body(self) -> bytes:
        return b"".join(self.chunks())


def _json_lines(chunks: Iterator[bytes]) -> Iterator[dict[str, Any]]:
    """A stream of JSON messages, one a line (build progress)."""
    pending = b""
    for data in chunks:
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield _message(line)
    if pending.strip():
        yield _message(pending)


def _message(line: bytes) -> dict[str, Any]:
    try:
        return dict(json.loads(line))
    except (ValueError, TypeError):
        raise DaemonError(f"not a JSON message from the daemon: {line[:80]!r}") from None


def _chunk_size(line: bytes) -> int:
    try:
        return int(line.split(b";")[0], 16)
    except ValueError:
        raise DaemonError(f"not an HTTP chunk header: {line[:40]!r}") from None


def _frames(chunks: Iterator[bytes]) -> Iterator[tuple[int, bytes]]:
    """The multiplexed output of a container without a terminal: frames of an 8-byte header
    (stream: 1 stdout, 2 stderr; 3 zero bytes; the length, big-endian) and the data."""
    buf = bytearray()  # appended in place and cut once a read: linear in the output
    for data in chunks:
        buf += data
        start = 0
        while len(buf) - start >= 8:
            end = start + 8 + int.from_bytes(buf[start + 4 : start + 8], "big")
            if len(buf) < end:
                break
            yield buf[start], bytes(buf[start + 8 : end])
            start = end
        del buf[:start]


class Engine:
    """A client of one daemon.  Every method raises :class:`DaemonError` (its subclasses
    :class:`NotFound`, :class:`Unreachable`, :class:`CallTimeout`) and nothing else."""

    def __init__(self, base_url: str | None = None, timeout: float = CALL_TIMEOUT_S) -> None:
        self.address = Address(base_url)
        self.timeout = timeout

    @property
    def local(self) -> bool:
        return self.address.local

    def _open(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        body: bytes | None = None,
        *,
        content_type: str = "application/json",
        timeout: float | None = _OWN,
        upgrade: bool = False,
    ) -> tuple[socket.socket, _Response]:
        """Send one request; the socket and the response, its headers read.  A status of 400
        or more raises, with the daemon's message."""
        if query:
            path += "?" + urlencode({k: _param(v) for k, v in query.items() if v is not None})
        head = [f"{method} {path} HTTP/1.1", "Host: docker", "User-Agent: edgeprof"]
        if upgrade:
            head += ["Connection: Upgrade", "Upgrade: tcp"]
        else:
            head.append("Connection: close")
        if body is not None:
            head += [f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
        sock = self.address.connect(self.timeout if timeout == _OWN else timeout)
        try:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b""))
            resp = _Response(sock)
            if resp.status >= 400:
                raise _error(resp)
        except TimeoutError as exc:  # sending: reads raise CallTimeout themselves
            sock.close()
            raise CallTimeout("the Docker daemon did not take the request in time") from exc
        except OSError as exc:  # a reset or a broken pipe while sending
            sock.close()
            raise Unreachable(f"lost the Docker daemon: {exc.strerror or exc}") from exc
        except BaseException:
            sock.close()
            raise
        return sock, resp

    def call(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        payload: Any = None,
        *,
        timeout: float | None = _OWN,
    ) -> Any:
        """One call; its JSON answer (``None`` when the body is empty)."""
        body = None if payload is None else json.dumps(payload).encode()
        sock, resp = self._open(method, path, query, body, timeout=timeout)
        with sock:
            data = resp.body()
        if not data.strip():
            return None
        try:
            return json.loads(data)
        except ValueError:
            return data.decode(errors="replace")

    # -- the calls edgeprof makes ------------------------------------------------------------

    def ping(self) -> None:
        self.call("GET", "/_ping")

    def info(self) -> dict[str, Any]:
        return dict(self.call("GET", "/info"))

    def version(self) -> dict[str, Any]:
        return dict(self.call("GET", "/version"))

    def image(self, ref: str) -> dict[str, Any]:
        """The image's inspection; :class:`NotFound` when the daemon has none of that name."""
        return dict(self.call("GET", f"/images/{quote(ref, safe='/:@')}/json"))

    def images(self, label: str) -> list[dict[str, Any]]:
        return list(self.call("GET", "/images/json", {"filters": {"label": [label]}}))

    def remove_image(self, image_id: str) -> None:
        self.call("DELETE", f"/images/{quote(image_id, safe=':')}", {"force": True})

    def build(self, context: bytes, query: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """Build from a tar ``context``: the daemon's progress messages, as they come."""
        sock, resp = self._open(
            "POST", "/build", query, context, content_type="application/x-tar", timeout=None
        )
        with sock:
            yield from _json_lines(resp.chunks())

    def containers(self, label: str) -> list[dict[str, Any]]:
        """Every container with ``label`` (``KEY=VALUE``), running or not."""
        filters = {"label": [label]}
        return list(self.call("GET", "/containers/json", {"all": True, "filters": filters}))

    def create(self, name: str, config: Mapping[str, Any]) -> str:
        """A new container; its id."""
        return str(self.call("POST", "/containers/create", {"name": name}, dict(config))["Id"])

    def attach(self, cid: str) -> Iterator[tuple[int, bytes]]:
        """The container's output from its start, (stream, data) as it comes, until it ends.
        The connection is made here; the frames are read as the iterator is consumed."""
        query = {"stream": True, "stdout": True, "stderr": True, "logs": True}
        sock, resp = self._open(
            "POST", f"/containers/{cid}/attach", query, timeout=None, upgrade=True
        )

        def frames() -> Iterator[tuple[int, bytes]]:
            with sock:  # upgraded (101): the raw stream follows, to the connection's end
                yield from _frames(resp.chunks())

        return frames()

    def start(self, cid: str) -> None:
        self.call("POST", f"/containers/{cid}/start")

    def inspect(self, cid: str) -> dict[str, Any]:
        return dict(self.call("GET", f"/containers/{cid}/json"))

    def wait(self, cid: str, timeout: float) -> int | None:
        """The container's exit status once it ends, or ``None`` after ``timeout`` seconds."""
        try:
            res = self.call("POST", f"/containers/{cid}/wait", timeout=timeout)
        except CallTimeout:
            return None
        return int(res.get("StatusCode", -1))

    def kill(self, cid: str, signal: str | None = None) -> None:
        self.call("POST", f"/containers/{cid}/kill", {"signal": signal})

    def remove(self, cid: str) -> None:
        """Force-remove the container and its anonymous volumes."""
        self.call("DELETE", f"/containers/{cid}", {"force": True, "v": True})

    def stats(self, cid: str) -> dict[str, Any]:
        """One reading of the stats API (no stream, no second reading for the CPU share)."""
        return dict(
            self.call("GET", f"/containers/{cid}/stats", {"stream": False, "one-shot": True})
        )


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _error(resp: _Response) -> DaemonError:
    """The daemon's ``{"message": …}`` as an error of the status's kind."""
    try:
        data = resp.body()
    except DaemonError:
        data = b""
    try:
        message = str(json.loads(data).get("message") or "")
    except (ValueError, AttributeError):
        message = data.decode(errors="replace").strip()
    message = message or f"HTTP {resp.status}"
    kind = NotFound if resp.status == 404 else DaemonError
    return kind(message, resp.status)
