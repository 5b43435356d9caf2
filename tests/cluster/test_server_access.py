"""Finding rlark-server: flags over config keys, the kubeconfig extension, Lease discovery, and the refusals
(no CA, half a certificate, an expired certificate) as one line each. No network: what is resolved is checked
before any connection."""

from __future__ import annotations

import argparse
import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from rlark_tui.cli import main
from rlark_tui.cluster.errors import Unreachable
from rlark_tui.cluster.http import Http
from rlark_tui.cluster.server import ServerOptions, agent_id, live_lease_ips, resolve
from rlark_tui.errors import UsageError
from rlark_tui.local.config import load_config
from tests import loopback

NOW = datetime.now(UTC)


def pem_pair(tmp_path, name: str, *, days: float = 30, start: datetime | None = None) -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    start = start or NOW - timedelta(days=1)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(start + timedelta(days=days)).sign(key, hashes.SHA256()))
    crt, pem = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    return str(crt), str(pem)


def options(**values) -> ServerOptions:
    values = {key.replace("_", "-"): value for key, value in values.items()}
    return ServerOptions(values, {key: f"--{key}" for key in values})


def lease(name: str, holder, renewed: datetime, seconds=15) -> dict:
    return {"metadata": {"name": name}, "spec": {"holderIdentity": holder, "leaseDurationSeconds": seconds,
                                                "renewTime": renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}}


def test_live_leases_give_only_ips_and_skip_expired_foreign_and_malformed_ones():
    leases = [lease("rlark-server-peer-a", "10.0.0.7/peer-a/sekret-token", NOW),
              lease("rlark-server-peer-b", "10.0.0.8/peer-b/tok", NOW - timedelta(seconds=60)),
              lease("kube-scheduler", "10.0.0.9/x/y", NOW),
              lease("rlark-server-peer-c", "not-an-ip/x/y", NOW),
              lease("rlark-server-peer-d", None, NOW)]
    assert live_lease_ips(leases, NOW) == ["10.0.0.7"]
    assert agent_id("rlark-gpu-a") == "gpu-a" and agent_id("gpu-a") == "gpu-a"


def test_a_leases_renew_time_in_any_shape_is_read_or_skipped_never_raised():
    """issue 33, a sixteenth round, a hostile control plane's Leases: a renewTime without a zone (naive) raised
    TypeError against the aware now, and any command that found rlark-server by its Lease ended in a crash
    report. It is read as every API time is (model.timefmt.parse_time: UTC when it says no zone)."""
    def renewed(text: str, ip: str) -> dict:
        return {"metadata": {"name": f"rlark-server-peer-{ip}"},
                "spec": {"holderIdentity": f"{ip}/p/t", "leaseDurationSeconds": 15, "renewTime": text}}
    stamp = NOW.strftime("%Y-%m-%dT%H:%M:%S")
    leases = [renewed(stamp, "10.0.0.1"), renewed("9999-12-31T23:59:59-23:59", "10.0.0.2"),
              renewed("0001-01-01T00:00:00+23:59", "10.0.0.3"), renewed(stamp + "+99:99", "10.0.0.4"),
              renewed(stamp + ".5+01:00", "10.0.0.5")]
    assert live_lease_ips(leases, NOW) == ["10.0.0.1"]


@pytest.mark.parametrize("secret, leases", [
    ({"data": "client.crt"}, {"items": 5}),
    ({"data": ["client.crt", "client.key"]}, {"items": [{"metadata": 5, "spec": {}}]}),
    ({"data": 5}, {"items": [{"metadata": {"name": "rlark-server-peer-a"}, "spec": "holderIdentity"}]}),
])
def test_an_admin_secret_or_lease_of_the_wrong_shape_is_one_line(secret, leases):
    """issue 33, a twentieth round (generated answers through a mutating proxy), a hostile control plane: the
    Secret rlark-admin-cert whose `data` was a string or a list, a Lease list whose `items` was a number, and a
    Lease whose metadata or spec was not a mapping raised TypeError or AttributeError out of rlark-server's
    discovery, so `rlark logs`, `top`, `exec` and every data-plane read ended in a crash report, and `rlark
    watch`'s alert round printed asyncio's traceback and stopped. Each is the one line that says what to pass."""
    class Plane(loopback.QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.answer(200, json.dumps(secret if "/secrets/" in self.path else leases).encode())

    with loopback.serving(Plane) as url:
        with pytest.raises(Unreachable) as lease:
            resolve(options(), {}, Http(url), "default")
        with pytest.raises(Unreachable) as certificate:
            resolve(options(), {"server": "https://127.0.0.1:9443"}, Http(url), "default")
    assert str(lease.value) == ("no rlark-server address: no live Lease rlark-server-peer-* in namespace default; "
                                "pass --server-address")
    assert str(certificate.value) == ("Secret default/rlark-admin-cert lacks client.crt or client.key; pass "
                                      "--client-cert and --client-key")


def test_flags_give_the_server_and_a_missing_ca_is_refused_naming_both_options(tmp_path):
    crt, key = pem_pair(tmp_path, "admin")
    given = dict(server_address="https://rlark.example:8443", client_cert=crt, client_key=key)
    with pytest.raises(Unreachable) as refused:
        resolve(options(**given), None, None, "default")
    assert str(refused.value) == ("no CA to verify rlark-server https://rlark.example:8443: pass --ca-cert FILE (the "
                                  "platform CA), or --server-insecure-skip-tls-verify to skip verifying it")
    ca, _ = pem_pair(tmp_path, "ca")
    endpoint = resolve(options(**given, ca_cert=ca), None, None, "default")
    assert (endpoint.url, endpoint.verified) == ("https://rlark.example:8443", True)
    assert endpoint.context.cert_store_stats()["x509"] == 1
    assert endpoint.describe() == ("https://rlark.example:8443  [address: --server-address; certificate: "
                                   "--client-cert; CA from --ca-cert]")
    unverified = resolve(options(**given, server_insecure_skip_tls_verify=True), None, None, "default")
    assert unverified.context.cert_store_stats()["x509"] == 0 and "UNVERIFIED" in unverified.describe()


def test_the_kubeconfig_extension_gives_address_and_ca_and_flags_still_win(tmp_path):
    crt, key = pem_pair(tmp_path, "admin")
    ca_pem = pem_pair(tmp_path, "ca")[0]
    extension = {"server": "https://127.0.0.1:9443/",
                 "certificate-authority-data": base64.b64encode(open(ca_pem, "rb").read()).decode()}
    endpoint = resolve(options(client_cert=crt, client_key=key), extension, None, "default")
    assert endpoint.url == "https://127.0.0.1:9443" and endpoint.url_origin == "kubeconfig extension"
    assert endpoint.context.cert_store_stats()["x509"] == 1
    flagged = resolve(options(client_cert=crt, client_key=key, server_address="https://other:8443"),
                      extension, None, "default")
    assert flagged.url == "https://other:8443" and flagged.ca_origin == "kubeconfig extension"


def test_an_expired_certificate_names_its_date(tmp_path):
    start = datetime(2025, 1, 2, 3, 4, tzinfo=UTC)
    crt, key = pem_pair(tmp_path, "old", days=10, start=start)
    ca, _ = pem_pair(tmp_path, "ca")
    with pytest.raises(Unreachable) as expired:
        resolve(options(server_address="https://s:8443", client_cert=crt, client_key=key, ca_cert=ca), None, None,
                "default")
    assert str(expired.value) == ("the client certificate for rlark-server (from --client-cert) expired on "
                                  "2025-01-12 03:04 UTC; get a new one")


def test_flags_win_over_config_keys_and_half_a_certificate_is_a_usage_error(tmp_path, monkeypatch):
    config_file = tmp_path / "config.yaml"
    config_file.write_text("server-address: https://from-config:8443\nclient_cert: /c.crt\nclient-key: /c.key\n"
                           "server-insecure-skip-tls-verify: true\n")
    config = load_config(config_file)
    args = argparse.Namespace(server_address="https://from-flag:8443", client_cert=None, client_key=None,
                              ca_cert=None, server_hostname=None, server_insecure_skip_tls_verify=False)
    merged = ServerOptions.from_sources(args, config)
    assert merged.get("server-address") == "https://from-flag:8443" and merged.get("client-cert") == "/c.crt"
    assert merged.origins["client-cert"] == f"config file {config_file}" and merged.insecure
    assert merged.complete
    with pytest.raises(UsageError, match="^rlark-server needs a certificate and its key: pass --client-cert "
                                         "with --client-key$"):
        ServerOptions.from_sources(argparse.Namespace(client_cert="/x.crt"), load_config(tmp_path / "none.yaml"))


def test_config_shows_gateway_headers_masked_and_rejects_a_bad_server_key(tmp_path, monkeypatch, capsys):
    config_file = tmp_path / "config.yaml"
    monkeypatch.setenv("RLARK_CONFIG", str(config_file))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.setenv("HOME", str(tmp_path))
    crt, key = pem_pair(tmp_path, "admin")
    config_file.write_text(f"gateway: https://gw.example\ngateway_headers:\n  X-Auth-Token: tok-very-secret-1\n"
                           f"server-address: https://127.0.0.1:1\nclient-cert: {crt}\nclient-key: {key}\n"
                           "server-insecure-skip-tls-verify: true\n")
    assert main(["config", "--no-check"]) == 0
    out = capsys.readouterr().out
    assert "tok-very-secret-1" not in out and "  header X-Auth-Token: ***" in out
    assert "kubeconfig:   none (server-only mode: the control plane through rlark-server)" in out
    assert "control plane: https://127.0.0.1:1/api/kubernetes" in out
    assert "gateway:      https://gw.example  [config file; verified against system CAs]" in out
    assert "rlark-server: https://127.0.0.1:1  [address: config file" in out and "UNVERIFIED" in out
    config_file.write_text("server-insecure-skip-tls-verify: yes please\n")
    assert main(["config", "--no-check"]) == 2
    assert capsys.readouterr().err == (f"error: config file {config_file}: `server-insecure-skip-tls-verify` must "
                                       "be true or false\n")


def bare_kubeconfig(sandbox, path) -> str:
    """The sandbox kubeconfig without its rlark.io/server extension (an admin kubeconfig of a real install)."""
    import yaml
    config = yaml.safe_load(sandbox.kubeconfig.read_text())
    for entry in config["clusters"]:
        entry["cluster"].pop("extensions", None)
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return str(path)


def test_discovery_from_the_secret_and_the_lease_with_the_port_of_the_address(sandbox, env, capsys):
    kubeconfig = bare_kubeconfig(sandbox, env / "bare.kubeconfig")
    port = sandbox.server_url.rsplit(":", 1)[1]
    argv = ["--kubeconfig", kubeconfig, "--server-address", f"https://:{port}", "--ca-cert", str(sandbox.ca_path)]
    assert main([*argv, "logs", "demo-ppo", "--role", "actor", "--tail", "1"]) in (0, 1)
    assert main([*argv, "config"]) == 0
    out = capsys.readouterr().out
    assert (f"rlark-server: https://127.0.0.1:{port}  [address: Lease rlark-server-peer-* in default (IP 127.0.0.1); "
            f"certificate: Secret default/rlark-admin-cert; CA from --ca-cert]") in out
    assert "  ok    data plane rlark-gpu-a (" in out and "/api/proxy/gpu-a/api/kubernetes): " in out
    assert "holderIdentity" not in out and out.count("127.0.0.1/") == 0


def test_an_unreachable_discovered_address_says_pass_server_address(sandbox, env, capsys):
    kubeconfig = bare_kubeconfig(sandbox, env / "bare.kubeconfig")
    assert main(["--kubeconfig", kubeconfig, "--ca-cert", str(sandbox.ca_path), "config"]) == 0
    out = capsys.readouterr().out
    failed = [line for line in out.splitlines() if line.startswith("  FAIL  data plane rlark-gpu-a")]
    assert len(failed) == 1 and "127.0.0.1:8443" in failed[0] and "pass --server-address" in failed[0], out


def test_server_only_mode_reaches_the_control_plane_through_api_kubernetes(sandbox, env, tmp_path, capsys,
                                                                          monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    crt, key = sandbox.issue_client_cert({"cert-role": "admin", "permission:admin": "true",
                                          "kubernetes-impersonation": "-"})
    (tmp_path / "c.crt").write_bytes(crt)
    (tmp_path / "c.key").write_bytes(key)
    argv = ["--server-address", sandbox.server_url, "--client-cert", str(tmp_path / "c.crt"),
            "--client-key", str(tmp_path / "c.key"), "--ca-cert", str(sandbox.ca_path)]
    assert main([*argv, "get", "jobs"]) == 0
    assert "demo-ppo" in capsys.readouterr().out
    assert main([*argv, "logs", "demo-ppo", "--role", "actor", "--tail", "1"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("[actor/demo-ppo-actor-0] ") and captured.err == ""


def test_storage_classes_match_both_cluster_key_forms(sandbox, env):
    """The gateway lists agent IDs (`gpu-a`); Jobs name cluster namespaces (`rlark-gpu-a`): both find the class."""
    from rlark_tui.cluster.access import ClusterAccess
    access = ClusterAccess.open(str(sandbox.kubeconfig))
    try:
        classes = access.storage_classes()
    finally:
        access.close()
    assert classes is not None and classes["gpu-a"] and classes["rlark-gpu-a"] == classes["gpu-a"]


def test_the_tensorboard_link_is_on_the_gateway():
    from rlark_tui.model.naming import tensorboard_url
    reported = "/api/v1/rlinf.io/v1alpha1/tasks/demo-ppo-actor/tensorboard/"
    assert tensorboard_url("https://gw.example/", "demo-ppo-actor", reported) == f"https://gw.example{reported}"
    assert tensorboard_url("https://gw.example", "demo-ppo-actor") == f"https://gw.example{reported}"
    assert tensorboard_url(None, "demo-ppo-actor") == reported


async def test_server_only_tui_lists_jobs_and_says_there_is_no_context_to_switch_to(sandbox, env, tmp_path):
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.tui.app import RlarkApp
    from tests.pilot import wait_for
    crt, key = sandbox.issue_client_cert({"cert-role": "admin", "permission:admin": "true",
                                          "kubernetes-impersonation": "-"})
    (tmp_path / "c.crt").write_bytes(crt)
    (tmp_path / "c.key").write_bytes(key)
    args = argparse.Namespace(server_address=sandbox.server_url, client_cert=str(tmp_path / "c.crt"),
                              client_key=str(tmp_path / "c.key"), ca_cert=str(sandbox.ca_path),
                              server_hostname=None, server_insecure_skip_tls_verify=False)
    access = ClusterAccess(None, "rlark-server", load_config(tmp_path / "none.yaml"), None,
                           ServerOptions.from_sources(args, load_config(tmp_path / "none.yaml")))
    app = RlarkApp(access)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_for(pilot, lambda: app.index is not None and app.index.job("demo-ppo") is not None, "jobs")
            await pilot.press("colon", *"ctx other", "enter")
            await wait_for(pilot, lambda: any("no kubeconfig contexts known" in n.message for n in app._notifications),
                           "the refusal")
    finally:
        access.close()
