"""``basevolve dashboard`` bad input and the token: one clear line and exit 2, or 401.

Checked on the real command: a missing store, a file that is not a basevolve store, a
port in use, a non-loopback bind without a token and a weak token are refused before
anything is served; with ``--token`` every request without it is rejected.
"""

from __future__ import annotations

import http.client
import socket
import sqlite3

import pytest
from dashboard_support import Dashboard

from basevolve.cli import main
from basevolve.store import RunStore

TOKEN = "t0ken-for-the-dashboard-tests"


def refused(capsys, *args: str) -> str:
    assert main(["dashboard", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("basevolve: error: ") and "\n" not in err and "Traceback" not in err
    return err


@pytest.fixture
def small_store(tmp_path):
    db = tmp_path / "s.sqlite"
    with RunStore(db):
        pass
    return db


def test_bad_stores_are_refused(tmp_path, capsys):
    assert "does not exist" in refused(capsys, "--store", str(tmp_path / "missing.sqlite"))
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    assert "not a basevolve store" in refused(capsys, "--store", str(text))
    foreign = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    before = foreign.read_bytes()
    assert "not a basevolve store" in refused(capsys, "--store", str(foreign))
    assert foreign.read_bytes() == before
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    assert "not a basevolve store" in refused(capsys, "--store", str(empty))
    assert "is a directory" in refused(capsys, "--store", str(tmp_path))


def test_port_in_use_and_bad_port(small_store, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        err = refused(capsys, "--store", str(small_store), "--port", str(port))
    assert f"port {port}" in err and "in use" in err
    assert "not a TCP port" in refused(capsys, "--store", str(small_store), "--port", "70000")


def test_non_loopback_needs_a_strong_token(small_store, capsys):
    err = refused(capsys, "--store", str(small_store), "--host", "0.0.0.0")
    assert "token" in err and "--token auto" in err
    assert "at least 16" in refused(capsys, "--store", str(small_store), "--host", "0.0.0.0",
                                    "--token", "short")
    assert "only letters" in refused(capsys, "--store", str(small_store), "--token",
                                     "has spaces and ; semicolons")


def request(port: int, path: str, headers: dict | None = None):
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        con.request("GET", path, headers=headers or {})
        res = con.getresponse()
        return res.status, dict(res.getheaders()), res.read()
    finally:
        con.close()


def test_token_is_required_on_every_request(small_store):
    d = Dashboard(small_store, "--host", "0.0.0.0", "--token", TOKEN)
    try:
        assert d.url.endswith(f"/?token={TOKEN}")
        for path in ("/", "/api/runs", "/static/common.js", "/api/events", "/nope"):
            status, headers, body = request(d.port, path)
            assert status == 401 and b"token" in body, path
            assert "content-security-policy" in headers
        assert request(d.port, "/api/runs", {"Authorization": "Bearer wrong-token-xxxxxxxx"})[0] == 401
        assert request(d.port, "/api/runs", {"Cookie": "bv_token=wrong"})[0] == 401
        assert request(d.port, "/api/runs?token=wrong")[0] == 401
        assert request(d.port, "/api/runs", {"Authorization": f"Bearer {TOKEN}"})[0] == 200
        status, headers, _ = request(d.port, f"/api/runs?size=25&token={TOKEN}")
        assert status == 303 and headers["location"] == "/api/runs?size=25"
        assert headers["set-cookie"].startswith(f"bv_token={TOKEN};")
        assert "HttpOnly" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
        assert request(d.port, "/api/runs", {"Cookie": f"bv_token={TOKEN}"})[0] == 200
        # with a token the Host check is off (a LAN name is the point of binding 0.0.0.0)
        assert request(d.port, "/api/runs", {"Authorization": f"Bearer {TOKEN}",
                                             "Host": "lab-box:8765"})[0] == 200
    finally:
        d.close()


def test_token_auto_prints_a_generated_token(small_store):
    d = Dashboard(small_store, "--token", "auto")
    try:
        token = d.url.split("?token=")[1]
        assert len(token) >= 16
        assert request(d.port, "/api/runs")[0] == 401
        assert request(d.port, "/api/runs", {"Authorization": f"Bearer {token}"})[0] == 200
    finally:
        d.close()
