"""A fix may change in the app's ConfigMaps what the faults changed, nothing else (red-team round 12, finding 6:
the broken flag turned off and another one turned on passed every oracle but the service level)."""

from __future__ import annotations

import asyncio
import json

from sregym_core.oracles import baseline_preserved
from sregym_core.oracles.config_paths import changed_paths, fault_changes, unexplained_changes

FLAGS = {"flags": {"adFailure": {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "off"},
                   "cartFailure": {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "off"}}}


def flag_map(doc, *, indent=2, extra=None):
    data = {"demo.flagd.json": json.dumps(doc, indent=indent), **(extra or {})}
    return {"kind": "ConfigMap", "metadata": {"name": "flagd-config", "namespace": "shop", "uid": "c1"}, "data": data}


def with_flag(flag, variant, doc=FLAGS):
    doc = json.loads(json.dumps(doc))
    doc["flags"][flag]["defaultVariant"] = variant
    return doc


def test_json_values_compare_by_leaf_and_text_values_by_key():
    assert changed_paths({"f.json": json.dumps(FLAGS)}, {"f.json": json.dumps(FLAGS, indent=4)}) == set()
    assert changed_paths({"f.json": json.dumps(FLAGS)}, {"f.json": json.dumps(with_flag("adFailure", "on"))}) == {
        "f.json/flags/adFailure/defaultVariant"}
    assert changed_paths({"nginx.conf": "listen 80;"}, {"nginx.conf": "listen 81;"}) == {"nginx.conf"}
    assert changed_paths({"a": "1"}, {"a": "1", "b": "2"}) == {"b"}
    removed = json.loads(json.dumps(FLAGS))
    del removed["flags"]["adFailure"]
    assert len(changed_paths({"f.json": json.dumps(FLAGS)}, {"f.json": json.dumps(removed)})) == 4  # every leaf


def test_only_what_the_faults_changed_may_differ():
    baseline = [flag_map(FLAGS)]
    injected = [flag_map(with_flag("adFailure", "on"))]
    by_faults = fault_changes(baseline, injected)
    assert by_faults == {("shop", "flagd-config"): {"demo.flagd.json/flags/adFailure/defaultVariant"}}
    fixed = [flag_map(with_flag("adFailure", "off"), indent=None)]  # re-serialized by an editor: still the fix
    assert unexplained_changes(baseline, fixed, by_faults) == {}
    swapped = [flag_map(with_flag("cartFailure", "on", with_flag("adFailure", "off")))]
    assert unexplained_changes(baseline, swapped, by_faults) == {
        ("shop", "flagd-config"): ["demo.flagd.json/flags/cartFailure/defaultVariant"]}
    # a whole text key the fault changed may be changed in any way
    text_fault = {("shop", "flagd-config"): {"notes"}}
    assert unexplained_changes([flag_map(FLAGS, extra={"notes": "a"})], [flag_map(FLAGS, extra={"notes": "b"})],
                               text_fault) == {}


def test_configmaps_a_controller_owns_are_its_own():
    owned = flag_map(FLAGS)
    owned["metadata"]["ownerReferences"] = [{"kind": "DatastoreCluster", "name": "x", "uid": "u", "controller": True}]
    changed = json.loads(json.dumps(owned))
    changed["data"]["demo.flagd.json"] = json.dumps(with_flag("cartFailure", "on"))
    assert unexplained_changes([owned], [changed], {}) == {}


class _Context:
    def __init__(self, baseline, current, by_faults):
        self.baseline_workloads, self._current, self.fault_instances, self.faulty_workloads = baseline, current, (), ()
        self.fault_config_changes = by_faults

    async def list_workloads(self):
        return self._current


def test_baseline_preserved_fails_another_flag_turned_on_and_passes_the_fix():
    baseline = [flag_map(FLAGS)]
    by_faults = fault_changes(baseline, [flag_map(with_flag("adFailure", "on"))])
    swapped = [flag_map(with_flag("cartFailure", "on", with_flag("adFailure", "off")))]
    verdict = asyncio.run(baseline_preserved().evaluate(_Context(baseline, swapped, by_faults)))
    assert not verdict.passed
    assert verdict.evidence["violations"][0]["violation"] == "config_changed"
    assert "cartFailure" in verdict.evidence["reason"]
    fixed = [flag_map(with_flag("adFailure", "off"))]
    assert asyncio.run(baseline_preserved().evaluate(_Context(baseline, fixed, by_faults))).passed
    # ignore patterns cover a ConfigMap, as they do workloads
    assert asyncio.run(baseline_preserved(ignore=["flagd-config"]).evaluate(_Context(baseline, swapped, by_faults))).passed
