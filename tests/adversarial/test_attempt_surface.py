"""Attacks from inside a real attempt: a CLI agent (the claude-code adapter with a stand-in binary,
in its bubblewrap sandbox) that dumps everything it is handed and plants objects that should not
outlive its attempt. Two attempts run back to back on the shared embedded cluster.

* issue 14 item 1, the answer in plain sight: no path, variable, argument, identity or URL the agent
  sees names the problem, its fault or its target;
* item 6, persistence: the pods and RoleBinding subjects it adds are gone after the reset and are
  not in the next attempt's baseline; its token is refused once the attempt is over;
* round 13: a pod made again under a LimitRange the agent created loses what it defaulted with the reset, and
  the agent cannot write Events (a forged warning for the next attempt);
* round 14: a pod made again while a Secret it reads held other credentials (the Secret then put back) is made again
  by the reset, and ServiceAccount ``default`` is put back as shipped;
* round 15: a ConfigMap made immutable, one given an owner the agent made, and the namespace's ``kube-root-ca.crt``
  replaced and made immutable are all as deployed in the next attempt;
* round 16: pods that ask for a day to stop and ignore SIGTERM (one running, one already deleted) hold neither the reset
  nor the run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
BIN = Path(sys.executable).parent
SREGYM, KUBECTL = str(BIN / "sregym"), str(BIN / "kubectl")
PROBLEM, FAULT, TARGET = "hotel-wrong-image-geo", "wrong-image", "geo"
NS = "hotel-reservation"


@pytest.fixture(scope="module")
def two_attempts(deployed):
    from sregym_agent_cli.sandbox import bwrap_path

    if bwrap_path() is None:
        pytest.skip("bubblewrap is not usable here")
    # the sandbox's unprivileged user must reach the binary (pytest's tmp dirs are root-only)
    tools = Path(tempfile.mkdtemp(prefix="sregym-adv-"))
    tools.chmod(0o755)
    fake = tools / "claude"
    shutil.copyfile(HERE / "fake_dumper_cli.py", fake)
    fake.chmod(0o755)
    results = tools / "results"
    env = {**deployed.environ, "SREGYM_CLAUDE_BINARY": str(fake)}
    try:
        done = subprocess.run([SREGYM, "run", "--problem", PROBLEM, "--agent", "claude-code", "--attempts", "2",
                               "--cluster", deployed.name, "--results", str(results), "--oracle-window", "5"],
                              env=env, capture_output=True, text=True, timeout=1500)
        assert done.returncode == 0, done.stderr[-3000:]
        records = [json.loads(line) for line in (results / "results.jsonl").read_text().splitlines()]
        assert [r["attempt"] for r in records] == [1, 2]
        dumps = []
        for record in records:
            attempt_id = record["extra"]["attempt_id"]
            dump = results / ".work" / attempt_id / "agent" / "claude-code" / "dump.json"
            assert dump.exists(), f"the agent of attempt {record['attempt']} left no dump: {record.get('error')}"
            dumps.append(json.loads(dump.read_text()))
        yield {"records": records, "dumps": dumps, "results": results, "cluster": deployed}
    finally:
        shutil.rmtree(tools, ignore_errors=True)


def _admin(cluster, *args: str) -> subprocess.CompletedProcess:
    """kubectl as the cluster admin; a failure is an error (its empty output would pass an absence check)."""
    done = subprocess.run([KUBECTL, "--kubeconfig", str(cluster.kubeconfig), *args], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, (args, done.stderr)
    return done


def test_nothing_the_agent_is_handed_names_the_problem(two_attempts):
    for dump in map(dict, two_attempts["dumps"]):
        prompt = dump.pop("prompt")
        get_app = dump.pop("get_app")
        rolebindings = dump.pop("rolebindings")  # kubectl output about the app's objects
        dump.pop("plants")
        # the description lists every component, the target among them; nothing else may name it
        for text in (prompt, get_app):
            assert PROBLEM not in text and FAULT not in text
        # the sandbox's init (bwrap) carries the prompt and the environment in its own argv
        argv = [a for a in dump["argv"] + dump["cmdline"] + dump["pid1"] if a != prompt]
        named = {"env": json.dumps(dump["env"]), "cwd": dump["cwd"], "argv": json.dumps(argv),
                 "kubeconfig_path": dump["kubeconfig_path"], "kubeconfig": dump["kubeconfig"],
                 "home_files": json.dumps(dump["home_files"]), "cwd_files": json.dumps(dump["cwd_files"]),
                 "identity": dump["whoami"]["out"]}
        for where, text in named.items():
            for secret in (PROBLEM, FAULT, TARGET):
                assert secret not in text, f"{secret!r} appears in the agent's {where}: {text[:500]}"
        assert dump["whoami"]["code"] == 0 and "system:serviceaccount:sregym-system:agent-" in dump["whoami"]["out"]
        for secret in (PROBLEM, FAULT):
            assert secret not in rolebindings["out"]
    # two attempts, two identities, two directories
    first, second = two_attempts["dumps"]
    assert first["cwd"] != second["cwd"] and first["token"] != second["token"]
    assert json.loads(first["whoami"]["out"]) != json.loads(second["whoami"]["out"])


def test_what_the_agent_planted_does_not_survive_the_reset(two_attempts):
    first, second = two_attempts["dumps"]
    # the plants took (so the reset really had something to remove)
    for name, result in first["plants"].items():
        assert result["code"] == 0, (name, result["err"])
    # the second attempt started from the baseline, without them
    assert second["seen_at_start"]["intruder"] == "" and second["seen_at_start"]["forged"] == ""
    assert second["seen_at_start"]["backdoor"] == ""
    assert second["seen_at_start"]["stubborn"] == ""
    # round 13: the first attempt's LimitRange squeezed a frontend pod it made again; the reset removed both
    assert "50m" in first["squeezed"], first["squeezed"]
    assert second["seen_at_start"]["limit_range"] == ""
    assert "50m" not in second["seen_at_start"]["frontend_cpu_limits"], second["seen_at_start"]
    # and an Event is the cluster's to write: the forged warning was refused, and none is there next time
    assert first["forged_event"]["code"] != 0 and "forbidden" in first["forged_event"]["err"].lower()
    assert second["seen_at_start"]["forged_events"] == ""
    assert f'"namespace":"{NS}"' not in second["seen_at_start"]["standing_subjects"].replace(" ", "")
    # round 14, finding 1: user's pod made again while user-db held the owner's credentials, user-db put back; the
    # next attempt starts with a user pod that read the deployed Secret
    deployed_user = first["seen_at_start"]["user_db_user"]
    assert deployed_user["code"] == 0 and deployed_user["out"].strip(), deployed_user
    assert first["swapped_pod"], "user's pod was not made again under the swapped Secret"
    assert first["swapped_pod"] not in second["seen_at_start"]["user_pods"], second["seen_at_start"]["user_pods"]
    next_user = second["seen_at_start"]["user_db_user"]
    assert (next_user["code"], next_user["out"]) == (0, deployed_user["out"]), next_user
    # finding 8: ServiceAccount default as shipped
    shipped = json.loads(first["seen_at_start"]["default_sa"])
    after = json.loads(second["seen_at_start"]["default_sa"])
    fields = ("imagePullSecrets", "automountServiceAccountToken", "secrets")
    assert {f: after.get(f) for f in fields} == {f: shipped.get(f) for f in fields}, after
    assert after["metadata"]["uid"] == shipped["metadata"]["uid"]  # put back, not deleted
    # round 15: the next attempt finds search-config writable again, reservation-config there without the owner the
    # agent gave it (the collector did not follow the owner's deletion), and the namespace's CA as the cluster made it
    search = json.loads(second["seen_at_start"]["search_config"] or "{}")
    assert search and not search.get("immutable"), search
    reservation = json.loads(second["seen_at_start"]["reservation_config"] or "{}")
    assert reservation and not reservation["metadata"].get("ownerReferences"), reservation
    assert json.loads(first["seen_at_start"]["reservation_config"])["data"] == reservation["data"]
    root_ca = json.loads(second["seen_at_start"]["root_ca"] or "{}")
    assert root_ca and not root_ca.get("immutable") and "planted" not in json.dumps(root_ca.get("data")), root_ca
    assert json.loads(first["seen_at_start"]["root_ca"])["data"] == root_ca["data"]
    # and after the run, nothing either attempt planted is left
    cluster = two_attempts["cluster"]
    pods = _admin(cluster, "get", "pods", "-n", NS, "-o", "name").stdout.split()
    assert pods and "pod/intruder" not in pods and "pod/forged" not in pods
    # round 16, finding 1: the pods that asked for a day to stop are gone (the run above ended, its reset too)
    assert "pod/stubborn" not in pods and "pod/stubborn-deleted" not in pods, pods
    assert _admin(cluster, "get", "rolebinding", "backdoor", "-n", NS, "--ignore-not-found", "-o", "name").stdout == ""
    assert second["swapped_pod"] and f"pod/{second['swapped_pod']}" not in pods
    assert _admin(cluster, "exec", "-n", NS, "deploy/user", "--", "sh", "-c", "echo $DB_USER").stdout == deployed_user["out"]
    account = json.loads(_admin(cluster, "get", "serviceaccount", "default", "-n", NS, "-o", "json").stdout)
    assert {f: account.get(f) for f in fields} == {f: shipped.get(f) for f in fields}, account
    subjects = json.loads(_admin(cluster, "get", "rolebinding", "sregym-agent", "-n", NS, "-o",
                                 "jsonpath={.subjects}").stdout)
    assert [(s["kind"], s["name"], s["namespace"]) for s in subjects] == [("ServiceAccount", "sregym-agent",
                                                                           "sregym-system")]
    # the per-attempt bindings and accounts are gone as well
    bindings = _admin(cluster, "get", "rolebindings", "-n", NS, "-o", "name").stdout.split()
    assert "rolebinding.rbac.authorization.k8s.io/sregym-agent" in bindings  # the place agent bindings are made
    assert not [b for b in bindings if b.startswith("rolebinding.rbac.authorization.k8s.io/agent-")], bindings
    accounts = _admin(cluster, "get", "serviceaccounts", "-n", "sregym-system", "-o", "name").stdout.split()
    assert "serviceaccount/sregym-agent" in accounts  # the place agent accounts are made
    assert not [a for a in accounts if a.startswith("serviceaccount/agent-")], accounts


def test_the_agent_token_is_refused_after_the_attempt(two_attempts):
    for dump in two_attempts["dumps"]:
        assert dump["token"]
        probe = subprocess.run([KUBECTL, "get", "pods", "-n", NS, "--server", dump["server"], "--token", dump["token"],
                                "--insecure-skip-tls-verify", "--kubeconfig", os.devnull],
                               capture_output=True, text=True, timeout=60)
        assert probe.returncode != 0 and "Unauthorized" in probe.stderr, probe.stderr
