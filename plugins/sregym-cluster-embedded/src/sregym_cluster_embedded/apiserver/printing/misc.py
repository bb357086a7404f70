"""Printers for networking, scheduling, coordination, RBAC, extension kinds and custom resources."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .columns import (
    AGE_DOC,
    NAME_DOC,
    Column,
    Printer,
    age_column,
    as_dict,
    as_int,
    as_list,
    dig,
    format_label_selector,
    meta_name,
    name_column,
)
from .core import load_balancer_text
from .jsonpath import JSONPathError, find, go_text
from .timefmt import parse_time, rfc3339, since


def _age(obj: dict[str, Any], now: datetime) -> str:
    return since(dig(obj, "metadata", "creationTimestamp"), now)


def _created_at(obj: dict[str, Any]) -> str:
    return rfc3339(dig(obj, "metadata", "creationTimestamp"))


CREATED_AT_COLUMNS = (name_column(), Column("Created At", "date", AGE_DOC))

# Resources served without a dedicated printer get the generic NAME / CREATED AT table in a
# real cluster (CRDs, roles); kinds we do not know at all fall back to NAME / AGE.
CREATED_AT_PRINTER = Printer(CREATED_AT_COLUMNS, lambda obj, now: [meta_name(obj), _created_at(obj)])
GENERIC_PRINTER = Printer((name_column(), age_column()), lambda obj, now: [meta_name(obj), _age(obj, now)])

NETWORK_POLICY_PRINTER = Printer(
    (name_column(), Column("Pod-Selector", "string", ("V1NetworkPolicySpec", "pod_selector")), age_column()),
    lambda np, now: [meta_name(np), format_label_selector(dig(np, "spec", "podSelector", default={})), _age(np, now)],
)


def _ingress_hosts(rules: Any) -> str:
    """Up to three rule hosts; the overflow count is of rules, as in the real printer."""
    rules = as_list(rules)
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
        if not more and isinstance(rule, dict) and rule.get("host"):
            hosts.append(str(rule["host"]))
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - 3} more..." if more else text


def _ingress_address(ingress: dict[str, Any]) -> str:
    return load_balancer_text(ingress.get("status"))


INGRESS_PRINTER = Printer(
    (
        name_column(),
        Column("Class", "string", "The name of the IngressClass resource that should be used for additional configuration"),
        Column("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
        Column("Address", "string", "Address is a list containing ingress points for the load-balancer"),
        Column("Ports", "string", "Ports of TLS configurations that open"),
        age_column(),
    ),
    lambda ing, now: [
        meta_name(ing),
        str(dig(ing, "spec", "ingressClassName", default="")) or "<none>",
        _ingress_hosts(dig(ing, "spec", "rules")),
        _ingress_address(ing),
        "80, 443" if as_list(dig(ing, "spec", "tls")) else "80",
        _age(ing, now),
    ],
)


def _ingress_class_parameters(ic: dict[str, Any]) -> str:
    params = as_dict(dig(ic, "spec", "parameters"))
    if not params:
        return "<none>"
    group = params.get("apiGroup") or ""
    kind = f"{params.get('kind', '')}.{group}" if group else str(params.get("kind", ""))
    return f"{kind}/{params.get('name', '')}"


INGRESS_CLASS_PRINTER = Printer(
    (
        name_column(),
        Column("Controller", "string", "Controller that is responsible for handling this class"),
        Column("Parameters", "string", "A reference to a resource with additional parameters"),
        age_column(),
    ),
    lambda ic, now: [meta_name(ic), str(dig(ic, "spec", "controller", default="")), _ingress_class_parameters(ic), _age(ic, now)],
)

PRIORITY_CLASS_PRINTER = Printer(
    (
        name_column(),
        Column("Value", "integer", ("V1PriorityClass", "value")),
        Column("Global-Default", "boolean", ("V1PriorityClass", "global_default")),
        age_column(),
        Column("PreemptionPolicy", "string", ("V1PriorityClass", "preemption_policy")),
    ),
    lambda pc, now: [
        meta_name(pc),
        as_int(pc.get("value")),
        bool(pc.get("globalDefault") or False),
        _age(pc, now),
        str(pc.get("preemptionPolicy") or ""),
    ],
)

LEASE_PRINTER = Printer(
    (name_column(), Column("Holder", "string", ("V1LeaseSpec", "holder_identity")), age_column()),
    lambda lease, now: [meta_name(lease), str(dig(lease, "spec", "holderIdentity", default="")), _age(lease, now)],
)

# ---------------------------------------------------------------------------- RBAC


def _subjects(binding: dict[str, Any]) -> tuple[str, str, str]:
    users: list[str] = []
    groups: list[str] = []
    accounts: list[str] = []
    for subject in as_list(binding.get("subjects")):
        if not isinstance(subject, dict):
            continue
        kind, name = subject.get("kind"), str(subject.get("name") or "")
        if kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
        elif kind == "ServiceAccount":
            accounts.append(f"{subject.get('namespace') or ''}:{name}")
    return ", ".join(users), ", ".join(groups), ", ".join(accounts)


def _binding_cells(binding: dict[str, Any], now: datetime) -> list[Any]:
    ref = as_dict(binding.get("roleRef"))
    return [meta_name(binding), f"{ref.get('kind', '')}/{ref.get('name', '')}", _age(binding, now), *_subjects(binding)]


def _binding_printer(label: str) -> Printer:
    return Printer(
        (
            name_column(),
            Column("Role", "string", ("V1RoleBinding", "role_ref")),
            age_column(),
            Column("Users", "string", f"Users in the {label}", priority=1),
            Column("Groups", "string", f"Groups in the {label}", priority=1),
            Column("ServiceAccounts", "string", f"ServiceAccounts in the {label}", priority=1),
        ),
        _binding_cells,
    )


BINDING_PRINTER = _binding_printer("roleBinding")
CLUSTER_BINDING_PRINTER = _binding_printer("clusterRoleBinding")

# Roles and ClusterRoles have no dedicated printer either.
ROLE_PRINTER = CREATED_AT_PRINTER

WEBHOOK_CONFIGURATION_PRINTER = Printer(
    (
        name_column(),
        Column("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"),
        age_column(),
    ),
    lambda cfg, now: [meta_name(cfg), len(as_list(cfg.get("webhooks"))), _age(cfg, now)],
)

# ---------------------------------------------------------------------------- custom resources

DEFAULT_CR_COLUMNS: list[dict[str, Any]] = [
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "description": ""}
]


def crd_printer_columns(crd: dict[str, Any], version: str | None = None) -> list[dict[str, Any]]:
    """The ``additionalPrinterColumns`` of the served (or requested) version; Age when none."""
    versions = [v for v in as_list(dig(crd, "spec", "versions")) if isinstance(v, dict)]
    chosen = None
    if version is not None:
        chosen = next((v for v in versions if v.get("name") == version), None)
    if chosen is None:
        chosen = next((v for v in versions if v.get("storage")), None) or (versions[0] if versions else None)
    columns = as_list(dig(chosen, "additionalPrinterColumns")) if chosen else []
    if not columns:
        columns = as_list(dig(crd, "spec", "additionalPrinterColumns"))  # apiextensions v1beta1 shape
    columns = [c for c in columns if isinstance(c, dict) and c.get("jsonPath", c.get("JSONPath"))]
    return columns or DEFAULT_CR_COLUMNS


def _cell(column: dict[str, Any], obj: dict[str, Any], now: datetime) -> Any:
    path = str(column.get("jsonPath") or column.get("JSONPath") or "")
    try:
        results = find(obj, path)
    except JSONPathError:
        return None
    if not results:
        return None
    value = results[0]
    kind = column.get("type", "string")
    if kind == "date":
        if not isinstance(value, str):
            return None
        return since(value, now) if parse_time(value) is not None else "<invalid>"
    if kind == "integer":
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    if kind == "number":
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    return go_text(value)


def custom_resource_printer(crd: dict[str, Any], version: str | None = None) -> Printer:
    specs = crd_printer_columns(crd, version)
    columns = [Column("Name", "string", NAME_DOC, format="name")]
    for spec in specs:
        columns.append(
            Column(
                str(spec.get("name") or ""),
                # Date columns are rendered to ages server-side, like the real CRD table convertor.
                str(spec.get("type") or "string"),
                str(spec.get("description") or ""),
                as_int(spec.get("priority")),
                str(spec.get("format") or ""),
            )
        )

    def cells(obj: dict[str, Any], now: datetime) -> list[Any]:
        return [meta_name(obj), *(_cell(spec, obj, now) for spec in specs)]

    return Printer(tuple(columns), cells)
