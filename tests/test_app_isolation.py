"""The conductor's part in keeping apps apart (conductor/app_isolation.py): every namespace of an
app is marked as the app's, and on clusters other than the embedded one a NetworkPolicy admits only
the app's own, hidden and no app's namespaces. Requests go to a recording stand-in for the API."""

from __future__ import annotations

from typing import Any

import pytest

from sregym_core.clusters import APP_GROUP_LABEL
from sregym_core.conductor.app_isolation import (
    POLICY_NAME,
    apply_isolation_policy,
    isolation_policy,
    label_app_group,
)
from sregym_core.conductor.kube import ApiStatusError


class RecordingKube:
    def __init__(self, answers: dict[tuple[str, str], int] | None = None) -> None:
        self.answers = answers or {}
        self.requests: list[tuple[str, str, Any]] = []

    def request(self, method: str, path: str, body: Any = None, **_: Any) -> Any:
        self.requests.append((method, path, body))
        code = self.answers.get((method, path))
        if code:
            raise ApiStatusError(code, "answered")
        return body


def test_every_namespace_of_the_app_is_marked_and_a_missing_one_skipped() -> None:
    kube = RecordingKube({("PATCH", "/api/v1/namespaces/shop-workload"): 404})
    label_app_group(kube, ["shop", "shop-workload"], "shop")  # type: ignore[arg-type]
    assert [(m, p) for m, p, _ in kube.requests] == [("PATCH", "/api/v1/namespaces/shop"),
                                                     ("PATCH", "/api/v1/namespaces/shop-workload")]
    assert kube.requests[0][2] == {"metadata": {"labels": {APP_GROUP_LABEL: "shop"}}}
    with pytest.raises(ApiStatusError):  # any other refusal is the deploy's failure
        label_app_group(RecordingKube({("PATCH", "/api/v1/namespaces/shop"): 403}), ["shop"], "shop")  # type: ignore[arg-type]


def test_the_policy_admits_the_app_hidden_and_no_apps_namespaces_only() -> None:
    policy = isolation_policy("shop", "shop")
    assert policy["spec"]["podSelector"] == {} and policy["spec"]["policyTypes"] == ["Ingress"]
    peers = policy["spec"]["ingress"][0]["from"]
    assert {"namespaceSelector": {"matchLabels": {APP_GROUP_LABEL: "shop"}}} in peers
    assert {"namespaceSelector": {"matchExpressions": [{"key": APP_GROUP_LABEL, "operator": "DoesNotExist"}]}} in peers
    assert {"namespaceSelector": {"matchLabels": {"sregym.dev/hidden": "true"}}} in peers
    assert all(set(peer) == {"namespaceSelector"} for peer in peers)  # no ipBlock, no port opens more


def test_the_policy_is_created_or_put_back_as_written() -> None:
    path = "/apis/networking.k8s.io/v1/namespaces/shop/networkpolicies"
    kube = RecordingKube({("POST", path): 409})
    apply_isolation_policy(kube, "shop", "shop")  # type: ignore[arg-type]
    assert [(m, p) for m, p, _ in kube.requests] == [("POST", path), ("PUT", f"{path}/{POLICY_NAME}")]
    assert kube.requests[1][2] == isolation_policy("shop", "shop")


def test_the_policy_is_applied_only_when_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    from sregym_core.conductor.app_isolation import POLICY_SWITCH, policy_wanted

    monkeypatch.delenv(POLICY_SWITCH, raising=False)
    assert not policy_wanted()  # its union with a fault's deny-all policy would cancel the fault
    monkeypatch.setenv(POLICY_SWITCH, "1")
    assert policy_wanted()
