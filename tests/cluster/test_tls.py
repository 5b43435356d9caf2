"""cluster/tls.py: one context per endpoint from bytes, no key material written anywhere, bad material in one
line, and a real TLS server (Python's ssl) that requires the client certificate accepts it."""

from __future__ import annotations

import os
import socket
import ssl
import threading

import pytest

from rlark_tui.cluster import tls
from tests.cluster.test_server_access import pem_pair


def test_context_from_bytes_writes_nothing_and_its_server_only_twin_is_made_once(tmp_path, monkeypatch):
    crt, key = pem_pair(tmp_path, "client")
    ca = open(crt, "rb").read()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    one = tls.client_context(ca, open(crt, "rb").read(), open(key, "rb").read())
    assert one.verify_mode == ssl.CERT_REQUIRED and one.check_hostname
    twin = tls.server_only(one)
    assert twin.cert_store_stats()["x509"] == 1 and twin is not one and tls.server_only(one) is twin
    assert twin.verify_mode == ssl.CERT_REQUIRED and tls.server_only(twin) is twin
    assert os.listdir(tmp_path / "tmp") == []


def test_bad_material_is_one_line(tmp_path):
    crt, key = pem_pair(tmp_path, "client")
    other_key = pem_pair(tmp_path, "other")[1]
    cert = open(crt, "rb").read()
    with pytest.raises(tls.TLSError, match="^x: its key does not match the certificate$"):
        tls.client_context(None, cert, open(other_key, "rb").read(), what="x")
    (tmp_path / "bin.key").write_bytes(bytes(range(256)))
    with pytest.raises(tls.TLSError, match=r"^client key \(--client-key\) /.*bin.key: binary data, not a PEM file"):
        tls.read_pem(str(tmp_path / "bin.key"), "client key (--client-key)")
    with pytest.raises(tls.TLSError, match=r"^CA \(--ca-cert\) /dev/null: the file is empty"):
        tls.read_pem("/dev/null", "CA (--ca-cert)")
    with pytest.raises(tls.TLSError, match=r"^CA \(--ca-cert\) /nonexistent.pem: no such file$"):
        tls.read_pem("/nonexistent.pem", "CA (--ca-cert)")


def test_the_client_certificate_reaches_a_server_that_requires_it(tmp_path):
    crt, key = pem_pair(tmp_path, "localhost")
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(crt, key)
    server.load_verify_locations(crt)
    server.verify_mode = ssl.CERT_REQUIRED
    listener = socket.create_server(("127.0.0.1", 0))
    seen = {}

    def serve():
        conn, _ = listener.accept()
        with server.wrap_socket(conn, server_side=True) as wrapped:
            seen["peer"] = wrapped.getpeercert()["subject"]
            wrapped.sendall(b"ok")

    thread = threading.Thread(target=serve)
    thread.start()
    client = tls.client_context(open(crt, "rb").read(), open(crt, "rb").read(), open(key, "rb").read())
    with socket.create_connection(listener.getsockname()) as raw, \
            client.wrap_socket(raw, server_hostname="localhost") as wrapped:
        assert wrapped.recv(2) == b"ok"
    thread.join(5)
    listener.close()
    assert seen["peer"] == ((("commonName", "localhost"),),)


def test_a_socks_proxy_url_without_pysocks_is_one_line(tmp_path):
    """A kubeconfig's `proxy-url: socks5://...` where PySocks is missing: one line naming it, no traceback (the
    `kubernetes` client's own pool would import it first)."""
    import importlib.util

    import yaml

    from rlark_tui.cluster import kubeconfig as kc
    if importlib.util.find_spec("socks") is not None:
        pytest.skip("PySocks is installed")
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", "proxy-url": "socks5://127.0.0.1:9"}}],
        "users": [{"name": "c", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "c"}}]}))
    with pytest.raises(kc.UsageError, match=r"^proxy-url socks5://127\.0\.0\.1:9: a SOCKS proxy needs the PySocks"):
        kc.api_client(kc.load(str(path)), "c")
