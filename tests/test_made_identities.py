"""agent_access.end_identities_made: what ending the agent's identity removes of what it made (the live attack is
tests/adversarial/test_grading_integrity.py::test_the_agents_identity_works_only_from_the_injection_to_the_fixs_submission).
A stand-in for the API (a dict of objects by path) is the only fake: the function's decisions are what is tested."""

from __future__ import annotations

from typing import Any

from sregym_core.conductor.agent_access import end_identities_made, identities

NS = "app"
SA = f"/api/v1/namespaces/{NS}/serviceaccounts"
RB = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings"


def _sa(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}}


def _binding(name: str, *accounts: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "subjects": [{"kind": "ServiceAccount", "name": a, "namespace": NS}
                                                     for a in accounts]}


class FakeApi:
    """Objects by path; list, delete and merge-patch of ``subjects`` as the API server does them."""

    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects
        self.writes: list[tuple[str, str]] = []

    def list_items(self, path: str, kind: str, **_query: Any) -> list[dict[str, Any]]:
        return [dict(obj, kind=kind) for p, obj in self.objects.items() if p.rsplit("/", 1)[0] == path]

    def delete(self, path: str) -> bool:
        self.writes.append(("DELETE", path))
        return self.objects.pop(path, None) is not None

    def request(self, method: str, path: str, body: Any = None, **_kw: Any) -> Any:
        self.writes.append((method, path))
        assert method == "PATCH"
        self.objects[path] = {**self.objects[path], **body}
        return self.objects[path]


def test_what_the_agent_made_is_ended_and_what_a_fix_put_back_is_not():
    before = FakeApi({f"{SA}/default": _sa("default"), f"{SA}/profile": _sa("profile"),
                      f"{RB}/profile-read": _binding("profile-read", "profile")})
    kept = identities(before, [NS])
    # during the attempt: the fault had deleted profile's binding, the fix put it back under its name; the agent also
    # made an account and a binding of its own (naming `default` too) and added `default` to nothing else
    api = FakeApi({f"{SA}/default": _sa("default"), f"{SA}/profile": _sa("profile"),
                   f"{RB}/profile-read": _binding("profile-read", "profile"),
                   f"{SA}/helper": _sa("helper"), f"{RB}/helper": _binding("helper", "helper", "default")})
    ended = end_identities_made(api, [NS], kept)
    assert sorted(ended) == [f"RoleBinding {NS}/helper", f"ServiceAccount {NS}/helper"]
    assert set(api.objects) == {f"{SA}/default", f"{SA}/profile", f"{RB}/profile-read"}


def test_a_kept_binding_loses_only_the_subjects_the_agent_added():
    kept = {("RoleBinding", NS, "profile-read"): _binding("profile-read", "profile")["subjects"],
            ("ServiceAccount", NS, "profile"): [], ("ServiceAccount", NS, "default"): []}
    api = FakeApi({f"{SA}/default": _sa("default"), f"{SA}/profile": _sa("profile"),
                   f"{RB}/profile-read": _binding("profile-read", "profile", "default")})
    ended = end_identities_made(api, [NS], kept)
    assert ended == [f"RoleBinding {NS}/profile-read: 1 subject(s) the agent added"]
    assert api.objects[f"{RB}/profile-read"]["subjects"] == _binding("x", "profile")["subjects"]


def test_nothing_made_means_nothing_written_and_default_is_never_deleted():
    api = FakeApi({f"{SA}/default": _sa("default"), f"{RB}/r": _binding("r", "default")})
    kept = identities(api, [NS])
    assert end_identities_made(api, [NS], kept) == [] and api.writes == []
    # `default` is the namespace's own (the cluster makes it again at once): never ended, even when not kept
    assert end_identities_made(api, [NS], {}) == [f"RoleBinding {NS}/r"]
    assert f"{SA}/default" in api.objects
