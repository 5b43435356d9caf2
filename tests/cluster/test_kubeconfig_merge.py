"""Contexts come from every kubeconfig file KUBECONFIG lists, merged as kubectl merges them (issue 36 item 1):
real kubectl v1.32 and rlark read the same two files (with an empty entry and a missing file between them) and
agree on the contexts `--all-contexts` reads, the current context, and each context's cluster, user, namespace,
server and token (the first file's entry of a name wins, the first file that sets current-context wins)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess

import pytest
import yaml

from rlark_tui.cluster import kubeconfig as kc
from rlark_tui.cluster.contexts import chosen

pytestmark = [pytest.mark.kubectl,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")]

FIRST = {"apiVersion": "v1", "kind": "Config",
         "clusters": [{"name": "c1", "cluster": {"server": "https://127.0.0.1:1"}},
                      {"name": "shared", "cluster": {"server": "https://127.0.0.1:2"}}],
         "users": [{"name": "u1", "user": {"token": "token-one"}},
                   {"name": "shared-user", "user": {"token": "token-first"}}],
         "contexts": [{"name": "zeta", "context": {"cluster": "c1", "user": "u1"}},
                      {"name": "both", "context": {"cluster": "shared", "user": "shared-user", "namespace": "from-a"}}]}
SECOND = {"apiVersion": "v1", "kind": "Config", "current-context": "alpha",
          "clusters": [{"name": "shared", "cluster": {"server": "https://127.0.0.1:3"}},
                       {"name": "c2", "cluster": {"server": "https://127.0.0.1:4"}}],
          "users": [{"name": "shared-user", "user": {"token": "token-second"}}],
          "contexts": [{"name": "alpha", "context": {"cluster": "shared", "user": "shared-user"}},
                       {"name": "both", "context": {"cluster": "c2", "user": "shared-user", "namespace": "from-b"}}]}


@pytest.mark.parametrize("order", ["first, second", "second, first"])
def test_contexts_merge_as_kubectl_merges_them(tmp_path, monkeypatch, order):
    files = []
    for name, document in (("a.yaml", FIRST), ("b.yaml", SECOND)):
        path = tmp_path / name
        path.write_text(yaml.safe_dump(document))
        path.chmod(0o600)
        files.append(str(path))
    if order == "second, first":
        files.reverse()
    listed = os.pathsep.join([files[0], "", str(tmp_path / "missing.yaml"), files[1]])
    monkeypatch.setenv("KUBECONFIG", listed)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "KUBECONFIG": listed}

    def kubectl(*args: str) -> str:
        done = subprocess.run(["kubectl", "config", *args], env=env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout

    view = json.loads(kubectl("view", "--raw", "-o", "json"))
    clusters = {entry["name"]: entry["cluster"]["server"] for entry in view["clusters"]}
    users = {entry["name"]: entry["user"].get("token") for entry in view["users"]}
    theirs = {entry["name"]: entry["context"] for entry in view["contexts"]}

    every = chosen(argparse.Namespace(all_contexts=True, contexts=None, kubeconfig=None))
    assert sorted(every) == sorted(kubectl("get-contexts", "-o", "name").split()) == ["alpha", "both", "zeta"]
    loaded = kc.load(None)
    assert loaded.current_context == kubectl("current-context").strip() == "alpha"
    for name in every:
        context = theirs[name]
        assert {key: loaded.contexts[name].get(key) for key in ("cluster", "user", "namespace")} == {
            key: context.get(key) for key in ("cluster", "user", "namespace")}, name
        plain = kc.plain_context(loaded, name)
        assert plain is not None
        assert (plain.host, plain.authorization) == (clusters[context["cluster"]],
                                                     f"Bearer {users[context['user']]}"), name
    assert theirs["both"]["namespace"] == ("from-a" if order == "first, second" else "from-b")
