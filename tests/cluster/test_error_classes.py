"""Each error class reaches the user as one line, never a traceback, never a credential: 401, 403, slow
responses (timeout), dropped connections, TLS failures, a missing source."""

import base64
from datetime import UTC

import yaml

from rlark_tui.cli import main


def one_line(result):
    assert result.err.count("\n") == 1, result.err
    assert "Traceback" not in result.err
    return result.err.rstrip("\n")


def test_403_on_list_names_verb_and_resource(rl, sb):
    sb.faults.fail(403, verb="list", resource="jobs", times=1)
    result = rl("get", "jobs")
    assert result.code == 1
    assert one_line(result).startswith("error: forbidden (403): not allowed to list jobs on the control plane")


def test_slow_response_times_out_with_request_timeout(rl, sb):
    sb.faults.delay(3, verb="list", resource="jobs")
    result = rl("get", "jobs", "--request-timeout", "0.5")
    assert result.code == 1
    assert one_line(result) == (f"error: timed out after 0.5s waiting for the control plane at {sb.gateway}"
                                f"/clusters/root (list jobs)")


def test_dropped_connection(rl, sb):
    sb.faults.outage(3, mode="drop")
    result = rl("get", "nodes", "-A")
    assert result.code == 1
    assert one_line(result).startswith(f"error: connection to the control plane at {sb.gateway}/clusters/root "
                                       f"was dropped")


def test_503_outage(rl, sb):
    sb.faults.outage(3, mode="503")
    result = rl("describe", "job", "demo-ppo")
    assert result.code == 1
    assert one_line(result).startswith("error: control plane ")
    assert "(503) on get jobs \"demo-ppo\"" in result.err


def test_401_with_a_wrong_token_never_prints_the_token(sb, env, capsys):
    config = yaml.safe_load(sb.kubeconfig.read_text())
    config["users"][0]["user"]["token"] = "wrong-token-value-987654"
    path = env / "wrong-token.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    assert main(["--kubeconfig", str(path), "get", "jobs"]) == 1
    captured = capsys.readouterr()
    assert captured.err == ("error: unauthorized (401): the control plane rejected the credentials while trying to "
                            "list jobs; check the kubeconfig user / token\n")
    assert "wrong-token-value-987654" not in captured.out + captured.err
    assert sb.token not in captured.out + captured.err


def test_tls_failure_against_an_unknown_ca(sb, env, capsys):
    config = yaml.safe_load(sb.kubeconfig.read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["certificate-authority-data"] = base64.b64encode(_other_ca()).decode()
    path = env / "wrong-ca.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    assert main(["--kubeconfig", str(path), "get", "jobs"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: TLS error talking to the control plane at {sb.gateway}/clusters/root: ")
    assert err.count("\n") == 1 and "certificate verify failed" in err


def _other_ca() -> bytes:
    from datetime import datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "other-ca")])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM)


def test_config_reports_each_source_and_fails_on_the_control_plane(rl, sb):
    ok = rl("config")
    assert ok.code == 0, ok.err
    assert f"  ok    control plane ({sb.gateway}/clusters/root): version v1.32" in ok.out
    assert "  ok    data plane rlark-gpu-a (" in ok.out and "  ok    data plane rlark-edge-b (" in ok.out
    assert f"  ok    gateway ({sb.gateway}): 2 cluster(s) listed" in ok.out
    assert sb.token not in ok.out
    sb.faults.fail(403, verb="list", resource="jobs", times=1)
    failed = rl("config")
    assert failed.code == 1
    control = f"  FAIL  control plane ({sb.gateway}/clusters/root)"
    assert f"{control}: forbidden (403): not allowed to list jobs" in failed.out


def test_config_file_maps_clusters_and_hides_the_ray_token(rl, env):
    (env / "config.yaml").write_text("clusters:\n  rlark-gpu-a: rlark-sandbox-rlark-gpu-a\n"
                                     "ray:\n  token: ray-token-secret-42\n")
    result = rl("config", "--no-check")
    assert result.code == 0
    assert f"rlark-gpu-a          context rlark-sandbox-rlark-gpu-a  [config file {env / 'config.yaml'}]" \
        in result.out
    assert "ray token:    set (hidden)" in result.out and "ray-token-secret-42" not in result.out


def test_missing_kubeconfig_source_is_one_line(env, capsys, monkeypatch):
    monkeypatch.setenv("HOME", str(env))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert main(["get", "jobs"]) == 2
    assert capsys.readouterr().err == ("error: no kubeconfig found: pass --kubeconfig, set KUBECONFIG, or start a "
                                       "sandbox with `rlark sandbox` (or `rlark demo`)\n")
