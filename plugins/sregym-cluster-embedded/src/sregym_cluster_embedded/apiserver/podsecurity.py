"""Pod Security admission: the Pod Security Standards, per namespace, as Kubernetes applies them.

A namespace chooses a level per mode with labels: ``pod-security.kubernetes.io/<mode>: <level>``
(mode ``enforce``, ``warn`` or ``audit``; level ``privileged``, ``baseline`` or ``restricted``)
and optionally ``pod-security.kubernetes.io/<mode>-version`` (default ``latest``). ``enforce``
refuses pods (403 Forbidden, ``pods "x" is forbidden: violates PodSecurity "baseline:latest":
...``), including those a controller creates (its FailedCreate event carries the message) and
ephemeral containers; ``warn`` answers with ``Warning: would violate PodSecurity ...`` headers,
for pods and for workload templates; ``audit`` records the violations in the audit log. An
unlabelled namespace is ``privileged`` (no checks), as on a cluster without an admission config.

The checks, and their messages, follow the Pod Security Standards page (kubernetes.io): baseline
refuses host namespaces, privileged containers, non-default capabilities, hostPath volumes, host
ports, hostProcess, an unmasked /proc, forbidden AppArmor/SELinux/seccomp settings and unsafe
sysctls; restricted also requires allowPrivilegeEscalation=false, runAsNonRoot, a non-zero
runAsUser, seccomp RuntimeDefault or Localhost, capabilities dropped to ALL (NET_BIND_SERVICE may
be added) and only the restricted volume types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PREFIX = "pod-security.kubernetes.io/"
MODES = ("enforce", "audit", "warn")
LEVELS = ("privileged", "baseline", "restricted")
AUDIT_ANNOTATION = "pod-security.kubernetes.io/audit-violations"
#: a namespace annotation: the host ports baseline admits (the Pod Security Standards allow "a
#: known list" instead of none); the embedded cluster's own, which the namespace's labels enable
ALLOWED_HOST_PORTS = "pod-security.sregym.io/allowed-host-ports"

BASELINE_CAPABILITIES = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                         "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes"}
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}
#: kinds whose pod template warn/audit check (enforce applies to pods only, as in Kubernetes)
TEMPLATE_PATHS = {
    "Deployment": ("spec", "template"), "ReplicaSet": ("spec", "template"), "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"), "Job": ("spec", "template"), "ReplicationController": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"), "PodTemplate": ("template",),
}


def policy(labels: dict[str, str] | None) -> dict[str, tuple[str, str]]:
    """mode -> (level, version) from a namespace's labels (a bad level counts as restricted)."""
    labels = labels or {}
    out = {}
    for mode in MODES:
        level = labels.get(PREFIX + mode)
        if level is None:
            continue
        if level not in LEVELS:
            level = "restricted"
        out[mode] = (level, labels.get(f"{PREFIX}{mode}-version") or "latest")
    return out


# ---------------------------------------------------------------- the checks


def _containers(spec: dict) -> list[dict]:
    return [c for key in ("initContainers", "containers", "ephemeralContainers") for c in spec.get(key) or []
            if isinstance(c, dict)]


def _names(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def _who(names: list[str], pod_too: bool = False) -> str:
    word = "container" if len(names) == 1 else "containers"
    return f"pod or {word} {_names(names)}" if pod_too else f"{word} {_names(names)}"


def _sc(container: dict) -> dict:
    return container.get("securityContext") or {}


def _check_allow_privilege_escalation(spec: dict) -> str | None:
    bad = [c.get("name", "") for c in _containers(spec) if _sc(c).get("allowPrivilegeEscalation") is not False]
    if bad:
        return f"allowPrivilegeEscalation != false ({_who(bad)} must set securityContext.allowPrivilegeEscalation=false)"
    return None


def _check_apparmor(spec: dict, meta: dict) -> str | None:
    bad = []
    profiles = [(spec.get("securityContext") or {}).get("appArmorProfile")] + \
        [_sc(c).get("appArmorProfile") for c in _containers(spec)]
    for profile in profiles:
        if profile and profile.get("type") not in ("RuntimeDefault", "Localhost"):
            bad.append(f'"{profile.get("type")}"')
    for key, value in (meta.get("annotations") or {}).items():
        if key.startswith("container.apparmor.security.beta.kubernetes.io/") and value != "runtime/default" \
                and not value.startswith("localhost/"):
            bad.append(f'{key}="{value}"')
    return f"forbidden AppArmor profiles ({', '.join(bad)})" if bad else None


def _check_capabilities_baseline(spec: dict) -> str | None:
    bad_containers, bad_caps = [], []
    for c in _containers(spec):
        added = [str(cap) for cap in (_sc(c).get("capabilities") or {}).get("add") or []]
        extra = [cap for cap in added if cap not in BASELINE_CAPABILITIES]
        if extra:
            bad_containers.append(c.get("name", ""))
            bad_caps += [cap for cap in extra if cap not in bad_caps]
    if bad_containers:
        return (f"non-default capabilities ({_who(bad_containers)} must not include {_names(bad_caps)} in "
                "securityContext.capabilities.add)")
    return None


def _check_capabilities_restricted(spec: dict) -> str | None:
    no_drop, bad_add, caps = [], [], []
    for c in _containers(spec):
        wanted = _sc(c).get("capabilities") or {}
        if "ALL" not in [str(x) for x in wanted.get("drop") or []]:
            no_drop.append(c.get("name", ""))
        extra = [str(x) for x in wanted.get("add") or [] if str(x) != "NET_BIND_SERVICE"]
        if extra:
            bad_add.append(c.get("name", ""))
            caps += [x for x in extra if x not in caps]
    parts = []
    if no_drop:
        parts.append(f'{_who(no_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if bad_add:
        parts.append(f"{_who(bad_add)} must not include {_names(caps)} in securityContext.capabilities.add")
    return f"unrestricted capabilities ({'; '.join(parts)})" if parts else None


def _check_host_namespaces(spec: dict) -> str | None:
    used = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key)]
    return f"host namespaces ({', '.join(used)})" if used else None


def _check_host_path(spec: dict) -> str | None:
    bad = [v.get("name", "") for v in spec.get("volumes") or [] if isinstance(v, dict) and "hostPath" in v]
    if bad:
        return f"hostPath volumes ({'volume' if len(bad) == 1 else 'volumes'} {_names(bad)})"
    return None


def _check_host_ports(spec: dict, allowed: str = "") -> str | None:
    """Refused entirely, or (the standard's alternative) outside a known list: the namespace
    annotation ALLOWED_HOST_PORTS (``*`` or ``80,443``) of the embedded cluster."""
    if allowed.strip() == "*":
        return None
    known = {int(p) for p in allowed.split(",") if p.strip().isdigit()}
    names, ports = [], []
    for c in _containers(spec):
        used = [int(p["hostPort"]) for p in c.get("ports") or [] if isinstance(p, dict) and p.get("hostPort")
                and int(p["hostPort"]) not in known]
        if used:
            names.append(c.get("name", ""))
            ports += [p for p in used if p not in ports]
    if names:
        verb = "uses" if len(names) == 1 else "use"
        noun = "hostPort" if len(ports) == 1 else "hostPorts"
        return f"hostPort ({_who(names)} {verb} {noun} {', '.join(str(p) for p in ports)})"
    return None


def _check_host_process(spec: dict) -> str | None:
    pod_level = ((spec.get("securityContext") or {}).get("windowsOptions") or {}).get("hostProcess")
    bad = [c.get("name", "") for c in _containers(spec) if (_sc(c).get("windowsOptions") or {}).get("hostProcess")]
    if pod_level or bad:
        who = "pod" if pod_level and not bad else (_who(bad) if not pod_level else f"pod and {_who(bad)}")
        return f"hostProcess ({who} must not set securityContext.windowsOptions.hostProcess=true)"
    return None


def _check_privileged(spec: dict) -> str | None:
    bad = [c.get("name", "") for c in _containers(spec) if _sc(c).get("privileged")]
    return f"privileged ({_who(bad)} must not set securityContext.privileged=true)" if bad else None


def _check_proc_mount(spec: dict) -> str | None:
    bad = [c.get("name", "") for c in _containers(spec) if _sc(c).get("procMount") not in (None, "Default")]
    if bad:
        return f'procMount ({_who(bad)} must not set securityContext.procMount to "Unmasked")'
    return None


def _check_restricted_volumes(spec: dict) -> str | None:
    bad = []
    for volume in spec.get("volumes") or []:
        if not isinstance(volume, dict):
            continue
        kinds = [k for k in volume if k != "name"]
        kind = kinds[0] if kinds else "emptyDir"
        if kind not in RESTRICTED_VOLUMES:
            bad.append(f'volume "{volume.get("name", "")}" uses restricted volume type "{kind}"')
    return f"restricted volume types ({', '.join(bad)})" if bad else None


def _check_run_as_non_root(spec: dict) -> str | None:
    pod = (spec.get("securityContext") or {}).get("runAsNonRoot")
    if pod is False:
        return "runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)"
    explicit_false = [c.get("name", "") for c in _containers(spec) if _sc(c).get("runAsNonRoot") is False]
    if explicit_false:
        return f"runAsNonRoot != true ({_who(explicit_false)} must not set securityContext.runAsNonRoot=false)"
    if pod is True:
        return None
    unset = [c.get("name", "") for c in _containers(spec) if _sc(c).get("runAsNonRoot") is not True]
    if unset:
        return f"runAsNonRoot != true ({_who(unset, pod_too=True)} must set securityContext.runAsNonRoot=true)"
    return None


def _check_run_as_user(spec: dict) -> str | None:
    if (spec.get("securityContext") or {}).get("runAsUser") == 0:
        return "runAsUser=0 (pod must not set runAsUser=0)"
    bad = [c.get("name", "") for c in _containers(spec) if _sc(c).get("runAsUser") == 0]
    return f"runAsUser=0 ({_who(bad)} must not set runAsUser=0)" if bad else None


def _check_selinux(spec: dict) -> str | None:
    options = [(spec.get("securityContext") or {}).get("seLinuxOptions")] + \
        [_sc(c).get("seLinuxOptions") for c in _containers(spec)]
    bad = []
    for opt in filter(None, options):
        if opt.get("type", "") not in SELINUX_TYPES:
            bad.append(f'type "{opt.get("type")}"')
        if opt.get("user"):
            bad.append(f'user "{opt.get("user")}"')
        if opt.get("role"):
            bad.append(f'role "{opt.get("role")}"')
    return f"seLinuxOptions (forbidden securityContext.seLinuxOptions: {', '.join(bad)})" if bad else None


def _seccomp(spec: dict) -> tuple[str | None, list[tuple[str, str | None]]]:
    pod = ((spec.get("securityContext") or {}).get("seccompProfile") or {}).get("type")
    return pod, [(c.get("name", ""), (_sc(c).get("seccompProfile") or {}).get("type")) for c in _containers(spec)]


def _check_seccomp_baseline(spec: dict) -> str | None:
    pod, containers = _seccomp(spec)
    bad = [name for name, kind in containers if kind == "Unconfined"]
    if pod == "Unconfined" and not bad:
        return 'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")'
    if bad:
        who = f"pod and {_who(bad)}" if pod == "Unconfined" else _who(bad)
        return f'seccompProfile ({who} must not set securityContext.seccompProfile.type to "Unconfined")'
    return None


def _check_seccomp_restricted(spec: dict) -> str | None:
    pod, containers = _seccomp(spec)
    allowed = ("RuntimeDefault", "Localhost")
    if pod is not None and pod not in allowed:
        return f'seccompProfile (pod must not set securityContext.seccompProfile.type to "{pod}")'
    wrong = [name for name, kind in containers if kind is not None and kind not in allowed]
    if wrong:
        return (f"seccompProfile ({_who(wrong)} must not set securityContext.seccompProfile.type to "
                f'"{dict(containers)[wrong[0]]}")')
    if pod is None:
        unset = [name for name, kind in containers if kind is None]
        if unset:
            return (f"seccompProfile ({_who(unset, pod_too=True)} must set securityContext.seccompProfile.type "
                    'to "RuntimeDefault" or "Localhost")')
    return None


def _check_sysctls(spec: dict) -> str | None:
    bad = [s.get("name", "") for s in (spec.get("securityContext") or {}).get("sysctls") or []
           if isinstance(s, dict) and s.get("name") not in SAFE_SYSCTLS]
    return f"forbidden sysctls ({', '.join(bad)})" if bad else None


Check = Callable[[dict, dict], str | None]
#: (id, lowest level it applies at, check), in the order Kubernetes reports them
CHECKS: list[tuple[str, str, Check]] = [
    ("allowPrivilegeEscalation", "restricted", lambda s, m: _check_allow_privilege_escalation(s)),
    ("appArmorProfile", "baseline", _check_apparmor),
    ("capabilities_baseline", "baseline", lambda s, m: _check_capabilities_baseline(s)),
    ("capabilities_restricted", "restricted", lambda s, m: _check_capabilities_restricted(s)),
    ("hostNamespaces", "baseline", lambda s, m: _check_host_namespaces(s)),
    ("hostPathVolumes", "baseline", lambda s, m: _check_host_path(s)),
    ("hostPorts", "baseline", lambda s, m: _check_host_ports(s, m.get(ALLOWED_HOST_PORTS, ""))),
    ("hostProcess", "baseline", lambda s, m: _check_host_process(s)),
    ("privileged", "baseline", lambda s, m: _check_privileged(s)),
    ("procMount", "baseline", lambda s, m: _check_proc_mount(s)),
    ("restrictedVolumes", "restricted", lambda s, m: _check_restricted_volumes(s)),
    ("runAsNonRoot", "restricted", lambda s, m: _check_run_as_non_root(s)),
    ("runAsUser", "restricted", lambda s, m: _check_run_as_user(s)),
    ("seLinuxOptions", "baseline", lambda s, m: _check_selinux(s)),
    ("seccompProfile_baseline", "baseline", lambda s, m: _check_seccomp_baseline(s)),
    ("seccompProfile_restricted", "restricted", lambda s, m: _check_seccomp_restricted(s)),
    ("sysctls", "baseline", lambda s, m: _check_sysctls(s)),
]
#: at restricted, these restricted checks replace their baseline counterparts
_OVERRIDDEN = {"capabilities_baseline": "capabilities_restricted", "seccompProfile_baseline": "seccompProfile_restricted"}


def evaluate(level: str, meta: dict, spec: dict, namespace_annotations: dict | None = None) -> list[str]:
    """The violations of one pod (metadata, spec) at a level, as Kubernetes words them."""
    if level == "privileged":
        return []
    options = {ALLOWED_HOST_PORTS: (namespace_annotations or {}).get(ALLOWED_HOST_PORTS, "")}
    out = []
    for check_id, lowest, check in CHECKS:
        if lowest == "restricted" and level != "restricted":
            continue
        if level == "restricted" and check_id in _OVERRIDDEN:
            continue
        result = check(spec or {}, {**(meta or {}), **options}) if check_id == "hostPorts" else \
            check(spec or {}, meta or {})
        if result:
            out.append(result)
    return out


def _label(level: str, version: str) -> str:
    return f'"{level}:{version}"'


def pod_template(obj: dict) -> tuple[dict, dict] | None:
    """(metadata, spec) of a workload's pod template (None for other kinds)."""
    path = TEMPLATE_PATHS.get(obj.get("kind", ""))
    if path is None:
        return None
    node: Any = obj
    for key in path:
        node = (node or {}).get(key) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return None
    return node.get("metadata") or {}, node.get("spec") or {}


def enforce(labels: dict | None, pod: dict, annotations: dict | None = None) -> str | None:
    """The Forbidden message for a pod the namespace's enforce level refuses, else None."""
    mode = policy(labels).get("enforce")
    if mode is None:
        return None
    violations = evaluate(mode[0], pod.get("metadata") or {}, pod.get("spec") or {}, annotations)
    if not violations:
        return None
    name = (pod.get("metadata") or {}).get("name") or (pod.get("metadata") or {}).get("generateName", "")
    return f'pods "{name}" is forbidden: violates PodSecurity {_label(*mode)}: {", ".join(violations)}'


def warnings_and_audit(labels: dict | None, obj: dict, annotations: dict | None = None) -> tuple[list[str], str | None]:
    """(``Warning`` header values, audit annotation) for a pod or a workload's template."""
    modes = policy(labels)
    if obj.get("kind") == "Pod":
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    else:
        template = pod_template(obj)
        if template is None:
            return [], None
        meta, spec = template
    warnings, audit = [], None
    if "warn" in modes:
        violations = evaluate(modes["warn"][0], meta, spec, annotations)
        if violations:
            warnings.append(f"would violate PodSecurity {_label(*modes['warn'])}: {', '.join(violations)}")
    if "audit" in modes:
        violations = evaluate(modes["audit"][0], meta, spec, annotations)
        if violations:
            audit = f"would violate PodSecurity {_label(*modes['audit'])}: {', '.join(violations)}"
    return warnings, audit


def namespace_update_warnings(old_labels: dict | None, new_labels: dict | None, pods: list[dict]) -> list[str]:
    """What the API server warns when a namespace's enforce level changes: the existing pods that
    would not be admitted under it."""
    old, new = policy(old_labels).get("enforce"), policy(new_labels).get("enforce")
    if new is None or new == old:
        return []
    out = []
    offending = []
    for pod in pods:
        violations = evaluate(new[0], pod.get("metadata") or {}, pod.get("spec") or {})
        if violations:
            offending.append(f"{pod['metadata'].get('name')}: {', '.join(violations)}")
    if offending:
        namespace = pods[0]["metadata"].get("namespace", "")
        out.append(f'existing pods in namespace "{namespace}" violate the new PodSecurity enforce level '
                   f'{_label(*new)}')
        out += offending[:10]
    return out
