"""Strategic merge patch, checked against kubectl's own compiled-in implementation.

``CASES`` holds (object, patch) pairs shaped like what kubectl sends (set env/image, edit, apply,
rollout restart, cordon, taint...). The fast test compares with results recorded from
``kubectl patch --local`` (``data_patch/smp_expected.json``); the slow one re-asks the real kubectl.
Regenerate the recording with ``python tests/test_patch_smp.py --record``.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from _fixtures_patch import DATA_DIR, kubectl_local_patch, kubectl_path, prune_empty
from sregym_cluster_embedded.apiserver.patching import PatchError, apply_patch

SMP = "application/strategic-merge-patch+json"
EXPECTED_FILE = DATA_DIR / "smp_expected.json"


def _deployment(**spec_overrides: Any) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {
        "containers": [
            {
                "name": "web",
                "image": "nginx:1.25",
                "args": ["--a", "--b"],
                "env": [
                    {"name": "A", "value": "1"},
                    {"name": "B", "value": "2"},
                    {"name": "C", "value": "3"},
                ],
                "ports": [
                    {"containerPort": 80, "protocol": "TCP"},
                    {"containerPort": 443, "protocol": "TCP"},
                ],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            },
            {"name": "side", "image": "busybox"},
        ],
        "initContainers": [{"name": "init", "image": "busybox", "command": ["true"]}],
        "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c1"}}],
        "tolerations": [{"key": "a", "operator": "Exists"}],
        "imagePullSecrets": [{"name": "reg1"}],
        "hostAliases": [{"ip": "127.0.0.1", "hostnames": ["a"]}],
    }
    pod_spec.update(spec_overrides)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "labels": {"app": "web", "tier": "front"},
            "annotations": {"keep": "yes"},
            "finalizers": ["a/one", "b/two"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o1", "uid": "u1"}],
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod_spec},
        },
    }


def _pod_template_patch(spec: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": spec}}}


_NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "node-1"},
    "spec": {
        "unschedulable": True,
        "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
        "podCIDRs": ["10.0.0.0/24"],
    },
}
_SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "selector": {"app": "web"},
        "ports": [
            {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
            {"name": "https", "port": 443, "protocol": "TCP"},
        ],
    },
}
_CRONJOB = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "cj", "namespace": "default"},
    "spec": {
        "schedule": "*/5 * * * *",
        "jobTemplate": {
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "OnFailure",
                        "containers": [
                            {"name": "job", "image": "busybox", "env": [{"name": "X", "value": "1"}]}
                        ],
                    }
                }
            }
        },
    },
}
_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    "status": {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}],
        "podIPs": [{"ip": "10.0.0.1"}],
    },
}
_STATEFULSET = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": {"name": "db", "namespace": "default"},
    "spec": {
        "serviceName": "db",
        "selector": {"matchLabels": {"app": "db"}},
        "template": {
            "metadata": {"labels": {"app": "db"}},
            "spec": {"containers": [{"name": "pg", "image": "postgres:15"}]},
        },
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}],
    },
}
_SA = {
    "apiVersion": "v1",
    "kind": "ServiceAccount",
    "metadata": {"name": "sa", "namespace": "default"},
    "secrets": [{"name": "s1"}],
}
_PDB = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "pdb", "namespace": "default"},
    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web", "tier": "front"}}},
}

# name -> (object, patch). Every patch shape here is one kubectl emits or a directive it documents.
CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "set-image": (
        _deployment(),
        _pod_template_patch(
            {
                "$setElementOrder/containers": [{"name": "web"}, {"name": "side"}],
                "containers": [{"image": "nginx:1.26", "name": "web"}],
            }
        ),
    ),
    "set-env-add": (
        _deployment(),
        _pod_template_patch(
            {
                "$setElementOrder/containers": [{"name": "web"}, {"name": "side"}],
                "containers": [
                    {
                        "$setElementOrder/env": [{"name": "A"}, {"name": "B"}, {"name": "C"}, {"name": "D"}],
                        "env": [{"name": "D", "value": "4"}],
                        "name": "web",
                    }
                ],
            }
        ),
    ),
    "set-env-delete": (
        _deployment(),
        _pod_template_patch({"containers": [{"name": "web", "env": [{"$patch": "delete", "name": "B"}]}]}),
    ),
    "set-env-order-with-server-only": (
        _deployment(),
        _pod_template_patch(
            {
                "containers": [
                    {
                        "name": "web",
                        "$setElementOrder/env": [{"name": "C"}, {"name": "A"}, {"name": "Z"}],
                        "env": [{"name": "Z", "value": "26"}],
                    }
                ]
            }
        ),
    ),
    "reorder-containers-only": (
        _deployment(),
        _pod_template_patch({"$setElementOrder/containers": [{"name": "side"}, {"name": "web"}]}),
    ),
    "add-container": (
        _deployment(),
        _pod_template_patch(
            {"containers": [{"name": "extra", "image": "redis", "env": [{"name": "Q", "value": None}]}]}
        ),
    ),
    "delete-container": (
        _deployment(),
        _pod_template_patch({"containers": [{"$patch": "delete", "name": "side"}]}),
    ),
    "replace-containers": (
        _deployment(),
        _pod_template_patch({"containers": [{"name": "only", "image": "alpine"}, {"$patch": "replace"}]}),
    ),
    "set-resources": (
        _deployment(),
        _pod_template_patch(
            {"containers": [{"name": "web", "resources": {"limits": {"cpu": "200m", "memory": "64Mi"}}}]}
        ),
    ),
    "volume-retain-keys": (
        _deployment(),
        _pod_template_patch(
            {
                "$setElementOrder/volumes": [{"name": "data"}, {"name": "cfg"}],
                "volumes": [
                    {"$retainKeys": ["configMap", "name"], "configMap": {"name": "c2"}, "name": "data"}
                ],
            }
        ),
    ),
    "strategy-retain-keys": (
        _deployment(),
        {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": None, "type": "Recreate"}}},
    ),
    "volume-mounts-and-ports": (
        _deployment(),
        _pod_template_patch(
            {
                "containers": [
                    {
                        "name": "web",
                        "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 9090}],
                        "volumeMounts": [
                            {"name": "cfg", "mountPath": "/etc/cfg"},
                            {"mountPath": "/data", "readOnly": True, "name": "data"},
                        ],
                    }
                ]
            }
        ),
    ),
    "atomic-args-and-tolerations": (
        _deployment(),
        _pod_template_patch(
            {
                "containers": [{"name": "web", "args": ["--c"]}],
                "tolerations": [{"key": "b", "operator": "Exists"}],
            }
        ),
    ),
    "image-pull-secrets-and-host-aliases": (
        _deployment(),
        _pod_template_patch(
            {
                "imagePullSecrets": [{"name": "reg2"}],
                "hostAliases": [
                    {"ip": "127.0.0.1", "hostnames": ["b"]},
                    {"ip": "10.1.1.1", "hostnames": ["c"]},
                ],
            }
        ),
    ),
    "init-container-image": (
        _deployment(),
        _pod_template_patch({"initContainers": [{"name": "init", "image": "alpine"}]}),
    ),
    "rollout-restart": (
        _deployment(),
        {
            "spec": {
                "template": {
                    "metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-22T08:00:00Z"}}
                }
            }
        },
    ),
    "labels-null-delete-and-add": (_deployment(), {"metadata": {"labels": {"tier": None, "team": "sre"}}}),
    "labels-replace-map": (_deployment(), {"metadata": {"labels": {"$patch": "replace", "only": "this"}}}),
    "delete-map": (_deployment(), {"spec": {"strategy": {"$patch": "delete"}}}),
    "finalizers-union": (_deployment(), {"metadata": {"finalizers": ["c/three", "a/one"]}}),
    "finalizers-delete-primitive": (
        _deployment(),
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/one"]}},
    ),
    "finalizers-merge-order-then-delete": (
        _deployment(),
        {
            "metadata": {
                "$deleteFromPrimitiveList/finalizers": ["b/two"],
                "$setElementOrder/finalizers": ["b/two", "c/three", "a/one"],
                "finalizers": ["b/two", "c/three"],
            }
        },
    ),
    "finalizers-set-order": (
        _deployment(),
        {
            "metadata": {
                "$setElementOrder/finalizers": ["b/two", "a/one", "c/three"],
                "finalizers": ["c/three"],
            }
        },
    ),
    "owner-references-merge": (
        _deployment(),
        {
            "metadata": {
                "ownerReferences": [{"apiVersion": "v1", "kind": "Secret", "name": "o2", "uid": "u2"}]
            }
        },
    ),
    "scale-replicas": (_deployment(), {"spec": {"replicas": 5}}),
    "empty-merge-list-is-noop": (_deployment(), _pod_template_patch({"imagePullSecrets": []})),
    "null-merge-list-deletes": (_deployment(), _pod_template_patch({"hostAliases": None})),
    "cordon": (_NODE, {"spec": {"unschedulable": None}}),
    "taint-add": (
        _NODE,
        {
            "spec": {
                "taints": [
                    {"key": "k", "value": "v", "effect": "NoSchedule"},
                    {"key": "k2", "effect": "NoExecute"},
                ]
            }
        },
    ),
    "taint-remove-last": (_NODE, {"spec": {"taints": None}}),
    "node-pod-cidrs": (_NODE, {"spec": {"podCIDRs": ["10.0.1.0/24"]}}),
    "service-ports": (
        _SERVICE,
        {
            "spec": {
                "$setElementOrder/ports": [{"port": 80}, {"port": 443}, {"port": 8443}],
                "ports": [{"port": 80, "targetPort": 9090}, {"port": 8443, "name": "alt"}],
            }
        },
    ),
    "service-port-delete": (_SERVICE, {"spec": {"ports": [{"$patch": "delete", "port": 443}]}}),
    "cronjob-env": (
        _CRONJOB,
        {
            "spec": {
                "jobTemplate": {
                    "spec": {
                        "template": {
                            "spec": {"containers": [{"name": "job", "env": [{"name": "Y", "value": "2"}]}]}
                        }
                    }
                }
            }
        },
    ),
    "statefulset-template-and-claims": (
        _STATEFULSET,
        {
            "spec": {
                "template": {"spec": {"containers": [{"name": "pg", "image": "postgres:16"}]}},
                "volumeClaimTemplates": [
                    {"metadata": {"name": "other"}, "spec": {"accessModes": ["ReadWriteMany"]}}
                ],
            }
        },
    ),
    "pod-status-conditions": (
        _POD,
        {
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "True"},
                    {"type": "Initialized", "status": "True"},
                ],
                "podIPs": [{"ip": "10.0.0.2"}],
            }
        },
    ),
    "pod-ephemeral-container": (
        _POD,
        {
            "spec": {
                "ephemeralContainers": [
                    {"name": "debugger", "image": "busybox", "targetContainerName": "main"}
                ]
            }
        },
    ),
    "serviceaccount-secrets": (_SA, {"secrets": [{"name": "s2"}]}),
    "pdb-selector-replaced": (_PDB, {"spec": {"selector": {"matchLabels": {"app": "api"}}}}),
}

# name -> (object, patch, HTTP code, message) as kube-apiserver reports them.
ERROR_CASES: dict[str, tuple[dict[str, Any], dict[str, Any], int, str]] = {
    "missing-merge-key": (
        _deployment(),
        _pod_template_patch({"containers": [{"image": "x"}]}),
        500,
        "map: map[image:x] does not contain declared merge key: name",
    ),
    "delete-without-merge-key": (
        _deployment(),
        _pod_template_patch({"containers": [{"$patch": "delete"}]}),
        500,
        "delete patch type with no merge key defined",
    ),
    "retain-keys-mismatch": (
        _deployment(),
        _pod_template_patch(
            {"volumes": [{"$retainKeys": ["name"], "configMap": {"name": "c2"}, "name": "data"}]}
        ),
        422,
        "the server rejected our request due to an error in our request",
    ),
    "retain-keys-not-a-list": (
        _deployment(),
        {"spec": {"strategy": {"$retainKeys": "type", "type": "Recreate"}}},
        400,
        "invalid patch format of retainKeys",
    ),
    "set-element-order-not-a-list": (
        _deployment(),
        _pod_template_patch({"$setElementOrder/containers": {"name": "web"}}),
        400,
        "invalid patch format of setElementOrder list",
    ),
    "order-mismatch": (
        _deployment(),
        _pod_template_patch(
            {
                "containers": [
                    {
                        "name": "web",
                        "$setElementOrder/env": [{"name": "A"}, {"name": "C"}],
                        "env": [{"name": "C", "value": "9"}, {"name": "A", "value": "8"}],
                    }
                ]
            }
        ),
        500,
        "The order in patch list:\n[map[name:C value:9] map[name:A value:8]]\n doesn't match $setElementOrder list:\n[map[name:A] map[name:C]]\n",
    ),
    "unknown-directive": (
        _deployment(),
        {"metadata": {"labels": {"$patch": "explode"}}},
        500,
        "Unknown patch type: explode in map: map[$patch:explode]",
    ),
}


def _ours(obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    group = obj["apiVersion"].rpartition("/")[0]
    return apply_patch(obj, json.dumps(patch).encode(), SMP, kind=obj["kind"], group=group)


def _recorded() -> dict[str, Any]:
    return json.loads(EXPECTED_FILE.read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_smp_matches_recorded_kubectl_result(name: str) -> None:
    obj, patch = CASES[name]
    before = copy.deepcopy(obj)
    result = _ours(obj, patch)
    assert obj == before, "apply_patch must not mutate its input"
    assert prune_empty(result) == prune_empty(_recorded()[name])
    assert "$" not in "".join(_all_keys(result)), "directives must never be stored"


def _all_keys(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [k for k in value] + [k for v in value.values() for k in _all_keys(v)]
    if isinstance(value, list):
        return [k for v in value for k in _all_keys(v)]
    return []


def test_smp_list_order_from_set_element_order() -> None:
    obj, patch = CASES["set-env-order-with-server-only"]
    env = _ours(obj, patch)["spec"]["template"]["spec"]["containers"][0]["env"]
    # B is only on the server and stood before C originally; C, A, Z follow the requested order.
    assert [e["name"] for e in env] == ["B", "C", "A", "Z"]


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_smp_bad_directives_are_patch_errors(name: str) -> None:
    obj, patch, code, message = ERROR_CASES[name]
    with pytest.raises(PatchError) as info:
        _ours(obj, patch)
    assert (info.value.code, info.value.message) == (code, message)
    if code == 500:
        assert "reason" not in info.value.to_status()  # kubectl then prints "Error from server: <message>"


def test_smp_rejected_for_custom_resources() -> None:
    crd_obj = {
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": "x"},
        "spec": {"a": 1},
    }
    with pytest.raises(PatchError) as info:
        apply_patch(crd_obj, b'{"spec":{"a":2}}', SMP, kind="CronTab", group="stable.example.com")
    assert info.value.code == 415
    assert "application/merge-patch+json" in info.value.message


def test_smp_unknown_builtin_kind_replaces_lists_atomically() -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l", "finalizers": ["x"]},
        "spec": {"l": [1, 2]},
    }
    out = apply_patch(
        lease,
        b'{"spec":{"l":[3]},"metadata":{"finalizers":["y"]}}',
        SMP,
        kind="Lease",
        group="coordination.k8s.io",
    )
    assert out["spec"]["l"] == [3]
    assert out["metadata"]["finalizers"] == ["y", "x"]  # patch items first, as apimachinery orders them


@pytest.mark.slow
def test_smp_matches_live_kubectl(tmp_path: Path) -> None:
    if not kubectl_path():
        pytest.skip("kubectl not installed")
    for name, (obj, patch) in sorted(CASES.items()):
        expected = kubectl_local_patch(obj, patch, "strategic", tmp_path)
        assert isinstance(expected, dict), f"{name}: kubectl refused: {expected}"
        assert prune_empty(_ours(obj, patch)) == prune_empty(expected), name
    for name, (obj, patch, _, _) in sorted(ERROR_CASES.items()):
        assert isinstance(kubectl_local_patch(obj, patch, "strategic", tmp_path), str), (
            f"{name}: kubectl accepted it"
        )


def _record() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        recorded = {}
        for name, (obj, patch) in sorted(CASES.items()):
            result = kubectl_local_patch(obj, patch, "strategic", Path(tmp))
            if not isinstance(result, dict):
                raise SystemExit(f"{name}: kubectl refused the patch: {result}")
            recorded[name] = result
    DATA_DIR.mkdir(exist_ok=True)
    EXPECTED_FILE.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(recorded)} cases into {EXPECTED_FILE}")


if __name__ == "__main__" and "--record" in sys.argv:
    _record()
