"""Object storage of the sandbox: each storage class is a local directory (its bucket), served through the gateway's
storage file API in the platform's shapes (storage_handler.go, storage/list.go), read through presigned URLs on the
sandbox's own object endpoint, and mounted into Pods at their storage mounts' targets.

- `GET /api/v1/storage/storageclass/<name>/<cluster>/list?prefix=&delimiter=&marker=&maxKeys=` ->
  `{objects: [{key, size, last_modified, etag, content_type}], common_prefixes, is_truncated, next_marker, max_keys}`
  (`delimiter` defaults to `/`, an explicit empty one lists flat; `maxKeys` defaults to 100; the folder marker equal
  to the prefix is left out; `next_marker` is the opaque continuation token of a truncated page);
- `POST .../upload` (multipart `file`, key = the file name as sent) -> `{"key"}`;
- `GET .../object/<key>` -> `{"url": <presigned URL>}` (expires after `expire` seconds, default 3600), not bytes;
- `DELETE .../object/<key>` -> `{"message": "Object deleted successfully"}`;
- failures -> 500 `{"error"}` (unknown storage class in that cluster), 400 `{"error"}` (no key, no file).
"""

from __future__ import annotations

import base64
import builtins
import hashlib
import hmac
import mimetypes
import os
import time
import urllib.parse
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from aiohttp import web

STORAGE_DIR = "storage"
"""Buckets live in `<state dir>/storage/<storage class>/`."""
DEFAULT_MAX_KEYS = 100
DEFAULT_EXPIRE = 3600


class ObjectStore:
    """Buckets under `<state dir>/storage/<storage class>/`, and presigned URLs signed with the sandbox's secret."""

    def __init__(self, root: Path, secret: str) -> None:
        self.root = root
        self.secret = secret.encode()
        self.endpoint = ""
        """`http://127.0.0.1:<port>` of the object endpoint once it listens."""
        self.cut_after: int | None = None
        """Test switch: the next object read sends this many bytes of the body and then drops the connection
        (a cut download); reset after one use."""
        self.listed_as: dict[str, str] = {}
        """Test switch: keys a directory cannot hold (S3 keeps `a//b` beside `a/b`), each listed and served as the
        file of another key."""
        self.encodings: dict[str, str] = {}
        """Test switch: keys served with this Content-Encoding (as S3 serves an object uploaded with one, e.g.
        `aws s3 cp --content-encoding gzip`): the stored bytes as they are, which the listing's ETag is the MD5 of."""

    def bucket(self, storage_class: str) -> Path:
        path = self.root / storage_class
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _path(self, storage_class: str, key: str) -> Path:
        bucket = self.bucket(storage_class).resolve()
        path = (bucket / key).resolve()
        if bucket not in path.parents:
            raise ValueError(f"object key {key!r} leaves the bucket")
        return path

    # ----- list -----
    def list(self, storage_class: str, prefix: str, delimiter: str, marker: str, max_keys: int) -> dict:
        bucket = self.bucket(storage_class)
        keys = sorted({str(p.relative_to(bucket)).replace(os.sep, "/") for p in bucket.rglob("*") if p.is_file()}
                      | self.listed_as.keys())
        after = _decode_token(marker)
        objects: builtins.list[dict] = []
        prefixes: builtins.list[str] = []
        truncated, last = False, ""
        for key in keys:
            if not key.startswith(prefix) or key == prefix or (after and key <= after):
                continue
            rest = key[len(prefix):]
            if delimiter and delimiter in rest:
                common = prefix + rest.split(delimiter, 1)[0] + delimiter
                if prefixes and prefixes[-1] == common:
                    last = key
                    continue
                entry = common
            else:
                entry = None
            if len(objects) + len(prefixes) >= max_keys:
                truncated = True
                break
            if entry is not None:
                prefixes.append(entry)
            else:
                objects.append(self._info(bucket / self.listed_as.get(key, key), key))
            last = key
        return {"objects": objects, "common_prefixes": prefixes or None, "is_truncated": truncated,
                "next_marker": _encode_token(last) if truncated else "", "max_keys": max_keys}

    @staticmethod
    def _info(path: Path, key: str) -> dict:
        stat = path.stat()
        data = path.read_bytes()
        return {"key": key, "size": stat.st_size,
                "last_modified": datetime.fromtimestamp(stat.st_mtime, tz=UTC).isoformat()
                .replace("+00:00", "Z"),
                "etag": '"' + hashlib.md5(data).hexdigest() + '"',  # noqa: S324 - S3's ETag of a single upload
                "content_type": mimetypes.guess_type(key)[0] or "application/octet-stream"}

    # ----- objects -----
    def put(self, storage_class: str, key: str, data: bytes) -> None:
        path = self._path(storage_class, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def delete(self, storage_class: str, key: str) -> None:
        self._path(storage_class, key).unlink(missing_ok=True)

    def presign(self, storage_class: str, key: str, expire: int) -> str:
        expires = int(time.time()) + expire
        path = f"/{urllib.parse.quote(storage_class)}/{urllib.parse.quote(key)}"
        return f"{self.endpoint}{path}?X-Amz-Expires={expires}&X-Amz-Signature={self._sign(path, expires)}"

    def _sign(self, path: str, expires: int) -> str:
        return hmac.new(self.secret, f"{path}\n{expires}".encode(), hashlib.sha256).hexdigest()

    # ----- the object endpoint (what a presigned URL points at) -----
    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get(r"/{storage_class}/{key:[\s\S]+}", self._serve)
        return app

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        path = request.rel_url.raw_path
        try:
            expires = int(request.query.get("X-Amz-Expires", ""))
        except ValueError:
            expires = 0
        signature = request.query.get("X-Amz-Signature", "")
        if expires < time.time() or not hmac.compare_digest(signature, self._sign(path, expires)):
            return web.Response(status=403, text="SignatureDoesNotMatch or expired")
        try:
            key = request.match_info["key"]
            target = self._path(request.match_info["storage_class"], self.listed_as.get(key, key))
        except ValueError:
            return web.Response(status=403, text="AccessDenied")
        if not target.is_file():
            return web.Response(status=404, text="NoSuchKey")
        cut, self.cut_after = self.cut_after, None
        if key in self.encodings:
            return web.Response(body=target.read_bytes(), headers={"Content-Encoding": self.encodings[key]})
        if cut is None:
            return web.FileResponse(target)
        data = target.read_bytes()
        response = web.StreamResponse(headers={"Content-Length": str(len(data))})
        await response.prepare(request)
        await response.write(data[:cut])
        if request.transport is not None:
            request.transport.close()
        return response


def _encode_token(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).decode()


def _decode_token(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(token.encode()).decode() if token else ""
    except (ValueError, UnicodeDecodeError):
        return ""


def _reply(data, status: int = 200) -> web.Response:
    return web.json_response(data, status=status)


def _agent_cluster(cluster: str) -> str:
    return cluster if cluster.startswith("rlark-") else f"rlark-{cluster}"


async def handle(request: web.Request, store, objects: ObjectStore, parts: list[str]) -> web.Response | None:
    """The storage file routes (`parts` after `/api/v1/`: storage, storageclass, <name>, <cluster>, ...); None
    when `parts` is not one of them."""
    if len(parts) < 5 or parts[:2] != ["storage", "storageclass"]:
        return None
    name, cluster, action, method = parts[2], parts[3], parts[4], request.method
    route = (action, method, len(parts))
    if route not in (("list", "GET", 5), ("upload", "POST", 5)) and not (action == "object" and method in (
            "GET", "DELETE")):
        return None
    if store.get("storageclasses", name, None, _agent_cluster(cluster)) is None:
        return _reply({"error": f'get storage class {name}: storageclasses.storage.k8s.io "{name}" not found'}, 500)
    if action == "list":
        query = request.query
        delimiter = query.get("delimiter", "/") if "delimiter" in query else "/"
        try:
            max_keys = int(query.get("maxKeys", ""))
        except ValueError:
            max_keys = 0
        return _reply(objects.list(name, query.get("prefix", ""), delimiter, query.get("marker", ""),
                                   max_keys if max_keys > 0 else DEFAULT_MAX_KEYS))
    if action == "upload":
        form: Mapping[str, object]
        try:
            form = await request.post()
        except ValueError:
            form = {}
        upload = form.get("file")
        if not isinstance(upload, web.FileField):
            return _reply({"error": "No file uploaded"}, 400)
        try:
            objects.put(name, upload.filename, upload.file.read())
        except ValueError as exc:
            return _reply({"error": str(exc)}, 500)
        return _reply({"key": upload.filename})
    key = urllib.parse.unquote(request.rel_url.raw_path.split("/object/", 1)[1]) if "/object/" in \
        request.rel_url.raw_path else ""
    if not key:
        return _reply({"error": "object key is required"}, 400)
    try:
        if method == "DELETE":
            objects.delete(name, key)
            return _reply({"message": "Object deleted successfully"})
        try:
            expire = int(request.query.get("expire", DEFAULT_EXPIRE))
        except ValueError:
            expire = DEFAULT_EXPIRE
        return _reply({"url": objects.presign(name, key, expire)})
    except ValueError as exc:
        return _reply({"error": str(exc)}, 500)
