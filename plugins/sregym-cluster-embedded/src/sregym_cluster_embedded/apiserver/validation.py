"""Object name validation with the real API server's messages."""

from __future__ import annotations

import re

SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
# kinds whose names must be DNS-1123 labels (the rest are subdomains or path segments)
LABEL_KINDS = {"Namespace", "Service"}
# kinds whose names only have to be valid path segments
PATH_SEGMENT_KINDS = {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}


def name_problem(kind: str, name: str) -> str | None:
    """The validation message for ``name``, or None when it is fine."""
    if kind in PATH_SEGMENT_KINDS:
        if name in (".", "..") or "/" in name or "%" in name:
            return 'may not contain \'/\' or \'%\' or be "." or ".."'
        return None
    if kind in LABEL_KINDS:
        if len(name) > 63:
            return "must be no more than 63 characters"
        return None if LABEL_RE.match(name) else LABEL_MSG
    if len(name) > 253:
        return "must be no more than 253 characters"
    return None if SUBDOMAIN_RE.match(name) else SUBDOMAIN_MSG
