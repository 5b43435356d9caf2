"""Run as another user (setpriv) against listeners `host:port ...`: what each port gives without Ray's token.

Prints one JSON object: address -> {"http": [answer to GET /api/v0/nodes, answer to POST /api/jobs/], "grpc": code}
(`http` null when the port does not speak HTTP/1.1, an answer its status or "metrics" (a Prometheus exporter);
`grpc` the status code name of Ray's RPCs, null when it is not gRPC). With `--connect` only whether each
address accepts a connection. Standard library plus grpcio (a Ray dependency); no Ray import, so it starts fast.
"""

import json
import socket
import sys

import grpc

SUBMIT = json.dumps({"entrypoint": "id > /tmp/rlark-ray-probe-pwned"}).encode()
RPCS = ("/ray.rpc.NodeInfoGcsService/GetAllNodeInfo", "/ray.rpc.JobInfoGcsService/GetAllJobInfo",
        "/ray.rpc.NodeManagerService/GetNodeStats", "/ray.rpc.ObjectManagerService/Pull",
        "/ray.rpc.CoreWorkerService/NumPendingTasks", "/ray.rpc.LogService/ListLogs",
        "/ray.rpc.RayletDriver/ClusterInfo")
"""One read-only RPC of each Ray gRPC service (GCS, raylet, object manager, worker, dashboard agent, Ray client)."""


def http(host: str, port: int, request: bytes) -> int | str | None:
    """The status of one HTTP/1.1 request, or "metrics" for a 200 that is Prometheus text (Ray's metrics exporters
    answer every path with it); None when the port does not speak HTTP/1.1."""
    answer = b""
    try:
        with socket.create_connection((host, port), timeout=3) as sock:
            sock.sendall(request)
            while len(answer) < 65536 and (chunk := sock.recv(65536)):
                answer += chunk
    except OSError:
        pass
    if not answer.startswith(b"HTTP/1."):
        return None
    status = int(answer.split()[1])
    body = answer.partition(b"\r\n\r\n")[2]
    if status == 200 and (body.startswith((b"# HELP", b"# TYPE")) or not body.strip()):
        return "metrics"
    return status


def grpc_code(host: str, port: int) -> str | None:
    codes = set()
    with grpc.insecure_channel(f"{host}:{port}") as channel:
        for method in RPCS:
            try:
                channel.unary_unary(method)(b"", timeout=2)
                codes.add("OK")
            except grpc.RpcError as exc:
                codes.add(exc.code().name)
    codes.discard("UNIMPLEMENTED")
    if not codes or codes == {"UNAVAILABLE"}:
        return None
    return "OK" if "OK" in codes else sorted(codes)[0]


def accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def main() -> None:
    found = {}
    if sys.argv[1] == "--connect":
        for address in sys.argv[2:]:
            host, _, port = address.rpartition(":")
            found[address] = accepts(host.strip("[]"), int(port))
        print(json.dumps(found))
        return
    for address in sys.argv[1:]:
        host, _, port = address.rpartition(":")
        host = host.strip("[]")
        get = http(host, int(port), f"GET /api/v0/nodes HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        post = http(host, int(port), f"POST /api/jobs/ HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                                     f"Content-Length: {len(SUBMIT)}\r\nConnection: close\r\n\r\n".encode() + SUBMIT)
        found[address] = {"http": None if get is None and post is None else [get, post],
                          "grpc": None if get is not None else grpc_code(host, int(port))}
    print(json.dumps(found))


if __name__ == "__main__":
    main()
