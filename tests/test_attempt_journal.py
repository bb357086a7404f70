"""The attempt journal's bookkeeping around an API server's answers (conductor.journal). The live proof,
with real kubectl and a real embedded API server, is
tests/adversarial/test_cluster_integrity.py::test_what_a_dead_attempt_left_in_the_granted_objects_is_put_back_by_the_next_one."""

from __future__ import annotations

import copy
import json

from sregym_core.conductor import journal
from sregym_core.conductor.kube import ApiStatusError, Kube
from sregym_core.types import AgentGrant

DNS = AgentGrant(resource="configmaps", namespace="kube-system", name="coredns", verbs=("get", "patch"),
                 may_change={"data.Corefile": "remove-lines"})
DNS_PATH = "/api/v1/namespaces/kube-system/configmaps/coredns"
JOURNAL_PATH = f"/api/v1/namespaces/{journal.JOURNAL[0]}/configmaps/{journal.JOURNAL[1]}"


class _Server:
    """Objects by path with resourceVersions, as an API server answers GET/POST/PUT/DELETE."""

    find, delete, exists = Kube.find, Kube.delete, Kube.exists  # Kube's own, over this transport

    def __init__(self, objects: dict[str, dict]) -> None:
        self.objects = copy.deepcopy(objects)
        self.version = 10

    def get(self, path: str):
        return self.request("GET", path)

    def request(self, method: str, path: str, body=None):
        if method == "GET":
            if path not in self.objects:
                raise ApiStatusError(404, "not found")
            return copy.deepcopy(self.objects[path])
        if method == "DELETE":
            if self.objects.pop(path, None) is None:
                raise ApiStatusError(404, "not found")
            return None
        self.version += 1
        body = copy.deepcopy(body)
        if method == "POST":
            path = f"{path}/{body['metadata']['name']}"
            if path in self.objects:
                raise ApiStatusError(409, "already exists")
        elif body["metadata"].get("resourceVersion") != self.objects[path]["metadata"]["resourceVersion"]:
            raise ApiStatusError(409, "the object has been modified")
        body["metadata"]["resourceVersion"] = str(self.version)
        self.objects[path] = body
        return body


def _corefile(text: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "coredns", "namespace": "kube-system", "resourceVersion": "1", "uid": "u"},
            "data": {"Corefile": text}}


def _set_corefile(kube: _Server, text: str) -> None:
    changed = kube.get(DNS_PATH)
    changed["data"]["Corefile"] = text
    kube.request("PUT", DNS_PATH, changed)


def test_a_sealed_journal_puts_back_only_a_write_that_landed_after_the_seal_and_soon(monkeypatch):
    kube = _Server({DNS_PATH: _corefile(".:53 {}\n")})
    recorded = journal.open_journal(kube, [DNS], "hotel", "a1")
    assert recorded[DNS_PATH]["data"] == {"Corefile": ".:53 {}\n"} and "uid" not in recorded[DNS_PATH]["metadata"]
    assert json.loads(kube.objects[JOURNAL_PATH]["data"]["objects"]) == recorded
    _set_corefile(kube, ".:53 { fault }\n")  # the fault, then its recover
    _set_corefile(kube, ".:53 {}\n")
    journal.seal(kube, [DNS], "hotel", "a1")
    assert journal.mend_leftovers(kube) == [] and JOURNAL_PATH not in kube.objects  # nothing since the seal

    journal.seal(kube, [DNS], "hotel", "a2")
    _set_corefile(kube, ".:53 { rewrite name a b }\n")  # a held-back body of a2's lands after its end
    assert journal.mend_leftovers(kube) == [DNS_PATH]
    assert kube.get(DNS_PATH)["data"]["Corefile"] == ".:53 {}\n"

    journal.seal(kube, [DNS], "hotel", "a3")
    later = journal.time.time() + journal.LATE_WRITE_WINDOW_S + 1
    monkeypatch.setattr(journal.time, "time", lambda: later)
    _set_corefile(kube, ".:53 { an operator's change }\n")  # long after: not a late write of a3's
    assert journal.mend_leftovers(kube) == []
    assert kube.get(DNS_PATH)["data"]["Corefile"] == ".:53 { an operator's change }\n"


def test_a_dead_attempts_changes_and_creations_are_undone_and_a_bad_journal_only_goes():
    kube = _Server({DNS_PATH: _corefile(".:53 {}\n")})
    recorded = journal.open_journal(kube, [DNS], "hotel", "dead")
    kube.objects["/apis/x/v1/hooks/h"] = {"metadata": {"name": "h", "resourceVersion": "3"}}
    journal.note_created(kube, recorded, ["/apis/x/v1/hooks/h", "/apis/x/v1/hooks/gone"], "dead")
    changed = kube.get(DNS_PATH)
    changed["data"]["Corefile"] = ".:53 { rewrite name a b }\n"
    kube.request("PUT", DNS_PATH, changed)
    assert journal.mend_leftovers(kube) == [DNS_PATH, "/apis/x/v1/hooks/h"]
    assert kube.get(DNS_PATH)["data"]["Corefile"] == ".:53 {}\n"
    assert "/apis/x/v1/hooks/h" not in kube.objects and JOURNAL_PATH not in kube.objects
    # a journal that cannot be read (cut short) mends nothing and is removed
    kube.objects[JOURNAL_PATH] = {"metadata": {"name": journal.JOURNAL[1], "resourceVersion": "1"},
                                  "data": {"objects": "{not json", "created": "["}}
    assert journal.mend_leftovers(kube) == [] and JOURNAL_PATH not in kube.objects


class _NamespacedServer(_Server):
    """Refuses an object in a namespace that does not exist, as an API server does (404)."""

    def request(self, method: str, path: str, body=None):
        parts = path.split("/")
        if method == "POST" and len(parts) > 5 and parts[3] == "namespaces":
            if f"/api/v1/namespaces/{parts[4]}" not in self.objects:
                raise ApiStatusError(404, f'namespaces "{parts[4]}" not found')
        return super().request(method, path, body)


def test_the_journal_makes_its_hidden_namespace_on_a_fresh_cluster():
    """The attempt's identity used to make the hidden namespace before anything else; it now comes after the
    injection (red-team round 21, finding 4), and a fresh cluster's first attempt with grants failed writing its
    journal: namespace sregym-system not found."""
    kube = _NamespacedServer({DNS_PATH: _corefile(".:53 {\n    forward . /etc/resolv.conf\n}\n"),
                              "/api/v1/namespaces/kube-system": {"metadata": {"name": "kube-system"}}})
    journal.open_journal(kube, [DNS], "hotel", "first")
    assert f"/api/v1/namespaces/{journal.JOURNAL[0]}" in kube.objects and JOURNAL_PATH in kube.objects
