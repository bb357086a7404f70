"""Vocabulary the rule-based judge uses on top of each ground truth's own keywords.

Ground truths carry ``keywords`` (synonyms of their mechanism) written by the fault's author; these
tables add the common vocabulary for catalog faults, resource kinds and layers so that a fault
without keywords is still judged sensibly. Phrases are matched word-bounded after hyphens and
underscores become spaces.
"""

from __future__ import annotations

MECHANISM_TERMS: dict[str, tuple[str, ...]] = {
    "wrong-image": (
        "imagepullbackoff", "errimagepull", "image pull", "pull the image", "pulling the image",
        "cannot be pulled", "nonexistent image", "nonexistent tag", "non existent tag", "non existent image",
        "image does not exist", "tag does not exist", "image not found", "invalid image", "wrong image",
        "bad image", "unknown image", "manifest unknown", "image+does not exist", "image+not found",
        "tag+does not exist", "image+cannot pull", "image+cannot be pulled", "image+pull error",
    ),
    "buggy-image": ("buggy image", "buggy version", "regression", "code bug", "bug in", "buggy build", "defective image"),
    "missing-env": ("missing env", "environment variable", "env var", "removed env", "missing variable", "unset"),
    "env-shadowing": ("duplicate env", "duplicated env", "shadow", "defined twice", "overridden", "second definition"),
    "wrong-port-env": ("wrong port", "incorrect port", "port mismatch", "connection refused", "bad port", "port is set to"),
    "wrong-command": ("wrong command", "command override", "entrypoint", "wrong binary", "command was changed"),
    "scale-zero": (
        "scaled to zero", "scaled to 0", "scaled down to zero", "scaled down to 0", "zero replicas", "0 replicas",
        "replicas: 0", "replicas to 0", "replicas to zero", "replicas set to 0", "replica count of 0",
        "no replicas", "replicas=0",
    ),
    "selector-mismatch": (
        "selector", "selectors", "no endpoints", "endpoints are empty", "empty endpoints", "label mismatch",
        "does not match any pod", "matches no pods", "match no pods", "selects no pods",
    ),
    "selector-pollution": ("selector", "matches another", "foreign pods", "wrong pods", "extra pods in endpoints"),
    "wrong-target-port": ("targetport", "target port", "wrong port", "port mismatch", "connection refused"),
    "missing-service": ("service was deleted", "service deleted", "missing service", "service is missing", "nxdomain", "no such host"),
    "missing-configmap": ("configmap deleted", "missing configmap", "configmap is missing", "configmap not found"),
    "configmap-drift": ("missing key", "key removed", "key was removed", "configmap key", "config key"),
    "liveness-misconfig": ("liveness", "probe"),
    "liveness-aggressive": ("liveness", "probe", "initialdelayseconds", "failurethreshold"),
    "readiness-misconfig": ("readiness", "probe", "never ready"),
    "memory-limit-too-small": ("oomkilled", "out of memory", "memory limit", "oom"),
    "cpu-throttling": ("cpu limit", "throttl"),
    "request-too-large": ("insufficient", "failedscheduling", "request too large", "resource request"),
    "node-selector-missing": ("nodeselector", "node selector", "no node matches"),
    "network-policy-block": ("networkpolicy", "network policy", "deny all", "denies"),
    "db-revoke": (
        "revoke", "revoked", "privilege", "privileges", "grant", "grants", "lost permission", "insufficient privilege",
    ),
    "db-drop-user": ("role does not exist", "dropped role", "role was dropped", "user was dropped", "login role"),
    "db-password-rotated": ("password", "authentication failed", "credentials", "stale secret"),
    "db-max-connections": ("max connections", "max_connections", "too many clients", "connection limit"),
    "db-lock-contention": ("lock", "locked", "blocking query", "exclusive lock"),
    "cache-auth": ("requirepass", "noauth", "authentication required", "cache password"),
    "cache-tiny": ("evictions", "evicted", "memory cap", "cache size", "tiny cache", "cache too small"),
    "retry-storm": ("retry storm", "retries", "retry", "timeout", "metastable"),
}

KIND_TERMS: dict[str, tuple[str, ...]] = {
    "deployment": (
        "deployment", "deploy", "pod template", "pod spec", "container spec", "container", "image", "images", "rollout",
        "replicaset", "replicas", "memory limit", "cpu limit", "resource limit", "env var", "environment variable",
    ),
    "statefulset": ("statefulset", "sts", "pod template", "image", "replicas"),
    "daemonset": ("daemonset", "ds"),
    "service": ("service", "services", "svc", "selector", "selectors", "endpoints", "targetport", "target port", "clusterip"),
    "configmap": ("configmap", "config map", "configuration file", "config file"),
    "secret": ("secret", "credentials"),
    "networkpolicy": ("networkpolicy", "network policy"),
    "persistentvolumeclaim": ("pvc", "persistentvolumeclaim", "volume claim", "persistent volume"),
    "role": ("role", "rbac", "rolebinding", "clusterrole", "permission"),
    "node": ("node", "nodes", "kubelet"),
}

LAYER_TERMS: dict[str, tuple[str, ...]] = {
    "datastore": ("database", "db", "postgres", "postgresql", "sql", "memcached", "redis", "cache", "grant", "role"),
    "config": ("configuration", "config", "env var", "environment variable", "setting", "flag"),
    "network": ("network", "latency", "packet", "dns", "connection"),
    "os": ("syscall", "kernel", "file descriptor", "operating system", "ulimit"),
    "hardware": ("disk", "sector", "i/o error", "eio", "bad block", "cpu"),
    "storage": ("volume", "pvc", "disk", "storage"),
    "control": ("control plane", "scheduler", "controller", "api server"),
    "app": ("code", "bug", "application logic", "exception"),
}

GENERIC_SYMPTOMS: tuple[str, ...] = (
    "error", "errors", "5xx", "500", "502", "503", "504", "timeout", "timeouts", "timed out", "crashloopbackoff",
    "crash", "crashing", "restarts", "imagepullbackoff", "errimagepull", "pending", "failing", "fails", "failed",
    "failure", "latency", "slow", "refused", "unavailable", "no endpoints", "not ready", "outage", "down",
    "unreachable", "oomkilled", "denied", "evicting", "evictions", "evicted", "refused",
)

CAUSAL_WORDS: tuple[str, ...] = (
    "because", "due to", "caused by", "causes", "causing", "leads to", "leading to", "results in", "resulting in",
    "so that", "therefore", "which makes", "as a result", "hence", "which is why", "breaks", "so the",
)

# Phrases that blame the whole application instead of a component.
OVER_BROAD_PHRASES: tuple[str, ...] = (
    "all services", "all the services", "every service", "all microservices", "all components", "every component",
    "all pods", "all deployments", "every deployment", "entire application", "whole application",
    "the entire cluster", "the whole cluster", "everything is broken", "all of the services", "all databases",
    "all the databases", "every database", "all caches", "all datastores", "everything is failing",
)

LATENT_CUES: tuple[str, ...] = (
    "latent", "not user visible", "not yet visible", "not currently affecting", "secondary", "lower priority",
    "less urgent", "separately", "additionally", "also found", "in addition", "second issue", "second fault",
    "dormant", "not causing", "not yet causing",
)

# Values too generic to prove a diagnosis knows the concrete mutation.
TRIVIAL_VALUES = frozenset({"", "none", "null", "true", "false", "yes", "no", "all", "0", "1", "default"})
