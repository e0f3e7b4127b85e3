"""Downloading a SuiteSparse archive: a server that cannot be reached fails within the connect
timeout (seconds), not the 60 s read timeout; a reachable one streams the archive."""

from __future__ import annotations

import functools
import http.server
import io
import socket
import tarfile
import threading

import pytest

from sparsescope.errors import MatrixNotAvailableError
from sparsescope.matrices import fetch_suitesparse
from sparsescope.matrices import suitesparse as ss

MTX = "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 3\n2 2 4\n"


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARSESCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SPARSESCOPE_OFFLINE", raising=False)
    return tmp_path / "cache" / "suitesparse"


def test_unreachable_server_fails_within_the_connect_timeout(cache, monkeypatch):
    timeouts = []

    def blackhole(address, timeout=None, **kwargs):
        timeouts.append((address, timeout))
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", blackhole)
    monkeypatch.setattr(ss.urllib.request, "urlopen",
                        lambda *a, **k: pytest.fail("the download started"))
    with pytest.raises(MatrixNotAvailableError, match="cannot download Williams/cant"):
        fetch_suitesparse("Williams/cant")
    host = ss.BASE_URL.split("/")[2]
    assert timeouts == [((host, 443), ss.CONNECT_TIMEOUT_S)] and ss.CONNECT_TIMEOUT_S <= 5
    assert not list(cache.rglob("*.part"))  # nothing half-written is left


def _archive(name: str) -> bytes:
    data, buffer = MTX.encode(), io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo(f"{name}/{name}.mtx")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_reachable_server_streams_the_archive(cache, monkeypatch, tmp_path):
    served = tmp_path / "www" / "Grp"
    served.mkdir(parents=True)
    (served / "tiny.tar.gz").write_bytes(_archive("tiny"))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler,
                                directory=str(tmp_path / "www"))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        monkeypatch.setattr(ss, "BASE_URL", f"http://127.0.0.1:{server.server_port}")
        try:
            path = fetch_suitesparse("Grp/tiny")
        finally:
            server.shutdown()
    assert path == cache / "Grp" / "tiny" / "tiny.mtx" and path.read_text() == MTX
