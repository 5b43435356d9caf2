"""Issue 33, a fifteenth round (a hostile control plane's Job name): JSON may escape a lone surrogate ('\\ud800'),
which no UTF-8 holds. Printed, it ended `rlark get jobs` (every Job's list, for one such Job) in a crash report
(UnicodeEncodeError), and asked for in a request's query (a Task so named: its Pods by its name), `rlark describe`
and `rlark logs` of its Job. It is shown as its escape (sanitize.clean) and sent as its own bytes (transport.seg)."""

from __future__ import annotations

import contextlib
import io
import json
import sys

import yaml

from tests import loopback
from tests.clirun import cli_runner

NAME = "x\ud800y"
JOB = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job",
       "metadata": {"name": NAME, "uid": "u1", "creationTimestamp": "2026-12-01T00:00:00Z",
                    "annotations": {"rlark.io/display-name": "D\u00e9mo \U0001f680"}},
       "spec": {"tasks": []}, "status": {"phase": "Running"}}
TASK = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Task",
        "metadata": {"name": NAME, "namespace": "rlark-gpu-a", "labels": {"rlinf.io/job": "x"}}, "spec": {}}


@contextlib.contextmanager
def _control_plane():
    """127.0.0.1: the Job at any path naming one Job, a list of it at the Jobs, of a Task so named at the Tasks, an
    empty list elsewhere; each request's path kept."""
    asked: list[str] = []

    class Handler(loopback.QuietHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            asked.append(self.path)
            path = self.path.split("?", 1)[0]
            if "/jobs/" in path:
                answer = JOB
            else:
                items = [JOB] if path.endswith("/jobs") else [TASK] if path.endswith("/tasks") else []
                answer = {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}
            self.answer(200, json.dumps(answer).encode())  # ensure_ascii: the lone surrogate as JSON's escape

    with loopback.serving(Handler) as url:
        yield url, asked


def _kubeconfig(path, server):
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server}}], "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path


def test_a_job_named_with_a_lone_surrogate_is_listed_and_described(tmp_path, env, capsys):
    with _control_plane() as (server, asked):
        rlark = cli_runner(_kubeconfig(tmp_path / "kubeconfig", server), capsys)
        table, named, as_json = rlark("get", "jobs"), rlark("get", "jobs", "-o", "name"), rlark("get", "jobs", "-o", "json")
        described = rlark("describe", "job", "x")
        logs = rlark("logs", "x")
    assert (table.code, named.code, as_json.code, described.code) == (0, 0, 0, 0), (table, named, as_json, described)
    assert table.out.splitlines()[1].startswith("x\\ud800y ") and named.out == "job.rlinf.io/x\\ud800y\n"
    assert json.loads(as_json.out)["items"][0]["metadata"]["name"] == NAME  # JSON's escape, read back as it was
    assert "Name:           x\\ud800y" in described.out.splitlines()
    assert logs.code == 0 and logs.err.count("\n") == 1, logs
    assert any("x%ED%A0%80y" in query for query in asked), asked  # its Task's Pods asked for by the name's own bytes


def test_a_terminal_that_holds_no_unicode_is_shown_escapes(tmp_path, env, monkeypatch):
    """Issue 33, a seventeenth round (the environments bastion users have): under PYTHONIOENCODING=ascii or
    latin-1 (or an ASCII locale) a Job's display name with an accent or an emoji ended rlark get -o wide, -o json,
    describe and rlark status (its own '▶') in a crash report (UnicodeEncodeError). Each character the stream cannot
    hold is its JSON escape: the table is one line, and the JSON reads back as the control plane gave it."""
    from rlark_tui.cli import main

    with _control_plane() as (server, _asked):
        path = _kubeconfig(tmp_path / "kubeconfig", server)
        for encoding in ("ascii", "latin-1"):
            results = []
            for argv in (["get", "jobs", "-o", "wide"], ["get", "jobs", "-o", "json"], ["describe", "job", "x"]):
                out, err = io.BytesIO(), io.BytesIO()
                monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding=encoding))
                monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(err, encoding=encoding, errors="backslashreplace"))
                code = main(["--kubeconfig", str(path), *argv])
                sys.stdout.flush(), sys.stderr.flush()
                results.append((code, out.getvalue().decode(encoding), err.getvalue().decode(encoding)))
            (_, wide, _), (_, as_json, _), (_, described, _) = results
            assert all(code == 0 and not err for code, _, err in results), results
            assert "D\\u00e9mo \\ud83d\\ude80" in wide.splitlines()[1] or encoding == "latin-1", wide
            assert "D\u00e9mo \\ud83d\\ude80" in wide.splitlines()[1] or encoding == "ascii", wide
            assert json.loads(as_json)["items"][0]["metadata"]["annotations"]["rlark.io/display-name"] == "D\u00e9mo \U0001f680"
            assert any(line.startswith("Display name:") and "\\ud83d\\ude80" in line for line in described.splitlines())


def test_a_job_whose_fields_hold_lone_surrogates_is_cloned(tmp_path, env, capsys):
    """Issue 33, a twentieth round (generated answers through a mutating proxy): `rlark clone` of a Job whose
    display name (or an env value, a run script) held a lone surrogate, JSON's '\\ud800' or '\\udc80', ended in a
    crash report: the draft's YAML is written by libyaml, which encodes each string as UTF-8 (UnicodeEncodeError).
    Each surrogate is written as its escape, as every YAML rlark prints shows it."""
    with _control_plane() as (server, _asked):
        rlark = cli_runner(_kubeconfig(tmp_path / "kubeconfig", server), capsys)
        JOB["metadata"]["annotations"]["rlark.io/display-name"] = "D\ud800mo \udc80"
        try:
            cloned = rlark("clone", "x")
        finally:
            JOB["metadata"]["annotations"]["rlark.io/display-name"] = "D\u00e9mo \U0001f680"
    assert cloned.code == 0, cloned
    assert "displayName: D\\ud800mo \\udc80" in cloned.out.splitlines()
