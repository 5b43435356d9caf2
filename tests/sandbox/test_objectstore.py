"""The sandbox's storage file API in the platform's shapes (storage_handler.go): list with prefix, delimiter, marker
and maxKeys, multipart upload, presigned object URLs that read back, delete, and 500 for an unknown class."""

from __future__ import annotations

import hashlib
import json
import urllib.request

from tests.sandbox.helpers import raw

BASE = "/api/v1/storage/storageclass/s3-rclone/gpu-a"


def _json(reply):
    return json.loads(reply.body)


def _upload(sandbox, key: str, data: bytes):
    boundary = "rlark-test-boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{key}\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return raw(sandbox, "POST", f"{BASE}/upload", body,
               headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})


def test_storage_file_api_lists_uploads_presigns_and_deletes(sandbox):
    for key, data in (("api-test/run-1/ckpt/a.pt", b"a" * 10), ("api-test/run-1/ckpt/b.pt", b"b" * 20),
                      ("api-test/run-1/metrics.log", b"m"), ("api-test/run-10/x", b"x")):
        reply = _upload(sandbox, key, data)
        assert reply.status == 200 and _json(reply) == {"key": key}

    folders = _json(raw(sandbox, "GET", f"{BASE}/list?prefix=api-test/run-1/"))
    assert set(folders) == {"objects", "common_prefixes", "is_truncated", "next_marker", "max_keys"}
    assert [o["key"] for o in folders["objects"]] == ["api-test/run-1/metrics.log"]
    assert folders["common_prefixes"] == ["api-test/run-1/ckpt/"] and folders["max_keys"] == 100
    entry = folders["objects"][0]
    assert set(entry) == {"key", "size", "last_modified", "etag", "content_type"} and entry["size"] == 1
    assert entry["etag"] == '"' + hashlib.md5(b"m").hexdigest() + '"'  # noqa: S324

    first = _json(raw(sandbox, "GET", f"{BASE}/list?prefix=api-test/run-1/&delimiter=&maxKeys=2"))
    assert [o["key"] for o in first["objects"]] == ["api-test/run-1/ckpt/a.pt", "api-test/run-1/ckpt/b.pt"]
    assert first["is_truncated"] and first["next_marker"] and first["common_prefixes"] is None
    rest = _json(raw(sandbox, "GET", f"{BASE}/list?prefix=api-test/run-1/&delimiter=&maxKeys=2"
                                     f"&marker={first['next_marker']}"))
    assert [o["key"] for o in rest["objects"]] == ["api-test/run-1/metrics.log"] and not rest["is_truncated"]

    url = _json(raw(sandbox, "GET", f"{BASE}/object/api-test/run-1/ckpt/b.pt"))["url"]
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - the sandbox's own endpoint
        assert response.read() == b"b" * 20
    forged = url.replace("X-Amz-Signature=", "X-Amz-Signature=0")
    try:
        urllib.request.urlopen(forged, timeout=5)  # noqa: S310
        raise AssertionError("a forged presigned URL was served")
    except urllib.error.HTTPError as err:
        assert err.code == 403

    deleted = raw(sandbox, "DELETE", f"{BASE}/object/api-test/run-1/ckpt/b.pt")
    assert _json(deleted) == {"message": "Object deleted successfully"}
    again = _json(raw(sandbox, "GET", f"{BASE}/list?prefix=api-test/run-1/ckpt/"))
    assert [o["key"] for o in again["objects"]] == ["api-test/run-1/ckpt/a.pt"]

    missing = raw(sandbox, "GET", "/api/v1/storage/storageclass/no-such-class/gpu-a/list")
    assert missing.status == 500 and "not found" in _json(missing)["error"]
    assert raw(sandbox, "GET", f"{BASE}/object/").status == 400
