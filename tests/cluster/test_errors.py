"""Every API error class becomes one clear line naming what was attempted; credentials never appear."""

import json
import socket

import pytest
import urllib3

from rlark_tui.cluster.errors import (
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    Request,
    Unauthorized,
    scrub,
    status_error,
    transport_error,
)
from rlark_tui.cluster.http import Http

REQ = Request("patch", "jobs", "demo", source="control plane", url="https://127.0.0.1:6443")


def status(code, reason, message, **details):
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
                       "message": message, "details": details})


def test_401_names_verb_and_resource():
    err = status_error(401, status(401, "Unauthorized", "Unauthorized"), REQ)
    assert isinstance(err, Unauthorized)
    assert str(err) == ('unauthorized (401): the control plane rejected the credentials while trying to patch '
                        'jobs "demo"; check the kubeconfig user / token')


def test_403_names_verb_resource_and_server_message():
    err = status_error(403, status(403, "Forbidden", 'jobs.rlinf.io "demo" is forbidden: user alice'), REQ)
    assert isinstance(err, Forbidden)
    assert str(err).startswith('forbidden (403): not allowed to patch jobs "demo" on the control plane: ')
    assert "user alice" in str(err)


def test_404_and_409_and_410():
    assert isinstance(status_error(404, status(404, "NotFound", "x"), REQ), NotFound)
    assert str(status_error(404, status(404, "NotFound", "x"), REQ)) == 'not found (404): jobs "demo"'
    err = status_error(409, status(409, "AlreadyExists", 'jobs.rlinf.io "demo" already exists'),
                       Request("create", "jobs", "demo"))
    assert isinstance(err, Conflict)
    assert str(err) == 'conflict (409) on create jobs "demo": jobs.rlinf.io "demo" already exists'
    assert isinstance(status_error(410, status(410, "Expired", "too old"), REQ), Gone)


def test_422_lists_every_field_cause():
    body = status(422, "Invalid", 'Job.rlinf.io "Bad_Name" is invalid: [...]', name="Bad_Name", kind="Job",
                  causes=[{"reason": "FieldValueInvalid", "field": "metadata.name", "message": "Invalid value"},
                          {"reason": "FieldValueRequired", "field": "spec.tasks[0].role",
                           "message": "Required value"}])
    err = status_error(422, body, Request("create", "jobs", "Bad_Name"))
    assert isinstance(err, Invalid)
    assert err.causes == [("metadata.name", "Invalid value"), ("spec.tasks[0].role", "Required value")]
    assert str(err) == ('invalid (422): jobs "Bad_Name" rejected: metadata.name: Invalid value; '
                        'spec.tasks[0].role: Required value')


def test_plain_text_error_body_and_other_codes():
    err = status_error(500, b"boom\nsecond line", REQ)
    assert str(err) == 'control plane error (500) on patch jobs "demo": boom'


def test_a_line_break_in_a_name_a_reason_or_a_cause_stays_on_the_one_line():
    # an object key or a server's reason with a line break forged a second line under the error (rlark's own
    # 'error:' line, the TUI's notice)
    key = Request("get", "objects", "w.pt\nsha256 0000", source="gateway")
    assert str(status_error(404, b"NoSuchKey", key)) == 'not found (404): objects "w.pt\\nsha256 0000" on the gateway'
    err = status_error(503, json.dumps({"reason": "Busy\nStatus: Succeeded", "message": "m"}), REQ)
    cause = status(422, "Invalid", "x", causes=[{"field": "a\nb", "message": "c\u202ed"}])
    for text in (str(err), str(status_error(422, cause, REQ))):
        assert "\n" not in text and "\u202e" not in text, text


def test_tokens_are_scrubbed_from_messages():
    err = status_error(403, status(403, "Forbidden", "rejected Bearer abcdefghijklmnop"), REQ)
    assert "abcdefghijklmnop" not in str(err)
    assert scrub('token: "s3cr3tvalue99"') == 'token: "***"'


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connection_refused_is_one_line_naming_the_source():
    port = free_port()
    http = Http(f"http://127.0.0.1:{port}", source="gateway")
    with pytest.raises(Exception) as info:
        http.json("GET", "/api/v1/clusters", Request("list", "clusters", source="gateway"))
    assert str(info.value) == f"cannot reach the gateway at http://127.0.0.1:{port}: connection refused"
    assert info.value.kind == "refused"


def test_timeout_is_reported_with_its_duration():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        http = Http(f"http://127.0.0.1:{port}", source="gateway")
        with pytest.raises(Exception) as info:
            http.json("GET", "/slow", Request("get", "clusters", source="gateway"), timeout=0.3)
    assert info.value.kind == "timeout"
    assert str(info.value).startswith(f"timed out after 0.3s waiting for the gateway at http://127.0.0.1:{port}")


def test_tls_failure_is_named_tls():
    exc = urllib3.exceptions.SSLError("certificate verify failed: self-signed certificate")
    err = transport_error(exc, REQ)
    assert err.kind == "tls"
    assert str(err).startswith("TLS error talking to the control plane at https://127.0.0.1:6443:")
