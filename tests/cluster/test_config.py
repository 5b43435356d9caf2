"""Config file and kubeconfig discovery like kubectl: --kubeconfig, $KUBECONFIG lists, contexts, extensions."""

import pytest
import yaml

from rlark_tui.cli import main
from rlark_tui.cluster import kubeconfig as kc
from rlark_tui.errors import UsageError
from rlark_tui.local.config import load_config


def write_kubeconfig(path, contexts, current=None, extension=None):
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [{"name": c, "cluster": {"server": f"https://127.0.0.1:1/{c}"}} for c in contexts],
        "users": [{"name": "u", "user": {"token": "secret-token-value-123"}}],
        "contexts": [{"name": c, "context": {"cluster": c, "user": "u"}} for c in contexts],
    }
    if extension:
        config["contexts"][0]["context"]["extensions"] = [{"name": "rlark.io/console", "extension": extension}]
    path.write_text(yaml.safe_dump(config))
    return path


def test_config_file_reads_clusters_gateway_and_token(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("gateway: https://gw.example/\nclusters:\n  rlark-a: ctx-a\n  rlark-b: {context: ctx-b}\n"
                    "ray:\n  token: t0ps3cret\n  urls: {demo: http://127.0.0.1:8265}\n")
    config = load_config(path)
    assert config.gateway == "https://gw.example"
    assert config.clusters == {"rlark-a": "ctx-a", "rlark-b": "ctx-b"}
    assert config.ray_urls == {"demo": "http://127.0.0.1:8265"}
    assert config.ray_token == "t0ps3cret"


@pytest.mark.parametrize("text, message", [
    ("- a list\n", "the top level must be a mapping"),
    ("clusters: [a]\n", "`clusters` must be a mapping"),
    ("gateway: {a: 1}\n", "`gateway` must be a URL string"),
    ("a: [\n", "cannot read it"),
    # issue 33, a twenty-first round: a token no header takes raised UnicodeEncodeError out of every Ray read, and
    # a control character in one went on the wire
    ('ray:\n  token: "tok\\u20ac"\n', "`ray.token` must be printable ASCII"),
    ('ray:\n  token: "tok\\e]52;c;eA==\\a"\n', "`ray.token` must be printable ASCII"),
])
def test_broken_config_file_is_a_usage_error(tmp_path, text, message):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        load_config(path)


def test_missing_config_file_is_empty(tmp_path):
    config = load_config(tmp_path / "absent.yaml")
    assert not config.exists and config.clusters == {} and config.gateway is None


def test_kubeconfig_env_list_merges_files_first_wins(tmp_path, monkeypatch):
    first = write_kubeconfig(tmp_path / "a", ["cp"], current="cp",
                             extension={"gateway": "https://gw:1", "dataPlaneContexts": {"rlark-x": "dp-x"}})
    second = write_kubeconfig(tmp_path / "b", ["dp-x", "other"], current="other")
    monkeypatch.setenv("KUBECONFIG", f"{first}:{tmp_path / 'missing'}:{second}")
    loaded = kc.load(None)
    assert set(loaded.contexts) == {"cp", "dp-x", "other"}
    assert loaded.current_context == "cp"
    assert loaded.gateway == "https://gw:1"
    assert not hasattr(loaded, "data_planes"), "member-cluster contexts are never found in the kubeconfig"
    assert kc.resolve_context(loaded, None) == "cp"
    assert kc.resolve_context(loaded, "other") == "other"


def test_unknown_context_and_missing_file_are_usage_errors(tmp_path, monkeypatch):
    path = write_kubeconfig(tmp_path / "k", ["cp"], current="cp")
    with pytest.raises(UsageError, match="context 'nope' is not in the kubeconfig \\(contexts: cp\\)"):
        kc.resolve_context(kc.load(str(path)), "nope")
    with pytest.raises(UsageError, match="no such file"):
        kc.load(str(tmp_path / "absent"))


def test_no_kubeconfig_anywhere_outside_a_pod(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(UsageError, match="no kubeconfig found"):
        kc.load(None)


def test_in_cluster_is_used_when_inside_a_pod_without_kubeconfig(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    loaded = kc.load(None)
    assert loaded.in_cluster and loaded.current_context == kc.IN_CLUSTER


def test_cli_bad_context_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    path = write_kubeconfig(tmp_path / "k", ["cp"], current="cp")
    monkeypatch.setenv("RLARK_CONFIG", str(tmp_path / "none.yaml"))
    assert main(["get", "jobs", "--kubeconfig", str(path), "--context", "nope"]) == 2
    err = capsys.readouterr().err
    assert err == "error: context 'nope' is not in the kubeconfig (contexts: cp)\n"


def test_cli_unreachable_server_is_one_line_exit_1_without_the_token(tmp_path, capsys, monkeypatch):
    path = write_kubeconfig(tmp_path / "k", ["cp"], current="cp")
    monkeypatch.setenv("RLARK_CONFIG", str(tmp_path / "none.yaml"))
    assert main(["--kubeconfig", str(path), "get", "jobs"]) == 1
    captured = capsys.readouterr()
    assert captured.err == "error: cannot reach the control plane at https://127.0.0.1:1/cp: connection refused\n"
    assert "secret-token-value-123" not in captured.out + captured.err
