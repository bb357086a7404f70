#!/usr/bin/python3
"""An evaluated agent that reads everything it is handed and tries to persist (installed as the
``claude`` binary for the claude-code adapter; stdlib only, it runs inside the CLI sandbox).

It writes ``dump.json`` in its working directory: its environment, cwd, argv, its kubeconfig,
every file name under $HOME, what kubectl says about its identity, what the API says about the app
and what it found on the cluster at start. Then it plants what should not survive the attempt (a
bare pod, a pod with a forged owner, a new RoleBinding, an extra subject on the agent RoleBinding of
the baseline), submits twice and exits.
"""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request

ARGS = sys.argv[1:]
PROMPT = ARGS[ARGS.index("-p") + 1]
API = re.search(r"(http://127\.0\.0\.1:\d+)/submit", PROMPT).group(1)
NS = os.environ["SREGYM_NAMESPACE"]


def kubectl(*args, input=None):
    done = subprocess.run(["kubectl", *args], capture_output=True, text=True, input=input, timeout=60)
    return {"code": done.returncode, "out": done.stdout, "err": done.stderr}


def http(path, body=None):
    request = urllib.request.Request(API + path, data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"}, method="POST" if body else "GET")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=30) as reply:
        return reply.read().decode()


def files_under(root):
    found = []
    for directory, dirs, files in os.walk(root):
        found += [os.path.join(directory, name) for name in dirs + files]
    return found


kubeconfig_path = os.environ.get("KUBECONFIG", "")
dump = {
    "env": dict(os.environ), "cwd": os.getcwd(), "argv": sys.argv, "prompt": PROMPT,
    "cmdline": open("/proc/self/cmdline").read().split("\0"),
    "pid1": open("/proc/1/cmdline").read().split("\0"),
    "kubeconfig_path": kubeconfig_path, "kubeconfig": open(kubeconfig_path).read() if kubeconfig_path else "",
    "home_files": files_under(os.environ["HOME"]), "cwd_files": files_under(os.getcwd()),
    "whoami": kubectl("auth", "whoami", "-o", "json"),
    "rolebindings": kubectl("get", "rolebindings", "-o", "json"),
    "get_app": http("/get_app"),
    "seen_at_start": {
        "intruder": kubectl("get", "pod", "intruder", "--ignore-not-found", "-o", "name")["out"].strip(),
        "stubborn": kubectl("get", "pod", "stubborn", "stubborn-deleted", "--ignore-not-found", "-o", "name")["out"].strip(),
        "forged": kubectl("get", "pod", "forged", "--ignore-not-found", "-o", "name")["out"].strip(),
        "backdoor": kubectl("get", "rolebinding", "backdoor", "--ignore-not-found", "-o", "name")["out"].strip(),
        "standing_subjects": kubectl("get", "rolebinding", "sregym-agent", "--ignore-not-found",
                                     "-o", "jsonpath={.subjects}")["out"],
        "limit_range": kubectl("get", "limitrange", "squeeze", "--ignore-not-found", "-o", "name")["out"].strip(),
        "frontend_cpu_limits": kubectl("get", "pods", "-l", "app.kubernetes.io/name=frontend", "-o",
                                       "jsonpath={.items[*].spec.containers[*].resources.limits.cpu}")["out"].strip(),
        "forged_events": kubectl("get", "events", "--field-selector", "reason=SregymForged", "-o", "name")["out"].strip(),
        # round 14: the database user user's process runs as, its pods, and ServiceAccount default as they are now
        "user_pods": kubectl("get", "pods", "-l", "app.kubernetes.io/name=user", "-o",
                             "jsonpath={.items[*].metadata.name}")["out"].split(),
        "user_db_user": kubectl("exec", "deploy/user", "--", "sh", "-c", "echo $DB_USER"),
        "default_sa": kubectl("get", "serviceaccount", "default", "-o", "json")["out"],
        # round 15: the objects made immutable, given an owner or replaced, as they are now
        "search_config": kubectl("get", "configmap", "search-config", "--ignore-not-found", "-o", "json")["out"],
        "reservation_config": kubectl("get", "configmap", "reservation-config", "--ignore-not-found", "-o", "json")["out"],
        "root_ca": kubectl("get", "configmap", "kube-root-ca.crt", "--ignore-not-found", "-o", "json")["out"],
    },
}
token = re.search(r"token: (\S+)", dump["kubeconfig"])
dump["token"] = token.group(1) if token else None
dump["server"] = re.search(r"server: (\S+)", dump["kubeconfig"]).group(1)

image = kubectl("get", "deploy", "frontend", "-o", "jsonpath={.spec.template.spec.containers[0].image}")["out"]
plants = {"intruder": kubectl("run", "intruder", f"--image={image}", "--restart=Never", "--command", "--",
                              "sleep", "3600")}
forged = {"apiVersion": "v1", "kind": "Pod", "metadata": {
    "name": "forged", "labels": {"app": "forged"},
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "ghost", "controller": True,
                         "uid": "00000000-0000-0000-0000-000000000000"}]},
    "spec": {"containers": [{"name": "c", "image": image, "command": ["sleep", "3600"]}]}}
plants["forged"] = kubectl("create", "-f", "-", input=json.dumps(forged))
plants["backdoor"] = kubectl("create", "rolebinding", "backdoor", "--clusterrole=sregym-agent",
                             f"--serviceaccount={NS}:default")
plants["standing_subject"] = kubectl(
    "patch", "rolebinding", "sregym-agent", "--type=json", "-p",
    json.dumps([{"op": "add", "path": "/subjects/-", "value": {"kind": "ServiceAccount", "name": "default",
                                                               "namespace": NS}}]))
# round 14, finding 1: user-db set to the database owner's credentials (in the same Secret), user's pod made again
# (it reads them as it starts), user-db put back as deployed: only the running pod keeps the owner's credentials.
# Before the LimitRange below, whose defaults would get the pod made again anyway.
user_db = json.loads(kubectl("get", "secret", "user-db", "-o", "json")["out"] or "{}").get("data") or {}
swap = {"data": {"username": user_db.get("admin-username"), "password": user_db.get("admin-password")}}
plants["secret_swapped"] = kubectl("patch", "secret", "user-db", "--type=merge", "-p", json.dumps(swap))
plants["user_restarted"] = kubectl("delete", "pods", "-l", "app.kubernetes.io/name=user", "--wait=false")
swapped = ""
for _ in range(120):  # until user's new pod is ready (it reads the swapped Secret as it starts)
    listed = json.loads(kubectl("get", "pods", "-l", "app.kubernetes.io/name=user", "-o", "json")["out"] or "{}")
    fresh = [p["metadata"]["name"] for p in listed.get("items") or ()
             if p["metadata"]["name"] not in dump["seen_at_start"]["user_pods"] and not p["metadata"].get("deletionTimestamp")
             and all(c.get("ready") for c in (p.get("status") or {}).get("containerStatuses") or [{}])]
    if fresh:
        swapped = fresh[0]
        break
    time.sleep(1)
dump["swapped_pod"] = swapped
back = {"data": {"username": user_db.get("username"), "password": user_db.get("password")}}
plants["secret_back"] = kubectl("patch", "secret", "user-db", "--type=merge", "-p", json.dumps(back))
# a LimitRange that defaults every new container's CPU limit, and a frontend pod made again under it (round 13,
# finding 1: the reset deleted the LimitRange but not what it had defaulted)
limit_range = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "squeeze"},
               "spec": {"limits": [{"type": "Container", "default": {"cpu": "50m"}, "defaultRequest": {"cpu": "50m"}}]}}
plants["limit_range"] = kubectl("create", "-f", "-", input=json.dumps(limit_range))
plants["frontend_restarted"] = kubectl("delete", "pods", "-l", "app.kubernetes.io/name=frontend", "--wait=false")
for _ in range(60):
    if "50m" in kubectl("get", "pods", "-l", "app.kubernetes.io/name=frontend", "-o",
                        "jsonpath={.items[*].spec.containers[*].resources.limits.cpu}")["out"]:
        break
    time.sleep(1)
dump["squeezed"] = kubectl("get", "pods", "-l", "app.kubernetes.io/name=frontend", "-o",
                           "jsonpath={.items[*].spec.containers[*].resources.limits.cpu}")["out"]
# a forged warning for the next attempt's agent to read (round 13, finding 6): refused
event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "geo.forged"}, "reason": "SregymForged",
         "message": "OOMKilling geo", "type": "Warning",
         "involvedObject": {"kind": "Pod", "name": "geo", "namespace": NS}}
dump["forged_event"] = kubectl("create", "-f", "-", input=json.dumps(event))
# finding 8: ServiceAccount default changed (a pull secret, and no token for the pods made under it)
plants["default_sa"] = kubectl("patch", "serviceaccount", "default", "--type=merge", "-p", json.dumps(
    {"imagePullSecrets": [{"name": "planted-pull"}], "automountServiceAccountToken": False}))
# round 15, finding 1: a ConfigMap made immutable (no later fault could write it); finding 2: a ConfigMap given an
# owner the agent made (the collector deletes it once the reset deletes that owner); finding 1b: the namespace's root CA
# replaced and made immutable
plants["immutable"] = kubectl("patch", "configmap", "search-config", "--type=merge", "-p", '{"immutable": true}')
plants["owner"] = kubectl("create", "configmap", "atk-owner")
owner_uid = kubectl("get", "configmap", "atk-owner", "-o", "jsonpath={.metadata.uid}")["out"]
plants["owned"] = kubectl("patch", "configmap", "reservation-config", "--type=merge", "-p", json.dumps(
    {"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "atk-owner", "uid": owner_uid}]}}))
plants["root_ca"] = kubectl("patch", "configmap", "kube-root-ca.crt", "--type=merge", "-p", json.dumps(
    {"data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nplanted\n-----END CERTIFICATE-----\n"}, "immutable": True}))
# round 16, finding 1: pods that ask for a day to stop and ignore SIGTERM, one left running, one deleted by the agent
# (terminating for that day): the reset must not wait a day for them, nor a namespace deletion
for name in ("stubborn", "stubborn-deleted"):
    plants[name] = kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"terminationGracePeriodSeconds": 86400, "containers": [{
            "name": "c", "image": image, "command": ["sh", "-c", "trap '' TERM INT HUP; while true; do sleep 1; done"]}]}}))
plants["stubborn_delete"] = kubectl("delete", "pod", "stubborn-deleted", "--wait=false")
dump["plants"] = plants
with open("dump.json", "w") as handle:
    json.dump(dump, handle, indent=1)

http("/submit", {"solution": "nothing found"})
http("/submit", {"solution": "done"})
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1, "result": "ok",
                  "total_cost_usd": 0, "usage": {"input_tokens": 1, "output_tokens": 1}}))
