"""The kubeconfig fast path: for every plain context, the client Configuration rlark builds without the
`kubernetes` loader equals, field by field, the one `kubernetes.config.load_kube_config` builds; contexts the fast
path does not take (exec plugins, auth providers, irregular entries) still load through the loader."""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kubernetes import client as k8s
from kubernetes.config.kube_config import KubeConfigMerger, load_kube_config

from rlark_tui.cluster import kubeconfig as kc
from tests.mutation import mutate

CA, CERT, KEY = b"-----BEGIN CERTIFICATE-----\nCA\n", b"-----BEGIN CERTIFICATE-----\nCLIENT\n", b"KEY\n"
CREDENTIAL_FILES = ("ssl_ca_cert", "cert_file", "key_file")
OBJECT_FIELDS = ("refresh_api_key_hook", "logger_formatter", "logger_stream_handler", "logger")


def b64(data: bytes) -> str:
    return base64.standard_b64encode(data).decode()


def doc(cluster: dict, user: dict | None, *, name: str = "c", namespace: str | None = None) -> dict:
    context = {"cluster": name}
    if user is not None:
        context["user"] = name
    if namespace:
        context["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Config", "current-context": name,
            "clusters": [{"name": name, "cluster": cluster}],
            "contexts": [{"name": name, "context": context}],
            "users": [{"name": name, "user": user}] if user is not None else []}


HTTPS = "https://10.0.0.1:6443/"
# name -> (files: path under the temp dir -> document, context): the kubeconfigs, in $KUBECONFIG order (absolute
# there, except a path given as ./...; the tests run in the temp dir).
CASES = {
    "token, inline CA": ({"a.yaml": doc({"server": HTTPS, "certificate-authority-data": b64(CA)},
                                         {"token": "t0ken"})}, "c"),
    "token file, relative CA file": ({"a.yaml": doc({"server": HTTPS, "certificate-authority": "pki/ca.crt"},
                                                    {"tokenFile": "secret/token"})}, "c"),
    "inline token wins over its file": ({"a.yaml": doc({"server": HTTPS}, {"token": "inline", "tokenFile": "t"})},
                                        "c"),
    "empty inline token, basic auth": ({"a.yaml": doc({"server": HTTPS}, {"token": "", "username": "ann",
                                                                         "password": "pw:1"})}, "c"),
    "client certificate files, relative": ({"a.yaml": doc(
        {"server": HTTPS, "certificate-authority": "pki/ca.crt"},
        {"client-certificate": "pki/client.crt", "client-key": "./pki/../pki/client.key"})}, "c"),
    "client certificate data": ({"a.yaml": doc(
        {"server": HTTPS, "certificate-authority-data": b64(CA)},
        {"client-certificate-data": b64(CERT), "client-key-data": b64(KEY)})}, "c"),
    "insecure-skip-tls-verify, tls-server-name, proxy-url": ({"a.yaml": doc(
        {"server": "https://[fd00::1]:443", "insecure-skip-tls-verify": True, "tls-server-name": "api.internal",
         "proxy-url": "socks5://127.0.0.1:1080"}, {"token": "x"})}, "c"),
    "insecure-skip-tls-verify false": ({"a.yaml": doc({"server": HTTPS, "insecure-skip-tls-verify": False},
                                                      {"token": "x"})}, "c"),
    "plain http, certificate fields ignored": ({"a.yaml": doc(
        {"server": "http://127.0.0.1:8080", "certificate-authority": "missing.crt"},
        {"client-certificate": "missing.crt", "token": "x"})}, "c"),
    "no user at all": ({"a.yaml": doc({"server": HTTPS}, None)}, "c"),
    "user named but absent": ({"a.yaml": {**doc({"server": HTTPS}, None),
                                          "contexts": [{"name": "c", "context": {"cluster": "c", "user": "ghost"}}],
                                          "users": [{"name": "other", "user": {"token": "o"}}]}}, "c"),
    "a relative $KUBECONFIG entry": ({"./rel/a.yaml": doc({"server": HTTPS, "certificate-authority": "ca.crt"},
                                                          {"client-certificate": "ca.crt", "client-key": "ca.crt"})},
                                     "c"),
    "~ is not expanded in a credential path": ({"a.yaml": doc({"server": HTTPS}, {"tokenFile": "~/token"})}, "c"),
    "two files: first entry of a name wins, paths relative to the defining file": ({
        "one/a.yaml": {**doc({"server": HTTPS, "certificate-authority": "ca.crt"}, {"token": "first"}),
                       "current-context": "c"},
        "two/b.yaml": {**doc({"server": "https://second:1"}, {"token": "second"}),
                       "contexts": [{"name": "c", "context": {"cluster": "c", "user": "c"}},
                                    {"name": "d", "context": {"cluster": "d", "user": "c"}}],
                       "clusters": [{"name": "c", "cluster": {"server": "https://second:1"}},
                                    {"name": "d", "cluster": {"server": "https://d:2",
                                                              "certificate-authority": "ca.crt"}}]}}, "d"),
}
# The files the cases point at, relative to the temp dir. A token file ends in no newline here: the loader keeps
# one (a header http.client refuses), the fast path trims it as kubectl does (test_kubeconfig_hostile.py).
SUPPORT = {"pki/ca.crt": CA, "pki/client.crt": CERT, "pki/client.key": KEY, "secret/token": b"from-file",
           "t": b"file", "one/ca.crt": CA, "two/ca.crt": CA + b"2", "~/token": b"tilde-token", "rel/ca.crt": CA}


def write_case(root: Path, files: dict) -> str:
    for relative, content in SUPPORT.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(content)
    paths = []
    for relative, document in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(yaml.safe_dump(document))
        paths.append(relative if relative.startswith("./") else str(root / relative))
    return os.pathsep.join(paths)


def fields_of(configuration: k8s.Configuration, root: Path, plain: kc.PlainContext | None = None) -> dict:
    """Every field of the Configuration, credential files by path when they are the user's own and by content
    when they are the loader's temporary copies of inline data, and the auth header actually sent. For the fast
    path (`plain`), the credentials are those its PlainContext holds for its TLS context: a path or the data."""
    fields = {key: value for key, value in vars(configuration).items() if key not in OBJECT_FIELDS}
    credentials = dict(zip(CREDENTIAL_FILES, (plain.ca, plain.cert, plain.key))) if plain is not None else {}
    for key in CREDENTIAL_FILES:
        if plain is not None:
            found = credentials[key]
            fields[key] = ("inline", found.data) if found.data is not None else found.path
        elif fields[key] and not Path(fields[key]).is_relative_to(root):
            fields[key] = ("inline", Path(fields[key]).read_bytes())
    fields["auth header"] = configuration.auth_settings()
    return fields


@pytest.mark.parametrize("case", CASES)
def test_fast_path_sets_exactly_what_the_kubernetes_loader_sets(case, tmp_path, monkeypatch):
    files, context = CASES[case]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KUBECONFIG", write_case(tmp_path, files))
    loaded = kc.load(None)
    fast = kc.plain_configuration(loaded, context)
    assert fast is not None, f"{case}: not taken by the fast path"
    expected = k8s.Configuration()
    load_kube_config(config_file=os.environ["KUBECONFIG"], context=context, client_configuration=expected,
                     persist_config=False)
    assert fields_of(fast, tmp_path, kc.plain_context(loaded, context)) == fields_of(expected, tmp_path)
    merger = KubeConfigMerger(os.environ["KUBECONFIG"]).config
    assert kc.merge([(p, yaml.safe_load(Path(p).read_text())) for p in os.environ["KUBECONFIG"].split(os.pathsep)]
                    )[0] == yaml.safe_load(yaml.safe_dump(_plain(merger.value)))


def _plain(value):
    value = getattr(value, "value", value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def test_exec_plugins_auth_providers_and_irregular_entries_go_through_the_loader(tmp_path, monkeypatch):
    plugin = tmp_path / "plugin.py"
    plugin.write_text('import json; print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", '
                      '"kind": "ExecCredential", "status": {"token": "from-plugin"}}))\n')
    exec_user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                          "args": [str(plugin)], "interactiveMode": "Never"}}
    cases = {
        "exec": doc({"server": HTTPS}, exec_user),
        "auth-provider": doc({"server": HTTPS}, {"auth-provider": {"name": "oidc", "config": {
            "client-id": "x", "id-token": "e30.e30.sig", "idp-issuer-url": "https://idp"}}}),
        "missing CA file": doc({"server": HTTPS, "certificate-authority": "absent.crt"}, {"token": "x"}),
        "port as a number": doc({"server": HTTPS, "insecure-skip-tls-verify": "yes"}, {"token": "x"}),
    }
    for name, document in cases.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(document))
        loaded = kc.load(str(path))
        assert kc.plain_configuration(loaded, "c") is None, name
    client = kc.api_client(kc.load(str(tmp_path / "exec.yaml")), "c")
    assert client.configuration.auth_settings()["BearerToken"]["value"] == "Bearer from-plugin"
    with pytest.raises(kc.UsageError, match="unusable kubeconfig entry .*absent.crt"):
        kc.api_client(kc.load(str(tmp_path / "missing CA file.yaml")), "c")


BASE = doc({"server": HTTPS, "certificate-authority": "pki/ca.crt", "insecure-skip-tls-verify": False},
           {"token": "t", "client-certificate-data": b64(CERT), "client-key": "pki/client.key"})
FIELDS = ["clusters.0.cluster." + key for key in ("server", "certificate-authority", "certificate-authority-data",
                                                  "insecure-skip-tls-verify", "tls-server-name", "proxy-url")]
FIELDS += ["users.0.user." + key for key in ("token", "tokenFile", "username", "password", "client-certificate",
                                             "client-certificate-data", "client-key", "client-key-data", "exec")]
FIELDS += ["contexts.0.context.user", "contexts.0.context.cluster", "users.0.user", "clusters.0.cluster"]
VALUES = st.one_of(st.sampled_from(["", "pki/ca.crt", "secret/token", "missing", "~/token", "http://h:1",
                                    "https://h:2/", b64(CA), "not base64!", "c", "ghost", None, True, False, 0,
                                    [], {}]), st.text(max_size=8))


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(FIELDS), VALUES), min_size=1, max_size=3))
def test_fast_path_never_disagrees_with_the_loader_on_mutated_kubeconfigs(tmp_path_factory, changes):
    """Whatever the fast path accepts, the loader accepts too and sets the same; the rest goes to the loader."""
    root = tmp_path_factory.mktemp("mutated")
    document = BASE
    for path, value in changes:
        document = mutate(document, path, value)
    previous = os.getcwd()
    os.chdir(root)
    try:
        config_file = write_case(root, {"a.yaml": document})
        try:
            loaded = kc.load(config_file)
        except kc.UsageError:
            return  # not a kubeconfig at all: one line, before any context is loaded
        try:
            fast = kc.plain_configuration(loaded, "c")
        except kc.UsageError as exc:  # the loader's would end the first request in a crash
            if "server" in str(exc):  # kubectl refuses it: the loader's host reached urllib3 without a scheme
                assert str(exc).endswith(("is not a URL or a host:port pair)", "its cluster names no server)"))
                event("a server kubectl refuses: one line")
                return
            assert kc.UNSENDABLE_TOKEN in str(exc)
            event("a token no header carries: one line")
            return
        event("fast path" if fast is not None else "loader")
        if fast is None:
            return
        expected = k8s.Configuration()
        load_kube_config(config_file=config_file, context="c", client_configuration=expected, persist_config=False)
        if "://" not in expected.host:  # read as kubectl reads it (kc.server_url), where the loader left it bare
            assert fast.host in (f"https://{expected.host}", f"http://{expected.host}"), (fast.host, expected.host)
            event("a server without a scheme: read as kubectl reads it")
            return
        assert fields_of(fast, root, kc.plain_context(loaded, "c")) == fields_of(expected, root)
    finally:
        os.chdir(previous)
