"""Which ServiceAccount a pod may run as, by whom (issue #34, round 5, attack 9).

Kubernetes lets whoever creates a pod name any ServiceAccount of its namespace, and the pod then
holds that account's token: an agent without ``datastoreclusters/status`` ran a pod as the FleetCast
operator's account and wrote the status from inside it. Here a writer that is not in
``system:masters`` (the cluster's controllers and the benchmark are; their pods from a stored
template are not checked) may name, in a Pod or in the pod template of a Deployment, ReplicaSet,
StatefulSet, DaemonSet, ReplicationController, Job or CronJob (``serviceAccountName`` or the
deprecated ``serviceAccount``):

* nothing or ``default``;
* on update, the account the stored object already names (fixing the operator Deployment's image
  keeps working), or, for a workload (not a Pod or Job, whose templates nobody edits back), one
  ``system:masters`` wrote into the object of that kind, namespace and name before (held in memory
  since this API server started): putting back the account a fault changed, or a deleted Deployment
  as the app deployed it, keeps working too;
* an account that holds no right the writer lacks.

An account's rights are those of the RoleBindings (in every namespace) and ClusterRoleBindings
that name it (as a ServiceAccount or as the user ``system:serviceaccount:<ns>:<name>``), compared
rule by rule as RBAC escalation prevention does (``escalation.not_held``). Group bindings
(``system:serviceaccounts``...) are left out: every account of the namespace, ``default`` too,
holds those. Bindings name an account by name, not uid, so the rights go with the name: an account
the writer deleted and created again under the operator's name still holds the operator's Role, and
is refused; an account the writer created and bound within its own rights (escalation prevention
sees to that) is allowed. The benchmark's app manifests are written by ``system:masters``, so this
is what tells an app's privileged baseline account from one the writer's side made.

The same rule answers a TokenRequest (``serviceaccounts/token``) and a legacy token Secret (type
``kubernetes.io/service-account-token``) naming the account. This cluster has no token controller
filling such Secrets, so one gets no token here in any case; a real cluster's does fill them.

Nor may such a writer enter a pod that runs as such an account, where its token is mounted
(issue #34, follow-up): ``pods/exec``, ``pods/attach`` (and so ``kubectl cp``) and a
``pods/ephemeralcontainers`` update (``kubectl debug``) are refused; logs, get/describe and
port-forward stay open, for diagnosis. And it may not change what such a pod runs (a container's
``command`` or ``args``, or the command of an ``exec`` probe or lifecycle hook, in containers,
initContainers or ephemeralContainers; and what decides which code that command loads: the image, a
variable of :data:`LOADER_ENV` such as ``PYTHONPATH`` or ``LD_PRELOAD``, ``envFrom``, ``volumeMounts``,
``workingDir``, and the pod's ``volumes``: red-team round 6 ran its own module in the operator's
process through ``PYTHONPATH`` and a ConfigMap volume, and a stand-in on another image) in a Pod or pod template that runs as such an account, unless
the new value is the one the stored object holds for that container while running as that same
account, or one ``system:masters`` wrote into that object (kind, namespace, name) for that container
while it ran as that account (the history the accounts use: putting back what a fault changed keeps
working: the fix of ``fleetcast-operator-wrong-image`` puts back the image the app deployed). Other
env, resources, probes' other fields and the rest of the spec stay editable.

A refusal is 403 Forbidden naming the field, as the real API server's admission answers.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import ApiError
from .escalation import not_held
from .rbac import Authorizer, UserInfo
from .shapes import as_dict

#: (group, kind) -> path to the pod spec in the object
POD_SPEC_PATHS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): ("spec",),
    ("", "ReplicationController"): ("spec", "template", "spec"),
    **{("apps", kind): ("spec", "template", "spec")
       for kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")},
    ("batch", "Job"): ("spec", "template", "spec"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template", "spec"),
}
PLURALS = {"Pod": "pods", "ReplicationController": "replicationcontrollers", "Deployment": "deployments",
           "ReplicaSet": "replicasets", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets", "Job": "jobs",
           "CronJob": "cronjobs", "Secret": "secrets"}
LEGACY_TOKEN_TYPE = "kubernetes.io/service-account-token"
ACCOUNT_NAME_ANNOTATION = "kubernetes.io/service-account.name"
GUARDED_KINDS = {*POD_SPEC_PATHS, ("", "Secret")}
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
#: what a container runs, by path inside it: its command and args, and the commands of its exec probes and hooks
COMMAND_FIELDS: tuple[tuple[str, ...], ...] = (
    ("command",), ("args",),
    *((probe, "exec", "command") for probe in ("livenessProbe", "readinessProbe", "startupProbe")),
    *(("lifecycle", hook, "exec", "command") for hook in ("postStart", "preStop")),
)
#: what else decides the code a container runs, in its own fields: its image (another image the cluster
#: runs, with a program of the agent's choosing: a wrong-image fault's fix puts back the image the app
#: deployed, which the benchmark wrote), the variables every common runtime reads to load code before the
#: program's own (a module on PYTHONPATH, a library in LD_PRELOAD...), envFrom (which can set any of
#: them), the mounts (a ConfigMap over the program's files) and the working directory (``python -m``
#: imports from it first); red-team round 6, findings 4 and 5
CODE_FIELDS: tuple[tuple[str, ...], ...] = (("image",), ("envFrom",), ("volumeMounts",), ("workingDir",))
LOADER_ENV = ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONEXECUTABLE", "PYTHONINSPECT",
              "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "GCONV_PATH", "NODE_OPTIONS", "NODE_PATH",
              "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "PERL5LIB", "PERL5OPT",
              "RUBYOPT", "RUBYLIB", "BASH_ENV", "ENV")
POD = "pod"  # the container list of pod-level fields (``volumes``: what the mounts mount)
NONE = "null"  # a field left out: the image's own command (or no probe command)
ENTRY_SUBRESOURCES = ("exec", "attach", "ephemeralcontainers")


def guarded(group: str, kind: str) -> bool:
    return (group, kind) in GUARDED_KINDS


def _dig(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _field_prefix(path: tuple[str, ...]) -> str:
    return ".".join(path)


def named_accounts(group: str, kind: str, obj: Any) -> list[tuple[str, str]]:
    """(field, account) of every ServiceAccount ``obj`` names for its pods (or its token Secret)."""
    if not isinstance(obj, dict):
        return []
    if (group, kind) == ("", "Secret"):
        if obj.get("type") != LEGACY_TOKEN_TYPE:
            return []
        name = _dig(obj, ("metadata", "annotations", ACCOUNT_NAME_ANNOTATION))
        return [(f"metadata.annotations[{ACCOUNT_NAME_ANNOTATION}]", name)] if isinstance(name, str) and name else []
    path = POD_SPEC_PATHS.get((group, kind))
    spec = _dig(obj, path) if path else None
    if not isinstance(spec, dict):
        return []
    prefix = _field_prefix(path or ())
    return [(f"{prefix}.{field}", spec[field]) for field in ("serviceAccountName", "serviceAccount")
            if isinstance(spec.get(field), str) and spec[field]]


def _effective(group: str, kind: str, obj: Any) -> set[str]:
    """The accounts a stored object runs its pods as (``default`` when it names none)."""
    names = {name for _field, name in named_accounts(group, kind, obj)}
    return names or ({"default"} if (group, kind) != ("", "Secret") else set())


def runs_as(group: str, kind: str, obj: Any) -> str:
    """The account an object's pods run as: ``serviceAccountName``, else ``serviceAccount``, else ``default``."""
    spec = _dig(obj, POD_SPEC_PATHS.get((group, kind)) or ())
    if isinstance(spec, dict):
        for field in ("serviceAccountName", "serviceAccount"):
            if isinstance(spec.get(field), str) and spec[field]:
                return spec[field]
    return "default"


def commands(group: str, kind: str, obj: Any) -> dict[tuple[str, str, str], str]:
    """(container list, container name, field) -> what that field runs, as JSON text (``null`` when left
    out or empty), for every container of the object's pod spec."""
    path = POD_SPEC_PATHS.get((group, kind))
    spec = _dig(obj, path) if path else None
    out: dict[tuple[str, str, str], str] = {}
    if not isinstance(spec, dict):
        return out
    for lst in CONTAINER_LISTS:
        containers = spec.get(lst)
        for container in containers if isinstance(containers, list) else []:
            if not isinstance(container, dict):
                continue
            cname = str(container.get("name") or "")
            for field in (*COMMAND_FIELDS, *CODE_FIELDS):
                value = _dig(container, field)
                out[(lst, cname, ".".join(field))] = json.dumps(value, sort_keys=True) if value else NONE
            env = container.get("env")
            by_name = {str(e.get("name")): e for e in env if isinstance(e, dict)} if isinstance(env, list) else {}
            for variable in LOADER_ENV:
                entry = by_name.get(variable)
                out[(lst, cname, f"env[{variable}]")] = json.dumps(entry, sort_keys=True) if entry else NONE
    volumes = spec.get("volumes")
    out[(POD, "", "volumes")] = json.dumps(volumes, sort_keys=True) if volumes else NONE
    return out


def _history(core: Any) -> dict[tuple[str, str, str, str], set[str]]:
    history = getattr(core, "_accounts_masters_wrote", None)
    if history is None:
        history = {}
        core._accounts_masters_wrote = history
    return history


def _command_history(core: Any) -> dict[tuple[str, str, str, str], set[tuple[str, str, str, str, str]]]:
    """(group, kind, namespace, name) -> (account, container list, container, field, value) written by
    ``system:masters``: a value counts only for the account the object ran as when it was written."""
    history = getattr(core, "_commands_masters_wrote", None)
    if history is None:
        history = {}
        core._commands_masters_wrote = history
    return history


def _key(group: str, kind: str, namespace: str, obj: Any) -> tuple[str, str, str, str] | None:
    name = _dig(obj, ("metadata", "name"))
    return (group, kind, namespace, name) if isinstance(name, str) and name else None


def remember(core: Any, group: str, kind: str, namespace: str, *objs: Any) -> None:
    """Note the accounts a ``system:masters`` write (the app's deploy, a fault) puts in or finds in an object."""
    if (group, kind) not in POD_SPEC_PATHS or kind in ("Pod", "Job"):
        return
    for obj in objs:
        key = _key(group, kind, namespace, obj)
        if key is not None:
            _history(core).setdefault(key, set()).update(_effective(group, kind, obj))
            account = runs_as(group, kind, obj)
            _command_history(core).setdefault(key, set()).update(
                (account, *where, value) for where, value in commands(group, kind, obj).items())


def account_user(namespace: str, name: str) -> UserInfo:
    """The account as a subject, without the groups every account of the namespace shares."""
    return UserInfo(name=f"system:serviceaccount:{namespace}:{name}")


def rights_beyond(authz: Authorizer, user: UserInfo, namespace: str, account: str) -> list[str]:
    """The rights bound to ``namespace``/``account`` that ``user`` does not hold, printed as the
    escalation check prints them (with the namespace they hold in); empty when none."""
    if user.is_master:
        return []
    subject = account_user(namespace, account)
    held_cluster = authz.cluster_rules(user)
    missing = [f"{grant} cluster-wide" for grant in not_held(held_cluster, authz.cluster_rules(subject))]
    bound_in = sorted({str(b["metadata"].get("namespace") or "")
                       for b in authz.core.store.list("rolebindings.rbac.authorization.k8s.io")})
    for ns in bound_in:
        rules = authz.namespace_rules(subject, ns)
        if rules:
            held = held_cluster + authz.namespace_rules(user, ns)
            missing += [f"{grant} in namespace {ns}" for grant in not_held(held, rules)]
    return missing


def _refusal(user: UserInfo, plural: str, name: str, group: str, field: str, account: str,
             missing: list[str], why: str) -> ApiError:
    shown = "; ".join(missing[:6]) + (f"; and {len(missing) - 6} more" if len(missing) > 6 else "")
    return ApiError(403, f'{plural}{"." + group if group else ""} "{name}" is forbidden: {field}: Forbidden: '
                         f'ServiceAccount "{account}" holds rights user "{user.name}" does not hold ({shown}); '
                         f"{why}", "Forbidden", details={"name": name, "group": group, "kind": plural})


def check(authz: Authorizer, user: UserInfo, group: str, kind: str, namespace: str, obj: Any,
          stored: Any = None) -> None:
    """403 Forbidden when ``user``'s write of ``obj`` (``stored`` is the object it replaces, if
    any) names a ServiceAccount with more rights than ``user`` holds for its pods or token."""
    if user.is_master or not guarded(group, kind):
        return
    kept = _effective(group, kind, stored) if isinstance(stored, dict) else set()
    key = _key(group, kind, namespace, obj)
    kept |= _history(authz.core).get(key, set()) if key else set()
    metadata = as_dict(obj.get("metadata")) if isinstance(obj, dict) else {}
    name = str(metadata.get("name") or metadata.get("generateName") or "")
    for field, account in named_accounts(group, kind, obj):
        if account == "default" or account in kept:
            continue
        missing = rights_beyond(authz, user, namespace, account)
        if not missing:
            continue
        if kind == "Secret":
            why = "a token Secret may name only an account that holds no more than its writer"
        else:
            why = ('a pod may run as "default", as an account that holds no more than its writer, or (on update) '
                   "as the account the object already names")
        raise _refusal(user, PLURALS[kind], name, group, field, account, missing, why)
    if kind != "Secret":
        check_commands(authz, user, group, kind, namespace, obj, stored)


def check_commands(authz: Authorizer, user: UserInfo, group: str, kind: str, namespace: str, obj: Any,
                   stored: Any = None) -> None:
    """403 Forbidden when ``user`` changes what a container runs (command, args, an exec probe's or
    hook's command) in a Pod or pod template that runs as an account with rights ``user`` lacks,
    to a value neither the stored object (running as that account) nor a ``system:masters`` write of
    that object (running as that account) held for that container."""
    if user.is_master or (group, kind) not in POD_SPEC_PATHS:
        return
    account = runs_as(group, kind, obj)
    before = commands(group, kind, stored) if isinstance(stored, dict) and runs_as(group, kind, stored) == account \
        else {}
    key = _key(group, kind, namespace, obj)
    wrote = _command_history(authz.core).get(key, set()) if key else set()
    changed = [(where, value) for where, value in commands(group, kind, obj).items()
               if value != before.get(where, NONE if before else None) and (account, *where, value) not in wrote]
    if not changed:
        return
    missing = rights_beyond(authz, user, namespace, account)
    if not missing:
        return
    (lst, cname, field), _value = changed[0]
    index = next((i for i, c in enumerate(_dig(obj, (*POD_SPEC_PATHS[(group, kind)], lst)) or [])
                  if isinstance(c, dict) and str(c.get("name") or "") == cname), 0)
    metadata = as_dict(obj.get("metadata"))
    name = str(metadata.get("name") or metadata.get("generateName") or "")
    where = f"{lst}[{index}].{field}" if lst != POD else field
    raise _refusal(user, PLURALS[kind], name, group, f"{_field_prefix(POD_SPEC_PATHS[(group, kind)])}.{where}",
                   account, missing,
                   'what a pod running as it runs (a container\'s image, command or args, an exec probe\'s or '
                   'hook\'s command, a variable that loads code such as PYTHONPATH or LD_PRELOAD, envFrom, its '
                   'mounts, its working directory, the pod\'s volumes) may change only back to a value the '
                   'benchmark wrote into this object; other env and resources stay editable')


def check_entry(authz: Authorizer, user: UserInfo, namespace: str, pod: Any, subresource: str) -> None:
    """403 Forbidden for ``pods/exec``, ``pods/attach`` or a ``pods/ephemeralcontainers`` update by
    ``user`` on a pod running as an account with rights ``user`` lacks: its token is mounted there."""
    if user.is_master or subresource not in ENTRY_SUBRESOURCES or not isinstance(pod, dict):
        return
    account = runs_as("", "Pod", pod)
    missing = rights_beyond(authz, user, namespace, account)
    if missing:
        name = str(_dig(pod, ("metadata", "name")) or "")
        raise _refusal(user, "pods", name, "", f"pods/{subresource}", account, missing,
                       "a pod may be entered (exec, attach, cp, an ephemeral container) only by a caller that holds "
                       "every right of its ServiceAccount, whose token is mounted there; logs, describe and "
                       "port-forward stay open")


def check_token_request(authz: Authorizer, user: UserInfo, namespace: str, account: str) -> None:
    """403 Forbidden for a TokenRequest of an account with more rights than its requester."""
    missing = rights_beyond(authz, user, namespace, account)
    if missing:
        raise _refusal(user, "serviceaccounts", account, "", "serviceaccounts/token", account, missing,
                       "a token may be requested only for an account that holds no more than its requester")
