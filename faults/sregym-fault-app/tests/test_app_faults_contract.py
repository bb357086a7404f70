"""Static contract checks of the application-configuration faults."""

from __future__ import annotations

import sregym_fault_app.plugin
from sregym_fault_app.faults import _env_ops

from sregym_core.testing.contracts import FaultContract


class TestAppFaults(FaultContract):
    plugin = sregym_fault_app.plugin
    live_only = {"fd-limit": "it reads the entrypoint from the image (local image map) to wrap it with ulimit"}
    recover_is_the_fix = {
        "capacity-constraint": "recover deletes the pod-count ResourceQuota the fault added",
        "cpu-pressure": "recover deletes the noisy-neighbour pod the fault started",
        "load-burst": "recover deletes the load Job the fault started",
    }


def test_env_ops_replace_and_append():
    from sregym_core.types import AppSpec, ComponentSpec, Target

    component = ComponentSpec(name="search", ports=(8082,))
    target = Target(app=AppSpec(name="a", components=(component,)), component=component, namespace="ns")
    obj = {"spec": {"template": {"spec": {"containers": [{"name": "search", "env": [{"name": "RPC_RETRIES", "value": "2"}]}]}}}}
    ops = _env_ops(obj, target, {"RPC_RETRIES": "30", "RPC_TIMEOUT_MS": "50"})
    assert ops == [{"op": "add", "path": "/spec/template/spec/containers/0/env/0/value", "value": "30"},
                   {"op": "add", "path": "/spec/template/spec/containers/0/env/1",
                    "value": {"name": "RPC_TIMEOUT_MS", "value": "50"}}]
