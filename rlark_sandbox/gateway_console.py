"""The gateway routes of the console's operator pages with the platform's answer shapes: clusters, storage
classes and providers, SSH user keys, login. Pure functions of the Store (and a request body); gateway.py routes.

Sources (RLinf/RLark apps/rlark/pkg/gateway): clusters_handler.go, storage_handler.go, suk_handler.go,
auth_handler.go; secrets in namespace `default` (pkg/common/constants.go).
- `GET /api/v1/clusters` -> 200 `{success: true, data: [ClusterInfo]}` grouped by the Node CRs' label
  `rlark.io/cluster-id` (Nodes without it are left out), sorted by name; `GET /api/v1/clusters/<id>` -> the
  ClusterInfo plus `nodes` (the Node CRs), 404 `{success: false, message: "cluster not found"}`.
  ClusterInfo: `id, name, type, region, location, phase, totalNodes, onlineNodes, offlineNodes, cloudNodes,
  embodiedNodes, robots, gpuModels, robotModels, cpuUsage, gpuUsage, robotUsage, runningJobs, description`.
- `GET /api/v1/storage/storageclass[?clusters=rlark-a,rlark-b]` -> `{success, data: {<name>: {name, clusters,
  description, bucket, provider, endpoint, region, pathStyle, accessKeyId}}}`; `clusters` holds agent IDs
  (`gpu-a`, no `rlark-`); a requested id without `rlark-` is skipped, as the platform does.
  Provider, endpoint, region, path style and access key id come from the rclone Secret the class references
  (`csi.storage.k8s.io/node-publish-secret-name`/`-namespace`, `configData` INI section `[s3]`).
  `GET /api/v1/storage/storageclass/provider` -> `{success, data: [{name, value}]}`.
  `POST /api/v1/storage/storageclass {name, namespace?, description, clusters, provider, endpoint, access_key_id,
  access_key_secret, bucket, region, path_style}` writes, on each cluster, Secret `<namespace>/<name>-secret`
  (remote, remotePath, configData) and the StorageClass; `PUT .../<name>` the same, removing it from clusters no
  longer listed (an empty access_key_secret keeps the stored one); `DELETE .../<name>[?clusters=a,b&namespace=]`
  removes both. Each answers `{success: true}`, or 400 / 500 `{error}`.
- `GET /api/v1/ssh-user-keys[?user=u]` -> `[{index, user, public_key, added_at}]` (null when a Secret exists but
  no key matches); `POST {user, public_key}` -> 200 `{ok: true, user}` (the key stored as `<type> <base64>`),
  400 / 409 `{error}`; `DELETE /api/v1/ssh-user-keys/<index>?user=u` -> `{ok: true}`, 400 / 404 `{error}`.
  Backing store: Secret `default/rlark-ssh-keys` (data: user -> newline-separated keys).
- `POST /api/v1/auth/login {username: admin|user, password}` -> `{ok: true, role}`, 401
  `{error: "invalid credentials"}`, 400 on a bad body; checks Secret `default/rlark-ui-auth`
  (`admin-password`, `user-password`), which `ensure_ui_auth` seeds with random passwords.
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets

from rlark_sandbox.store import Store
from rlark_tui.model.objects import dig

SECRET_NAMESPACE = "default"
KEYS_SECRET = "rlark-ssh-keys"
UI_AUTH_SECRET = "rlark-ui-auth"
CLUSTER_ID = "rlark.io/cluster-id"
AGENT_PREFIX = "rlark-"
RCLONE = "rclone.csi.veloxpack.io"
HIDDEN_CLASSES = {"default", "local-path", "hostpath"}
PROVIDERS = [
    ("AWS S3", "AWS"), ("阿里云 OSS", "Alibaba"), ("腾讯云 COS", "TencentCOS"), ("华为云 OBS", "HuaweiOBS"),
    ("七牛云 Kodo", "Qiniu"), ("移动云 EOS", "ChinaMobile"), ("网易 NOS", "Netease"), ("UCloud US3", "Ucloud"),
    ("MinIO", "Minio"), ("Ceph RGW", "Ceph"), ("SeaweedFS", "SeaweedFS"), ("Cloudflare R2", "Cloudflare"),
    ("Google Cloud Storage", "GCS"), ("DigitalOcean Spaces", "DigitalOcean"), ("Wasabi", "Wasabi"),
    ("Backblaze B2 (S3)", "Other"), ("IBM COS", "IBMCOS"), ("Scaleway", "Scaleway"), ("OVHcloud", "OVH"),
    ("Linode / Akamai", "Linode"), ("IDrive e2", "IDrive"), ("Seagate Lyve Cloud", "LyveCloud"),
    ("Storj (S3 网关)", "Storj"), ("Synology C2", "Synology"), ("ArvanCloud", "ArvanCloud"),
    ("Hetzner", "Hetzner"), ("IONOS", "IONOS"), ("MEGA S4", "Mega"), ("RackCorp", "RackCorp"),
    ("Dreamhost", "Dreamhost"), ("其他 S3 兼容", "Other"),
]
_KEY = re.compile(r"^(ssh-ed25519|ssh-rsa|ssh-dss|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ecdsa-sha2-nistp521|"
                  r"sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) ([A-Za-z0-9+/]+=*)( .*)?$")

Answer = tuple[int, object]


# ----- clusters -----

def cluster_info(cluster_id: str, nodes: list[dict]) -> dict:
    """clusters_handler.go buildClusterInfo (cpu/gpu/robot usage are never filled in there either)."""
    counts = dict.fromkeys(("totalNodes", "onlineNodes", "offlineNodes", "cloudNodes", "embodiedNodes", "robots"), 0)
    region = location = ""
    gpu_models: set[str] = set()
    robot_models: set[str] = set()
    jobs: set[str] = set()
    for node in nodes:
        labels = dig(node, "metadata", "labels", default={}) or {}
        annotations = dig(node, "metadata", "annotations", default={}) or {}
        counts["totalNodes"] += 1
        counts["onlineNodes" if dig(node, "status", "phase") == "Online" else "offlineNodes"] += 1
        category, model = labels.get("rlark.io/node-category"), labels.get("rlark.io/model")
        if category == "cloud":
            counts["cloudNodes"] += 1
            gpu_models.update([model] if model else [])
        elif category == "edge":
            counts["embodiedNodes"] += 1
        elif category == "robot":
            counts["robots"] += 1
            robot_models.update([model] if model else [])
        region = region or labels.get("rlark.io/region", "")
        location = location or annotations.get("rlark.io/city") or labels.get("rlark.io/city", "")
        job = labels.get("rlark.io/embodied-task-name") or labels.get("rlark.io/task-name")
        jobs.update([job] if job else [])
    if counts["onlineNodes"] == 0:
        phase = "Offline"
    else:
        phase = "Online" if counts["onlineNodes"] == counts["totalNodes"] else "Degraded"
    cloud, edge = counts["cloudNodes"], counts["embodiedNodes"] + counts["robots"]
    kind = "Cloud" if cloud and not edge else "Embodied" if edge and not cloud else "Hybrid"
    return {"id": cluster_id, "name": cluster_id, "type": kind, "region": region, "location": location,
            "phase": phase, **counts, "gpuModels": sorted(gpu_models), "robotModels": sorted(robot_models),
            "cpuUsage": 0, "gpuUsage": 0, "robotUsage": 0, "runningJobs": len(jobs), "description": ""}


def _nodes_by_cluster(store: Store) -> dict[str, list[dict]]:
    nodes, _ = store.list("nodes")
    grouped: dict[str, list[dict]] = {}
    for node in nodes:
        cluster_id = (dig(node, "metadata", "labels", default={}) or {}).get(CLUSTER_ID)
        if cluster_id:
            grouped.setdefault(cluster_id, []).append(node)
    return grouped


def clusters(store: Store) -> Answer:
    infos = [cluster_info(cid, nodes) for cid, nodes in _nodes_by_cluster(store).items()]
    return 200, {"data": sorted(infos, key=lambda c: c["name"]), "success": True}


def cluster(store: Store, cluster_id: str) -> Answer:
    nodes = _nodes_by_cluster(store).get(cluster_id)
    if not nodes:
        return 404, {"success": False, "message": "cluster not found"}
    return 200, {"data": {**cluster_info(cluster_id, nodes), "nodes": nodes}, "success": True}


# ----- storage classes -----

def storage_classes(store: Store, requested: str | None) -> Answer:
    if requested:
        cluster_ids = [c.strip() for c in requested.split(",") if c.strip()]
    else:
        cluster_ids = list(_nodes_by_cluster(store))
    data: dict[str, dict] = {}
    for cluster_id in cluster_ids:
        if not cluster_id.startswith(AGENT_PREFIX) or cluster_id not in store.clusters():
            continue
        agent = cluster_id[len(AGENT_PREFIX):]
        items, _ = store.list("storageclasses", plane=cluster_id)
        for sc in items:
            name = sc["metadata"]["name"]
            if name in HIDDEN_CLASSES or sc.get("provisioner") != RCLONE:
                continue
            if name in data:
                data[name]["clusters"].append(agent)
                continue
            annotations = sc["metadata"].get("annotations") or {}
            description = annotations.get("rlark.io/description") or (
                "Default StorageClass" if annotations.get("storageclass.kubernetes.io/is-default-class") == "true"
                else "")
            params = sc.get("parameters") or {}
            config = _secret_config(store, cluster_id, params)
            data[name] = {"name": name, "clusters": [agent], "description": description,
                          "bucket": params.get("remotePath") or params.get("bucket", ""),
                          "provider": config.get("provider", ""), "endpoint": config.get("endpoint", ""),
                          "region": config.get("region", ""), "pathStyle": config.get("force_path_style") == "true",
                          "accessKeyId": config.get("access_key_id", "")}
    return 200, {"data": data, "success": True}


def _secret_config(store: Store, cluster: str, params: dict) -> dict[str, str]:
    """The `[s3]` keys of the rclone Secret a storage class references ({} when there is none)."""
    name = params.get("csi.storage.k8s.io/node-publish-secret-name", "")
    namespace = params.get("csi.storage.k8s.io/node-publish-secret-namespace", "")
    secret = store.get("secrets", name, namespace, cluster) if name and namespace else None
    raw = ((secret or {}).get("data") or {}).get("configData", "")
    config, section = {}, ""
    for line in base64.b64decode(raw).decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        elif section == "s3" and "=" in line and not line.startswith(("#", ";")):
            key, _, value = line.partition("=")
            config[key.strip()] = value.strip()
    return config


def _agent_ids(values: list) -> list[str]:
    return [str(v).strip().removeprefix(AGENT_PREFIX) for v in values if str(v).strip()]


def _classes_on(store: Store, name: str) -> list[str]:
    """Agent IDs of the clusters that have storage class `name`."""
    return [c.removeprefix(AGENT_PREFIX) for c in store.clusters() if store.get("storageclasses", name, "", c)]


def _apply_class(store: Store, agent: str, req: dict) -> str | None:
    """Create or replace the rclone Secret and the StorageClass on one cluster; an error message or None."""
    cluster = AGENT_PREFIX + agent
    if cluster not in store.clusters():
        return f"cluster {agent}: create {req['name']}-secret: server proxy returned HTTP 502"
    secret_name, namespace = f"{req['name']}-secret", req["namespace"]
    if not req["access_key_secret"]:
        current = store.get("secrets", secret_name, namespace, cluster)
        if current is None:
            return f"cluster {agent}: access_key_secret is required when the existing secret cannot be found"
        req = {**req, "access_key_secret": _secret_config(store, cluster, {
            "csi.storage.k8s.io/node-publish-secret-name": secret_name,
            "csi.storage.k8s.io/node-publish-secret-namespace": namespace}).get("secret_access_key", "")}
    lines = ["[s3]", "type = s3", f"provider = {req['provider']}", f"endpoint = {req['endpoint']}",
             f"access_key_id = {req['access_key_id']}", f"secret_access_key = {req['access_key_secret']}"]
    lines += [f"region = {req['region']}"] if req["region"] else []
    lines += [f"force_path_style = {str(bool(req['path_style'])).lower()}", "no_check_bucket = true"]
    data = {"remote": "s3", "remotePath": req["bucket"], "configData": "\n".join(lines) + "\n"}
    _put(store, cluster, "secrets", {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": secret_name, "namespace": namespace, "labels": {"controller": "rlark"}},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}})
    _put(store, cluster, "storageclasses", {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": req["name"], "labels": {"controller": "rlark"},
                     "annotations": {"rlark.io/description": req["description"]}},
        "provisioner": RCLONE, "reclaimPolicy": "Retain", "volumeBindingMode": "Immediate",
        "parameters": {"remote": "s3", "remotePath": req["bucket"],
                       "csi.storage.k8s.io/node-publish-secret-name": secret_name,
                       "csi.storage.k8s.io/node-publish-secret-namespace": namespace},
        "mountOptions": ["vfs-cache-mode=writes", "dir-cache-time=5m", "attr-timeout=1m", "poll-interval=5s",
                         "vfs-write-back=1s", "vfs-cache-max-age=10m", "buffer-size=64M", "transfers=8",
                         "checkers=16", "fast-list"]})
    return None


def _put(store: Store, cluster: str, resource: str, obj: dict) -> None:
    meta = obj["metadata"]
    current = store.get(resource, meta["name"], meta.get("namespace", ""), cluster)
    if current is None:
        store.create(resource, obj, plane=cluster)
    else:
        meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        store.update(resource, obj, plane=cluster)


def _remove_class(store: Store, agent: str, name: str, namespace: str) -> None:
    cluster = AGENT_PREFIX + agent
    sc = store.get("storageclasses", name, "", cluster)
    if sc is None:
        return
    params = sc.get("parameters") or {}
    secret = params.get("csi.storage.k8s.io/node-publish-secret-name") or f"{name}-secret"
    secret_ns = params.get("csi.storage.k8s.io/node-publish-secret-namespace") or namespace or "default"
    store.delete("storageclasses", name, "", cluster)
    if store.get("secrets", secret, secret_ns, cluster) is not None:
        store.delete("secrets", secret, secret_ns, cluster)


def _class_request(body: object, name: str = "") -> dict | str:
    """The storage class request with defaults (storage_handler.go CreateStorageClassRequest), or an error."""
    if not isinstance(body, dict):
        return "invalid request body"
    fields = ("name", "namespace", "description", "provider", "endpoint", "access_key_id", "access_key_secret",
              "bucket", "region")
    req = {key: str(body.get(key) or "") for key in fields}
    path_style = body.get("path_style") is True
    listed = body.get("clusters")
    clusters = listed if isinstance(listed, list) else []
    req["name"] = req["name"] or name
    if name and req["name"] != name:
        return "storage class name cannot be changed"
    if not req["name"] or not req["bucket"]:
        return "name and bucket are required"
    if not name and not req["access_key_secret"]:
        return "access_key_secret is required"
    if not _agent_ids(clusters):
        return "clusters is required"
    req["namespace"] = req["namespace"] or "default"
    if req["provider"].lower() == "alibaba":
        req["endpoint"] = f"{req['bucket']}.oss-{req['region']}.aliyuncs.com"
    return {**req, "path_style": path_style, "clusters": clusters}


def create_storage_class(store: Store, body: object) -> Answer:
    req = _class_request(body)
    if isinstance(req, str):
        return 400, {"error": req}
    for agent in _agent_ids(req["clusters"]):
        error = _apply_class(store, agent, req)
        if error:
            return 500, {"error": error}
    return 200, {"success": True}


def update_storage_class(store: Store, name: str, body: object) -> Answer:
    req = _class_request(body, name)
    if isinstance(req, str):
        return 400, {"error": req}
    desired = _agent_ids(req["clusters"])
    for agent in _classes_on(store, name):
        if agent not in desired:
            _remove_class(store, agent, name, req["namespace"])
    for agent in desired:
        error = _apply_class(store, agent, req)
        if error:
            return 500, {"error": error}
    return 200, {"success": True}


def delete_storage_class(store: Store, name: str, clusters: str | None, namespace: str | None) -> Answer:
    agents = _agent_ids(clusters.split(",")) if clusters else _classes_on(store, name)
    for agent in agents:
        _remove_class(store, agent, name, namespace or "default")
    return 200, {"success": True}


def providers() -> Answer:
    return 200, {"data": [{"name": name, "value": value} for name, value in PROVIDERS], "success": True}


# ----- SSH user keys -----

def normalized_key(text: str) -> str | None:
    """`<type> <base64>` of one OpenSSH public key line (the comment dropped, as Go's MarshalAuthorizedKey
    does), or None when it is not one."""
    match = _KEY.match(text.strip())
    if not match:
        return None
    try:
        blob = base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return None
    length = int.from_bytes(blob[:4], "big") if len(blob) >= 4 else -1
    if blob[4:4 + length].decode("ascii", "replace") != match.group(1):
        return None
    return f"{match.group(1)} {match.group(2)}"


def _keys(secret: dict) -> dict[str, list[str]]:
    keys = {}
    for user, value in (secret.get("data") or {}).items():
        lines = [line.strip() for line in base64.b64decode(value).decode().splitlines() if line.strip()]
        if lines:
            keys[user] = lines
    return keys


def _save_keys(store: Store, secret: dict, keys: dict[str, list[str]]) -> None:
    secret["data"] = {user: base64.b64encode("\n".join(lines).encode()).decode() for user, lines in keys.items()}
    store.update("secrets", secret)


def list_keys(store: Store, user: str | None) -> Answer:
    secret = store.get("secrets", KEYS_SECRET, SECRET_NAMESPACE)
    if secret is None:
        return 200, []
    added = secret["metadata"].get("creationTimestamp", "")
    items = [{"index": index, "user": name, "public_key": key, "added_at": added}
             for name, lines in sorted(_keys(secret).items()) if not user or name == user
             for index, key in enumerate(lines)]
    return 200, items or None


def add_key(store: Store, body: object) -> Answer:
    if not isinstance(body, dict) or not body.get("user") or not body.get("public_key"):
        return 400, {"error": "invalid request body"}
    user, key = str(body["user"]), normalized_key(str(body["public_key"]))
    if key is None:
        return 400, {"error": "invalid public key: ssh: no key found"}
    secret = store.get("secrets", KEYS_SECRET, SECRET_NAMESPACE)
    if secret is None:
        secret = store.create("secrets", {"apiVersion": "v1", "kind": "Secret", "data": {},
                                          "metadata": {"name": KEYS_SECRET, "namespace": SECRET_NAMESPACE}})
    keys = _keys(secret)
    if key in keys.get(user, []):
        return 409, {"error": "public key already exists for this user"}
    keys.setdefault(user, []).append(key)
    _save_keys(store, secret, keys)
    return 200, {"ok": True, "user": user}


def delete_key(store: Store, raw_index: str, user: str | None) -> Answer:
    if not user:
        return 400, {"error": "user query parameter is required"}
    if not re.fullmatch(r"[+-]?\d+", raw_index):
        return 400, {"error": "invalid key index"}
    secret = store.get("secrets", KEYS_SECRET, SECRET_NAMESPACE)
    if secret is None:
        return 404, {"error": "no ssh keys found"}
    keys = _keys(secret)
    if user not in (secret.get("data") or {}):
        return 404, {"error": "no keys found for user"}
    index, lines = int(raw_index), keys.get(user, [])
    if not 0 <= index < len(lines):
        return 400, {"error": "key index out of range"}
    del lines[index]
    if not lines:
        keys.pop(user, None)
    _save_keys(store, secret, keys)
    return 200, {"ok": True}


# ----- login -----

def ensure_ui_auth(store: Store) -> None:
    """Secret `default/rlark-ui-auth` with random `admin-password` and `user-password`, unless it exists."""
    if store.get("secrets", UI_AUTH_SECRET, SECRET_NAMESPACE) is not None:
        return
    data = {key: base64.b64encode(secrets.token_urlsafe(18).encode()).decode()
            for key in ("admin-password", "user-password")}
    store.create("secrets", {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": data,
                             "metadata": {"name": UI_AUTH_SECRET, "namespace": SECRET_NAMESPACE}})


def login(store: Store, body: object) -> Answer:
    if not isinstance(body, dict):
        return 400, {"error": "invalid request body"}
    username, password = body.get("username") or "", body.get("password") or ""
    if not isinstance(username, str) or not isinstance(password, str):
        return 400, {"error": "invalid request body"}
    if not username or not password:
        return 400, {"error": "username and password are required"}
    secret = store.get("secrets", UI_AUTH_SECRET, SECRET_NAMESPACE)
    if secret is None:
        return 500, {"error": f'failed to read auth secret, err: secrets "{UI_AUTH_SECRET}" not found'}
    if username not in ("admin", "user"):
        return 401, {"error": "invalid credentials"}
    stored = base64.b64decode((secret.get("data") or {}).get(f"{username}-password", "")).decode().strip()
    if not secrets.compare_digest(password.encode(), stored.encode()):
        return 401, {"error": "invalid credentials"}
    return 200, {"ok": True, "role": username}
