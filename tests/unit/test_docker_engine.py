"""edgeprof's Docker Engine API client (edgeprof.backends.docker.engine) against a scripted
daemon: a real unix socket speaking HTTP/1.1 the way dockerd does (lengths, chunks, the
upgraded stream of attach, errors as ``{"message": …}``).  dockerd itself answers it in the
docker tier."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from edgeprof.backends.docker.engine import (
    Address,
    CallTimeout,
    DaemonError,
    Engine,
    NotFound,
    Unreachable,
)


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


Reply = Callable[[Request], list[bytes]]


def respond(status: int, body: bytes = b"", headers: tuple[str, ...] = ()) -> list[bytes]:
    head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", *headers]
    return [("\r\n".join(head) + "\r\n\r\n").encode() + body]


def chunked(parts: list[bytes]) -> list[bytes]:
    """A chunked body, each chunk written on its own (a reader sees them arrive apart)."""
    out = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"]
    out += [b"%x\r\n%s\r\n" % (len(p), p) for p in parts]
    return [*out, b"0\r\n\r\n"]


@dataclass
class FakeDaemon:
    """Serves each connection with ``reply(request)``'s pieces, then closes it; a reply of
    ``[]`` holds the connection open until the test ends (a wait that never ends)."""

    sock_path: Path
    reply: Reply
    requests: list[Request] = field(default_factory=list)
    _held: list[socket.socket] = field(default_factory=list)

    def serve(self, server: socket.socket) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            method, target, _ = lines[0].split(" ")
            headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
            while len(body) < int(headers.get("content-length", 0)):
                body += conn.recv(65536)
            url = urlsplit(target)
            req = Request(method, url.path, parse_qs(url.query), headers, body)
            self.requests.append(req)
            pieces = self.reply(req)
            if not pieces:
                self._held.append(conn)
                continue
            # A client may hang up before the reply's end (it read what it needed, or gave
            # up): as a daemon, go on serving (a BrokenPipeError here killed the thread).
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                for piece in pieces:
                    conn.sendall(piece)
            conn.close()


StartDaemon = Callable[[Reply], tuple[Engine, FakeDaemon]]


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[StartDaemon]:
    servers: list[socket.socket] = []
    fakes: list[FakeDaemon] = []

    def start(reply: Reply) -> tuple[Engine, FakeDaemon]:
        path = tmp_path / f"d{len(servers)}.sock"
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(path))
        server.listen(8)
        servers.append(server)
        fake = FakeDaemon(path, reply)
        fakes.append(fake)
        threading.Thread(target=fake.serve, args=(server,), daemon=True).start()
        return Engine(f"unix://{path}", timeout=5), fake

    yield start
    for s in servers:
        s.close()
    for f in fakes:
        for c in f._held:
            c.close()


# -- addresses -------------------------------------------------------------------------------


def test_the_address_comes_from_the_argument_then_docker_host_then_the_local_socket() -> None:
    assert Address(None, env={}).unix == "/var/run/docker.sock"
    assert Address(None, env={"DOCKER_HOST": "unix:///run/d.sock"}).unix == "/run/d.sock"
    assert Address("unix:///a.sock", env={"DOCKER_HOST": "unix:///b.sock"}).unix == "/a.sock"
    tcp = Address("tcp://10.0.0.5", env={})
    assert (tcp.unix, tcp.host, tcp.port, tcp.tls_dir, tcp.local) == (
        None, "10.0.0.5", 2375, None, False,
    )  # fmt: skip
    tls = Address("tcp://box:3000", env={"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": "/c"})
    assert (tls.port, tls.tls_dir) == (3000, "/c")
    assert Address("tcp://127.0.0.1:2375", env={}).local and Address(None, env={}).local


@pytest.mark.parametrize(
    ("url", "says"), [("ssh://me@box", "ssh -nNT -L"), ("ftp://x", "not a Docker address")]
)
def test_an_address_edgeprof_cannot_speak_to_says_so(url: str, says: str) -> None:
    with pytest.raises(Unreachable, match=says):
        Address(url, env={})


def test_no_daemon_at_the_socket_is_unreachable(tmp_path: Path) -> None:
    with pytest.raises(Unreachable, match="cannot connect to unix://"):
        Engine(f"unix://{tmp_path}/none.sock").ping()


# -- calls -----------------------------------------------------------------------------------


def test_a_call_sends_its_query_and_json_body_and_decodes_the_answer(daemon: StartDaemon) -> None:
    engine, fake = daemon(lambda r: respond(201, b'{"Id": "abc", "Warnings": []}'))
    config = {"Image": "busybox", "HostConfig": {"Memory": 64 << 20}}
    assert engine.create("edgeprof-1-2-deadbeef", config) == "abc"
    (req,) = fake.requests
    assert (req.method, req.path, req.query) == (
        "POST", "/containers/create", {"name": ["edgeprof-1-2-deadbeef"]},
    )  # fmt: skip
    assert json.loads(req.body) == config and req.headers["content-type"] == "application/json"
    assert req.headers["connection"] == "close"


def test_booleans_and_filters_are_encoded_as_the_api_reads_them(daemon: StartDaemon) -> None:
    engine, fake = daemon(lambda r: respond(200, b'[{"Id": "c1", "Labels": {"a": "1"}}]'))
    assert engine.containers("a=1") == [{"Id": "c1", "Labels": {"a": "1"}}]
    assert fake.requests[0].query == {"all": ["1"], "filters": ['{"label": ["a=1"]}']}
    engine.remove("c1")
    assert fake.requests[1].method == "DELETE" and fake.requests[1].query == {
        "force": ["1"], "v": ["1"],
    }  # fmt: skip


def test_an_empty_answer_is_none_and_a_chunked_one_is_joined(daemon: StartDaemon) -> None:
    answers = iter([respond(204), chunked([b'{"NCPU"', b": 16, ", b'"MemTotal": 7}'])])
    engine, _ = daemon(lambda r: next(answers))
    engine.start("c1")
    assert engine.info() == {"NCPU": 16, "MemTotal": 7}


@pytest.mark.parametrize(
    ("status", "kind"), [(404, NotFound), (409, DaemonError), (500, DaemonError)]
)
def test_an_error_status_raises_with_the_daemons_message(
    daemon: StartDaemon, status: int, kind: type[DaemonError]
) -> None:
    engine, _ = daemon(lambda r: respond(status, b'{"message": "No such image: x:1"}'))
    with pytest.raises(kind, match="No such image: x:1") as caught:
        engine.image("x:1")
    assert caught.value.status == status


def test_a_response_cut_short_is_a_lost_daemon(daemon: StartDaemon) -> None:
    engine, _ = daemon(lambda r: [b'HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{"Id"'])
    with pytest.raises(Unreachable, match="closed the connection"):
        engine.inspect("c1")


def test_wait_gives_the_exit_status_or_none_when_its_time_runs_out(daemon: StartDaemon) -> None:
    engine, _ = daemon(
        lambda r: respond(200, b'{"StatusCode": 137}') if r.path.startswith("/containers/a/")
        else [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"]  # exits later
    )  # fmt: skip
    assert engine.wait("a", timeout=5) == 137
    engine_b, fake_b = daemon(lambda r: [])  # never answers
    assert engine_b.wait("b", timeout=0.05) is None
    assert fake_b.requests[0].path == "/containers/b/wait"


def test_a_call_that_gets_no_answer_in_time_raises(daemon: StartDaemon) -> None:
    engine, _ = daemon(lambda r: [])
    engine.timeout = 0.05
    with pytest.raises(CallTimeout):
        engine.info()


def test_attach_upgrades_and_splits_the_multiplexed_stream(daemon: StartDaemon) -> None:
    def frame(kind: int, data: bytes) -> bytes:
        return bytes([kind, 0, 0, 0]) + len(data).to_bytes(4, "big") + data

    stream = frame(1, b"hello\n") + frame(2, b"oops\n") + frame(1, b"x" * 70000)
    pieces = [b"HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"]
    pieces += [stream[i : i + 5] for i in range(0, 40, 5)] + [stream[40:]]  # headers split
    engine, fake = daemon(lambda r: pieces)
    got = list(engine.attach("c1"))
    assert got == [(1, b"hello\n"), (2, b"oops\n"), (1, b"x" * 70000)]
    req = fake.requests[0]
    assert req.headers["upgrade"] == "tcp" and req.query["logs"] == ["1"]


def test_build_sends_the_tar_and_yields_each_progress_message(daemon: StartDaemon) -> None:
    lines = b'{"stream": "Step 1/2 : FROM x\\n"}\n{"stream": "ok"}\n{"error": "boom"}\n'
    engine, fake = daemon(lambda r: chunked([lines[:10], lines[10:33], lines[33:]]))
    got = list(engine.build(b"TAR", {"t": "img:1", "rm": True, "labels": {"k": "v"}}))
    assert got == [{"stream": "Step 1/2 : FROM x\n"}, {"stream": "ok"}, {"error": "boom"}]
    req = fake.requests[0]
    assert req.body == b"TAR" and req.headers["content-type"] == "application/x-tar"
    assert req.query == {"t": ["img:1"], "rm": ["1"], "labels": ['{"k": "v"}']}


# -- TLS -------------------------------------------------------------------------------------


TLS_DIR = Path(__file__).resolve().parent / "tls"
"""A test CA, a server certificate for 127.0.0.1 and a client's (see its README.md)."""


def test_a_tls_daemon_is_spoken_to_with_the_cert_paths_client_certificate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DOCKER_TLS_VERIFY and DOCKER_CERT_PATH, as the docker CLI reads them: the daemon's
    certificate is checked against ca.pem, and the client shows cert.pem (the daemon asks)."""
    import ssl

    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(TLS_DIR / "ca.pem"))
    ctx.load_cert_chain(TLS_DIR / "server.pem", TLS_DIR / "server-key.pem")
    ctx.verify_mode = ssl.CERT_REQUIRED
    server = ctx.wrap_socket(socket.create_server(("127.0.0.1", 0)), server_side=True)
    fake = FakeDaemon(tmp_path / "unused", lambda r: respond(200, b'{"NCPU": 3}'))
    threading.Thread(target=fake.serve, args=(server,), daemon=True).start()
    port = server.getsockname()[1]
    try:
        monkeypatch.setenv("DOCKER_TLS_VERIFY", "1")
        monkeypatch.setenv("DOCKER_CERT_PATH", str(TLS_DIR))
        engine = Engine(f"tcp://127.0.0.1:{port}", timeout=10)
        assert engine.address.tls_dir == str(TLS_DIR) and engine.local  # the loopback
        assert engine.info() == {"NCPU": 3}
        assert fake.requests[0].path == "/info"
        # Without DOCKER_TLS_VERIFY the client speaks plain HTTP: the TLS daemon drops it.
        monkeypatch.delenv("DOCKER_TLS_VERIFY")
        with pytest.raises(DaemonError):
            Engine(f"tcp://127.0.0.1:{port}", timeout=10).info()
    finally:
        server.close()


def test_a_garbled_stream_is_the_daemons_error_not_a_crash(daemon: StartDaemon) -> None:
    engine, _ = daemon(lambda r: chunked([b'{"stream": "ok"}\n', b"<html>proxy error</html>\n"]))
    stream = engine.build(b"TAR", {"t": "img:1"})
    assert next(stream) == {"stream": "ok"}
    with pytest.raises(DaemonError, match="not a JSON message"):
        next(stream)
    engine2, _ = daemon(lambda r: [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"])
    with pytest.raises(DaemonError, match="not an HTTP chunk header"):
        engine2.info()
