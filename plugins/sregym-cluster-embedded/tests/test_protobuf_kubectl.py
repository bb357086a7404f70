"""Protobuf bodies sent by the real kubectl, decoded and compared with kubectl's own JSON.

For every ``kubectl create <generator>`` the decoded protobuf body must equal what
``kubectl create ... --dry-run=client -o json`` prints (modulo empty fields). Fast tests decode the
bodies recorded in ``data_patch/protobuf/`` (captured from kubectl 1.37); the slow test runs the real
kubectl against a TLS capture server. Re-record with ``python tests/test_protobuf_kubectl.py --record``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _fixtures_patch import DATA_DIR, CaptureServer, kubectl_path, prune_empty
from sregym_cluster_embedded.apiserver.protobuf import decode_object

RECORD_DIR = DATA_DIR / "protobuf"
EXPECTED_FILE = RECORD_DIR / "expected.json"

# name -> kubectl arguments; "{cert}"/"{key}" are replaced by the capture server's TLS files.
CREATE_COMMANDS: dict[str, list[str]] = {
    "configmap": ["create", "configmap", "cm1", "--from-literal=a=b", "--from-literal=c=d"],
    "secret-generic": ["create", "secret", "generic", "s1", "--from-literal=user=admin", "--from-literal=pw=p@ss"],
    "secret-tls": ["create", "secret", "tls", "tls1", "--cert={cert}", "--key={key}"],
    "secret-docker-registry": [
        "create", "secret", "docker-registry", "reg", "--docker-server=127.0.0.1:5000", "--docker-username=u", "--docker-password=p",
    ],
    "deployment": ["create", "deployment", "web", "--image=nginx:1.25", "--replicas=3", "--port=80"],
    "deployment-zero-replicas": ["create", "deployment", "idle", "--image=nginx", "--replicas=0"],
    "job": ["create", "job", "j1", "--image=busybox", "--", "echo", "hi"],
    "cronjob": ["create", "cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *", "--restart=OnFailure", "--", "date"],
    "namespace": ["create", "namespace", "ns1"],
    "service-clusterip": ["create", "service", "clusterip", "svc1", "--tcp=80:8080", "--tcp=443:8443"],
    "service-nodeport": ["create", "service", "nodeport", "np", "--tcp=80:8080", "--node-port=30080"],
    "service-headless": ["create", "service", "clusterip", "hl", "--clusterip=None"],
    "service-externalname": ["create", "service", "externalname", "ext", "--external-name=example.test"],
    "serviceaccount": ["create", "serviceaccount", "sa1"],
    "role": ["create", "role", "r1", "--verb=get,list", "--resource=pods,deployments.apps", "--resource-name=x"],
    "rolebinding": ["create", "rolebinding", "rb1", "--role=r1", "--user=alice", "--serviceaccount=default:sa1"],
    "clusterrole": ["create", "clusterrole", "cr1", "--verb=get,list", "--resource=nodes"],
    "clusterrole-nonresource": ["create", "clusterrole", "cr2", "--verb=get", "--non-resource-url=/healthz"],
    "clusterrole-aggregate": ["create", "clusterrole", "agg", "--aggregation-rule=rbac.example.com/aggregate=true"],
    "clusterrolebinding": ["create", "clusterrolebinding", "crb1", "--clusterrole=cr1", "--group=devs"],
    "quota": ["create", "quota", "q1", "--hard=pods=10,cpu=2,memory=1Gi", "--scopes=BestEffort"],
    "priorityclass": ["create", "priorityclass", "high", "--value=1000", "--description=important", "--preemption-policy=Never"],
    "priorityclass-zero": ["create", "priorityclass", "zero", "--value=0", "--global-default"],
    "pdb": ["create", "pdb", "pdb1", "--selector=app=web", "--min-available=1"],
    "pdb-percent": ["create", "pdb", "pdb2", "--selector=app=web", "--max-unavailable=50%"],
    "ingress": [
        "create", "ingress", "ing1", "--class=nginx", "--rule=foo.com/bar*=svc1:80,tls=secret1", "--annotation=a=b", "--default-backend=svc2:http",
    ],
}  # fmt: skip

# Requests with no --dry-run equivalent: the decoded body is checked field by field.
REVIEW_COMMANDS: dict[str, tuple[list[str], dict[str, Any]]] = {
    "token": (
        ["create", "token", "default", "--duration=1h", "--audience=api"],
        {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "spec": {"audiences": ["api"], "expirationSeconds": 3600},
        },
    ),
    "can-i": (
        ["auth", "can-i", "delete", "pods", "--subresource=log", "-n", "kube-system"],
        {
            "kind": "SelfSubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "spec": {
                "resourceAttributes": {
                    "namespace": "kube-system",
                    "verb": "delete",
                    "resource": "pods",
                    "subresource": "log",
                }
            },
        },
    ),
    "can-i-nonresource": (
        ["auth", "can-i", "get", "/healthz"],
        {
            "kind": "SelfSubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}},
        },
    ),
    "can-i-list": (
        ["auth", "can-i", "--list", "-n", "default"],
        {
            "kind": "SelfSubjectRulesReview",
            "apiVersion": "authorization.k8s.io/v1",
            "spec": {"namespace": "default"},
        },
    ),
    "whoami": (["auth", "whoami"], {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1"}),
}


# Captured live only: its recording would put a (throwaway) private key into the repository.
LIVE_ONLY = {"secret-tls"}


def _dry_run_args(args: list[str]) -> list[str]:
    # --dry-run must come before any "--" that starts the container command.
    return [args[0], "--dry-run=client", "-o", "json", *args[1:]]


def _expand(args: list[str], server: CaptureServer) -> list[str]:
    return [a.replace("{cert}", str(server.cert)).replace("{key}", str(server.key)) for a in args]


def _capture(server: CaptureServer, args: list[str]) -> dict[str, Any]:
    before = len(server.requests)
    server.kubectl(*args)
    writes = server.requests[before:]
    assert len(writes) == 1, f"expected one write request, got {writes}"
    assert writes[0]["content_type"] == "application/vnd.kubernetes.protobuf"
    assert "error" not in writes[0], writes[0].get("error")
    return writes[0]


def _assert_contains(actual: Any, expected: Any) -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict), actual
        for key, value in expected.items():
            assert key in actual, f"{key} missing from {actual}"
            _assert_contains(actual[key], value)
    else:
        assert actual == expected


def _recorded() -> dict[str, Any]:
    return json.loads(EXPECTED_FILE.read_text())


@pytest.mark.parametrize("name", sorted(set(CREATE_COMMANDS) - LIVE_ONLY))
def test_recorded_create_bodies_decode_like_kubectl_json(name: str) -> None:
    body = (RECORD_DIR / f"{name}.pb").read_bytes()
    assert body.startswith(b"k8s\x00")
    assert prune_empty(decode_object(body)) == prune_empty(_recorded()[name])


@pytest.mark.parametrize("name", sorted(REVIEW_COMMANDS))
def test_recorded_review_bodies_decode(name: str) -> None:
    _assert_contains(decode_object((RECORD_DIR / f"{name}.pb").read_bytes()), REVIEW_COMMANDS[name][1])


def test_zero_values_follow_go_json_rules() -> None:
    idle = decode_object((RECORD_DIR / "deployment-zero-replicas.pb").read_bytes())
    assert idle["spec"]["replicas"] == 0  # pointer field: zero is meaningful
    assert "creationTimestamp" not in idle["metadata"]  # zero Time is JSON null
    assert "namespace" not in idle["metadata"] and "generation" not in idle["metadata"]
    assert (
        idle["spec"]["template"]["spec"]["containers"][0]["resources"] == {}
    )  # non-pointer struct, as Go JSON
    zero = decode_object((RECORD_DIR / "priorityclass-zero.pb").read_bytes())
    assert zero["value"] == 0  # no omitempty on PriorityClass.value


def test_secret_bytes_are_base64() -> None:
    secret = decode_object((RECORD_DIR / "secret-generic.pb").read_bytes())
    assert secret["data"] == {"user": "YWRtaW4=", "pw": "cEBzcw=="}


def test_int_or_string_fields() -> None:
    assert decode_object((RECORD_DIR / "pdb.pb").read_bytes())["spec"]["minAvailable"] == 1
    assert decode_object((RECORD_DIR / "pdb-percent.pb").read_bytes())["spec"]["maxUnavailable"] == "50%"
    ports = decode_object((RECORD_DIR / "service-clusterip.pb").read_bytes())["spec"]["ports"]
    assert [p["targetPort"] for p in ports] == [8080, 8443]


@pytest.mark.slow
def test_live_kubectl_bodies(tmp_path: Path) -> None:
    if not kubectl_path():
        pytest.skip("kubectl not installed")
    server = CaptureServer(tmp_path).start()
    try:
        for name, args in sorted(CREATE_COMMANDS.items()):
            args = _expand(args, server)
            decoded = _capture(server, args)["decoded"]
            expected = json.loads(server.kubectl(*_dry_run_args(args)).stdout)
            assert prune_empty(decoded) == prune_empty(expected), name
        for args, expected in REVIEW_COMMANDS.values():
            _assert_contains(_capture(server, args)["decoded"], expected)
        # kubectl accepted our JSON answers: the review results reach the user.
        assert server.kubectl("auth", "can-i", "get", "pods").stdout.strip() == "yes"
        assert "test-admin" in server.kubectl("auth", "whoami").stdout
        assert server.kubectl("create", "token", "default").stdout.strip() == "issued-token"
    finally:
        server.stop()


def _record() -> None:
    RECORD_DIR.mkdir(parents=True, exist_ok=True)
    expected: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        server = CaptureServer(Path(tmp)).start()
        try:
            for name, args in sorted(CREATE_COMMANDS.items()):
                if name in LIVE_ONLY:
                    continue
                args = _expand(args, server)
                (RECORD_DIR / f"{name}.pb").write_bytes(_capture(server, args)["body"])
                expected[name] = json.loads(server.kubectl(*_dry_run_args(args)).stdout)
            for name, (args, _) in sorted(REVIEW_COMMANDS.items()):
                (RECORD_DIR / f"{name}.pb").write_bytes(_capture(server, args)["body"])
        finally:
            server.stop()
    EXPECTED_FILE.write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(expected) + len(REVIEW_COMMANDS)} bodies into {RECORD_DIR}")


if __name__ == "__main__" and "--record" in sys.argv:
    _record()
