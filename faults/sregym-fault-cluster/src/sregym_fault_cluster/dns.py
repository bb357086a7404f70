"""Cluster DNS faults: the Corefile in ``kube-system/coredns`` answers NXDOMAIN for app names.

Both change the same ConfigMap a real cluster's CoreDNS reads (the embedded DNS reads it too), by
inserting a ``template`` block into the server block. Their fix is cluster-scoped (the ConfigMap
lives in kube-system): an agent needs cluster scope to repair them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sregym_core.errors import PermanentFaultError
from sregym_core.faultkit import WORKLOADS, function_fault, kube, schema, users
from sregym_core.types import FaultSpec, TargetSelector

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sregym_core.faults import FaultContext
    from sregym_core.types import Target

NAMESPACE, NAME, KEY = "kube-system", "coredns", "Corefile"
SERVICE = TargetSelector(kinds=WORKLOADS, requires=("service",))
CLUSTER_DOMAIN = "cluster.local"


def _corefile(ctx: FaultContext) -> tuple[dict, str]:
    obj = kube.get(ctx, "configmap", NAME, namespace=NAMESPACE, missing_ok=True)
    if obj is None or KEY not in (obj.get("data") or {}):
        raise PermanentFaultError("this cluster has no kube-system/coredns ConfigMap with a Corefile")
    return obj, obj["data"][KEY]


def _write(ctx: FaultContext, text: str) -> None:
    kube.patch(ctx, "configmap", NAME, {"data": {KEY: text}}, namespace=NAMESPACE)


def _insert(corefile: str, block: str) -> str:
    """The Corefile with ``block`` first in the root server block (plugin order is CoreDNS's own)."""
    match = re.search(r"^\s*\.(?::\d+)?\s*\{[ \t]*\n", corefile, re.MULTILINE)
    if match is None:
        raise PermanentFaultError("the Corefile has no root server block ('.:53 {')")
    return corefile[:match.end()] + block + corefile[match.end():]


_TEMPLATE = re.compile(r"template\s+(\S+)\s+(\S+)([^{\n]*)\{(.*?)\}", re.DOTALL)


def nxdomain_for(corefile: str, fqdn: str) -> bool:
    """Whether a template in the Corefile answers NXDOMAIN (or SERVFAIL) for ``fqdn``'s A query."""
    name = fqdn.lower().rstrip(".") + "."
    for qclass, qtype, zones, body in _TEMPLATE.findall(corefile):
        if qclass.upper() not in ("IN", "ANY") or qtype.upper() not in ("A", "ANY"):
            continue
        zone_list = [z.lower().rstrip(".") + "." for z in zones.split()] or ["."]
        if not any(z == "." or name == z or name.endswith("." + z) for z in zone_list):
            continue
        rcode = re.search(r"^\s*rcode\s+(\S+)", body, re.MULTILINE)
        if not rcode or rcode.group(1).upper() not in ("NXDOMAIN", "SERVFAIL", "REFUSED"):
            continue
        patterns = re.findall(r'^\s*match\s+(.+)$', body, re.MULTILINE)
        regexes = [p.strip('"') for line in patterns for p in line.split()] or [".*"]
        for regex in regexes:
            try:
                if re.search(regex, name, re.IGNORECASE):
                    return True
            except re.error:
                continue
    return False


def _fqdn(ctx: FaultContext, target: Target) -> str:
    return f"{target.component.service_name}.{ctx.namespace}.svc.{CLUSTER_DOMAIN}"


def _inject(ctx: FaultContext, target: Target, block: str) -> None:
    _, text = _corefile(ctx)
    ctx.state["corefile"] = text
    _write(ctx, _insert(text, block))
    # clients resolve on (re)connect: roll the callers so they look the name up now
    kube.restart_dependents(ctx, target)


def service_nxdomain_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    fqdn = _fqdn(ctx, target)
    ctx.state["fqdn"] = fqdn
    regex = "^" + re.escape(fqdn).replace("\\.", "[.]").replace("\\-", "-") + "[.]$"
    _inject(ctx, target, f'    template IN A {ctx.namespace}.svc.{CLUSTER_DOMAIN} {{\n        match "{regex}"\n'
                         f"        rcode NXDOMAIN\n        fallthrough\n    }}\n")


def stale_zone_inject(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    ctx.state["fqdn"] = _fqdn(ctx, target)
    # a leftover from a migration: the whole service zone answered NXDOMAIN
    _inject(ctx, target, f"    template ANY ANY svc.{CLUSTER_DOMAIN} {{\n        rcode NXDOMAIN\n    }}\n")


def present(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool:
    _, text = _corefile(ctx)
    return nxdomain_for(text, ctx.state.get("fqdn") or _fqdn(ctx, target))


def fix(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    # as a cluster admin would: take the template out of the Corefile, then let callers reconnect
    obj, text = _corefile(ctx)
    cleaned = re.sub(r"^[ \t]*template\s[^{\n]*\{.*?^[ \t]*\}[ \t]*\n", "", text, flags=re.DOTALL | re.MULTILINE)
    _write(ctx, cleaned)
    kube.restart_dependents(ctx, target)
    users.wait_users_succeed(ctx)


def recover(ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> None:
    saved = ctx.state.get("corefile")
    if saved is not None:
        _write(ctx, saved)
        kube.restart_dependents(ctx, target)
        users.wait_users_after_recover(ctx, target)  # the next attempt starts from a healthy app


# what an SRE writes for "the cluster DNS was configured to deny the name" without CoreDNS's own words;
# the symptoms ("no such host", "cannot resolve") are left out: they alone do not say why
VOCABULARY = (
    "nxdomain", "coredns", "corefile", "cluster dns .. config*", "cluster's dns .. config*", "dns config*",
    "dns server .. config*", "dns .. template", "dns .. rule*", "dns .. rewrit*", "dns .. claim*",
    "dns .. changed to", "dns .. answer* .. not exist", "dns .. says .. not exist", "dns .. tampered",
    "non-existent domain", "nonexistent domain",
)

FAULTS: list[FaultSpec] = [
    function_fault(
        name="dns-nxdomain-service", summary="the cluster DNS answers NXDOMAIN for one service's name",
        layer="network", selector=SERVICE, resource_kind="ConfigMap",
        mechanism="a CoreDNS template in kube-system/coredns answers NXDOMAIN for the service's cluster name",
        inject=service_nxdomain_inject, is_present=present, recover=recover, reference_fix=fix,
        symptoms=("no such host", "NXDOMAIN", "connection errors"),
        keywords=("DNS", "NXDOMAIN", "CoreDNS", "Corefile", "template"),
        values=lambda t, p, s: {"fqdn": s.get("fqdn", ""), "configmap": f"{NAMESPACE}/{NAME}"},
        prose="The Corefile in {configmap} has a template answering NXDOMAIN for {fqdn}; {component}'s callers "
              "cannot resolve it.", vocabulary=VOCABULARY,
    ),
    function_fault(
        name="dns-stale-zone", summary="a stale Corefile template answers NXDOMAIN for every service name",
        layer="network", selector=SERVICE, resource_kind="ConfigMap",
        mechanism="a CoreDNS template in kube-system/coredns answers NXDOMAIN for the whole svc zone",
        inject=stale_zone_inject, is_present=present, recover=recover, reference_fix=fix,
        symptoms=("no such host", "NXDOMAIN"),
        keywords=("DNS", "NXDOMAIN", "CoreDNS", "Corefile", "template", "svc.cluster.local"),
        values=lambda t, p, s: {"zone": f"svc.{CLUSTER_DOMAIN}", "configmap": f"{NAMESPACE}/{NAME}"},
        prose="A stale template in the Corefile ({configmap}) answers NXDOMAIN for every name under {zone}.",
        vocabulary=VOCABULARY,
    ),
]

__all__ = ["FAULTS", "nxdomain_for"]
