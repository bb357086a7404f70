"""Vocabulary the rule-based judge reads diagnoses with.

A fault's mechanism vocabulary normally comes with the fault: ``GroundTruth.vocabulary`` (filled by the
fault's own spec, so plugin faults bring theirs). :data:`MECHANISMS` is the fallback for faults whose
truth carries none, and the table the judge uses to notice *other* mechanisms a diagnosis asserts
(kitchen sinks, wrong mechanisms).

Pattern syntax (matched over lower-cased text where hyphens, underscores and slashes are spaces):

* words match whole words; ``word*`` matches any word starting with ``word``;
* ``..`` stands for up to five words in between (``image .. never published``);
* ``a + b`` needs both ``a`` and ``b`` in the same sentence, in any order.

Entries say what was *done* (the mechanism), in the words SREs use, including plain paraphrases
("lost its read rights", "the release tag was never published", "RAM ceiling"). Bare generic
words (service, port, memory, image, flag, config, error) never appear alone: they say nothing
about a mechanism by themselves.
"""

from __future__ import annotations

MECHANISMS: dict[str, tuple[str, ...]] = {
    "wrong-image": (
        "version .. never built", "never built", "never pushed", "never published", "was never released", "version .. does not exist", "nothing to download",
        "image pull*", "pull* the image", "pull* .. image", "fail* to pull",
        "cannot be pulled", "can not pull", "cannot pull", "manifest unknown", "image .. not found",
        "image .. does not exist", "image .. doesn't exist", "tag .. does not exist", "tag .. not found",
        "tag .. doesn't exist", "tag .. not existing", "image .. not existing", "version .. doesn't exist",
        "version .. not existing", "tag .. not in .. registry", "version .. not in .. registry",
        "nonexistent tag", "nonexistent image", "non existent tag", "non existent image", "missing tag",
        "wrong image", "bad image", "bad tag", "invalid image", "invalid tag", "unknown tag", "wrong tag",
        "image tag + missing", "image + never published", "release + never published", "tag + never published",
        "build + never published", "build .. does not have", "registry .. does not have", "release .. not exist",
        "registry does not have", "fail* to download", "cannot download", "image + cannot be fetched",
        "cannot fetch", "image + does not exist", "tag + does not exist",
    ),
    "buggy-image": (
        "buggy image", "buggy build", "buggy version", "buggy release", "bad build", "regression", "code bug",
        "defective image", "defective build", "broken build", "broken release", "new release + bug*",
        "image + bug*", "build + bug*", "roll back", "rollback",
    ),
    "missing-env": (
        "setting + taken out", "setting + removed", "no longer tell*", "address + taken out", "env* var* .. removed", "env* var* .. missing", "env* var* .. deleted", "env* var* .. gone",
        "missing env*", "removed env*", "deleted env*", "lost .. env* var*", "lost .. variable", "env* var* .. lost", "environment variable + removed",
        "environment variable + missing", "environment variable + deleted", "setting + gone from the deployment",
        "no longer get* .. password", "no longer .. told", "env + no * password", "env has .. but no",
        "env* has no", "env* .. no longer has", "env* .. does not have",
        "variable + removed", "variable + deleted", "variable + missing", "password + not configured",
        "password not set", "unset",
    ),
    "env-shadowing": (
        "duplicate env*", "duplicated env*", "shadow*", "defined twice", "second definition", "overridden", "override*",
        "addr twice", "twice + env*", "twice + variable*", "twice + entr*", "defined .. two times", "duplicate entry", "duplicate .. entry", "second entry", "later entry", "later one .. wins",
        "last one wins", "second .. wins", "duplicate .. variable", "duplicate environment",
    ),
    "wrong-port-env": ("port .. instead of", "points at port", "wrong port number", "wrong door number", "port number .. where .. not listening", "wrong port", "incorrect port", "port mismatch", "points at the wrong port", "port is set to"),
    "wrong-command": (
        "wrong command", "command override*", "command .. overridden", "command .. changed", "entrypoint",
        "wrong binary", "runs a different program", "maintenance mode", "sleep",
    ),
    "scale-zero": ("copies .. to 0", "copies .. set to 0", "copies .. to zero", "copies .. is 0", 
        "no copies", "run* none", "keep none", "keep no copies", "scaled to zero", "scaled to 0", "scaled down to zero", "scaled down to 0", "scale* .. to zero",
        "scale* .. to 0", "zero replicas", "0 replicas", "replicas: 0", "replicas to 0", "replicas to zero",
        "replicas set to 0", "replicas set to zero", "replicas is 0", "replicas is zero", "replica count of 0",
        "no replicas", "replicas=0", "replicas 0", "wants zero copies", "zero copies", "zero instances",
        "nobody is running", "no .. pod exists", "no pod at all", "0/0",
    ),
    "selector-mismatch": (
        "only forwards to pods tagged", "forwards only to pods tagged", "pods tagged as", "none of .. pods is tagged", "no pod is tagged", "selector + does not match", "selector + matches no", "selector + match no", "selector + no pod",
        "selector + not tagged", "selector + require*", "selector + demand*", "selector + mismatch*",
        "selector + changed", "selector + wrong", "selector mismatch", "label mismatch", "selector + no longer match*",
        "does not match any pod", "matches no pods", "selects no pods", "looking for pods tagged",
        "routes to nothing", "not tagged that way",
    ),
    "selector-pollution": (
        "selector + also match*", "selector + foreign", "selector + other workload*", "foreign pods",
        "wrong pods in .. endpoints", "decoy", "extra pods in .. endpoints",
    ),
    "wrong-target-port": (
        "targetport", "target port", "maps .. port onto", "forward* .. to .. port", "forward* traffic to .. port",
        "wrong door", "port mapping", "sent to the wrong port", "sends .. to port .. on the pods",
        "port .. on the pods .. nothing listens",
    ),
    "service-port-mismatch": ("service port + changed", "service port + wrong", "port mismatch", "wrong service port",
                              "service entry .. only .. port", "service .. now .. only .. port", "service .. port .. now"),
    "missing-service": (
        # its name entry in plain words ("the entry other programs use to reach geo by name was deleted")
        "entry .. reach .. by name", "name entry .. deleted", "name entry .. removed", "address entry .. removed",
        "address entry .. deleted",
        "service .. deleted", "service .. removed", "service .. missing", "service .. no longer exists",
        "service .. gone", "service .. not found", "services .. not found", "deleted .. service",
        "removed .. service", "missing service", "no service object", "address .. is gone",
        "service .. does not exist", "service .. doesn't exist", "no such service",
    ),
    "missing-configmap": (
        "configuration + removed from the cluster", "settings object + removed", "settings object + deleted", "configmap + gone", "config map .. deleted", "configmap .. removed", "configuration object .. deleted", "configuration object .. removed","configmap .. deleted", "configmap .. missing", "configmap .. not found", "missing configmap"),
    "configmap-drift": (
        "key .. removed", "key .. missing", "key .. deleted", "key .. dropped", "section .. removed",
        "section .. absent", "section .. missing", "section .. dropped", "block .. removed", "block .. dropped",
        "lost the block", "lost .. block", "lost their .. block", "dropped it", "configmap + missing",
        "configmap + removed", "configmap + absent", "config validation failed", "peers + absent",
        "peers + removed", "peers + missing", "peers + dropped", "peers + lost",
    ),
    "liveness-misconfig": ("whether .. is alive", "decides .. alive", 
        "liveness", "keep alive check", "keep-alive check", "health check .. wrong", "health check + wrong url",
        "asks the wrong url", "probe* .. wrong path", "probe* .. wrong port",
        "probes .. where .. serves nothing", "alive check",
    ),
    "liveness-aggressive": (
        "liveness", "liveness + probe .. too aggressive", "liveness + failurethreshold", "liveness + initialdelayseconds",
        "liveness + aggressive probe"),
    "readiness-misconfig": (
        "may get traffic", "may receive traffic", "allowed to get traffic", "never put behind", "ready to get traffic", "ready to receive traffic", "readiness check", "never .. ready", "ready check", "never marked ready", "not marked ready","readiness", "never ready", "readiness probe"),
    "memory-limit-too-small": (
        "memory limit", "limits memory", "limits.memory", "ram ceiling", "ram limit", "memory cap",
        "capped at .. memory", "capped at .. mi", "memory ceiling", "limit .. mi", "exceeds .. limit",
        "oomkilled + limit", "oom killed + limit", "oom kill* + limit",
    ),
    "cpu-throttling": (
        "paus* it", "keeps pausing", "of a core", "millicore*", "cpu .. too low", "cpu .. cut", "allowed .. core", "cpu starved", "starved of cpu","cpu limit", "throttl*", "cpu quota", "cpu cap"),
    "request-too-large": (
        "reserve* .. ram", "reserve* .. memory", "more ram than", "asks for more .. than", "asks for .. more than",
        "memory request", "requests .. memory", "request .. larger than", "request* .. gi",
        "insufficient memory", "insufficient cpu", "reserve .. of ram", "reserve .. of memory",
        "more memory than", "more than any node", "more than the machine", "resource request",
    ),
    "node-selector-missing": (
        "only on machines", "only on nodes", "machines carrying", "nodes carrying", "label none of .. have", "label .. no node has", "label .. no machine has",
        "nodeselector", "node selector", "node label", "no node has", "no node matches", "no such machines",
        "machines labelled", "nodes labelled", "node affinity", "disktype",
    ),
    "taint-no-toleration": ("taint*", "toleration*", "noschedule"),
    "anti-affinity-deadlock": ("anti affinity", "antiaffinity", "never .. on .. same machine", "never .. on .. same node",
                               "not .. two .. on the same machine", "not .. two .. on the same node"),
    "network-policy-block": (
        "networkpolicy", "network policy", "deny all", "deny-all", "denies .. ingress", "deny .. ingress",
        "default deny", "firewall", "drops all incoming", "lets nothing in", "cut off", "isolates",
        "policy object", "blocks .. ingress", "blocking .. ingress", "blocks .. traffic", "blocking traffic",
        # (named alone, the policy is the object: "a network policy that was changed"; what it does says the fault)
        "network polic* .. block*", "networkpolic* .. block*", "network polic* .. den*", "networkpolic* .. den*",
        "network polic* .. drop*", "networkpolic* .. drop*",
    ),
    "db-revoke": (
        "revok*", "privilege*", "grant*", "lost .. rights", "read rights", "table permissions",
        "permissions were taken away", "permission* .. removed", "permission* .. taken", "no longer allowed",
        "not allowed to read", "stripped of", "lost its permission*", "lost permission*",
        "insufficient privilege",
    ),
    "db-drop-user": (
        "account + no longer exists", "account .. deleted", "account .. dropped", "account .. removed", "role .. deleted", "role .. removed", "role .. gone", "role .. no longer exists", "login .. no longer exists", "user .. dropped","role .. dropped", "dropped .. role", "role does not exist", "user was dropped", "drop role", "login role"),
    "db-password-rotated": (
        "password .. rotated", "rotated .. password", "password .. changed", "changed .. password",
        "new password", "old password", "stale password", "stale credential*", "old credential*",
        "yesterday's credentials", "stale one", "old value", "password rotation", "rotation",
    ),
    "db-max-connections": ("max connections", "max_connections", "too many clients", "connection limit", "connection slots"),
    "db-lock-contention": ("exclusive lock", "lock contention", "holds .. lock", "blocking query", "locked table", "lock on"),
    "cache-auth": ("ask* for a password", "want* a password", "switched to .. password", "password + demand*", "password + insist*", "login secret", "insist* on .. login", "insist* on .. password", "requires a password", "demands a password", "now requires .. password", "requirepass", "noauth", "authentication required", "cache password", "auth required"),
    "cache-tiny": (
        "m 1", "-m 1", "cache .. too small", "cache .. far too small", "too small .. cache", "shrunk",
        "memory size .. set to", "memory .. set to .. mb", "1 mb", "one megabyte", "single megabyte",
        "limit maxbytes", "limit_maxbytes", "cache size", "tiny cache", "hold almost nothing", "holds almost nothing",
        "memcached .. memory limit", "memory limit .. memcached", "memory size",
        # plain English for the memory option cut down (issue #35)
        "memory cap", "memory .. cut", "memory .. lowered", "memory .. reduced", "memory .. shrunk", "only .. mb of memory",
    ),
    "cache-flood": ("flood*", "junk keys", "rogue writer", "cache warming"),
    "retry-storm": (
        # "retries" alone is what any caller of a broken service does; the mechanism is the retry policy
        "retry storm", "retry polic*", "retry config*", "retry setting*", "retry budget", "aggressive retr*",
        "retr* .. too aggressive", "too many retr*", "retr* + no backoff", "retr* + amplif*", "retries + ms timeout",
        "no backoff", "without backoff", "backoff", "rpc timeout", "amplif*",
        "tries again", "try again", "no pause between", "flood of repeats", "gives up .. after .. ms", "timeout .. ms",
    ),
    "rate-limit-collapse": ("rate limit", "admission queue", "queue depth"),
    "disk-full": (
        "disk full", "disk is full", "volume .. full", "filled up", "filled by", "full disk", "no space left",
        "enospc", "ran out of room", "out of space", "ate the rest", "100% used", "100 used", "junk file",
        "stray file", ".fill", "fill file",
        "no more space", "stray .. file", "big file", "large file", "pvc .. full", "claim .. full", "remaining space",
    ),
    "disk-bad-blocks": ("bad block*", "bad sector*", "input output error", "i o error", "eio", "dm dust", "disk failure"),
    "latent-sector-error": ("sector error", "bad sector*", "latent sector"),
    "feature-flag-bug": (
        "feature flag", "feature toggle", "toggle", "feature recommend v2", "flag + enabl*", "flag + turned on",
        "flag + switched on", "switched on .. logic", "v2 .. logic", "v2 .. code path", "recommendv2",
    ),
    # flagd-served flags (Astronomy Shop, TrainTicket): the faults bring their own vocabulary; these are
    # the plain-English "switch" paraphrases united with it
    "flagd-flag": ("switch + turned on", "switches + turned on", "switch + flipped", "switches + flipped", "switch + set to on",
                   # a flag of flagd's ConfigMap said to be on (red-team round 15, finding 8: "In addition, the adFailure
                   # flag in flagd-config is on" beside another fault's cause was read as nothing)
                   "flag* + flagd* + is on", "flag* + flagd* + turned on", "flag* + flagd* + enabled", "flagd* + defaultvariant* + on"),
    "tt-flag": ("switch + turned on", "switches + turned on", "switch + flipped", "switches + flipped", "switch + set to on"),
    "missing-secret": (
        "credentials + removed", "credentials + deleted", "credentials + gone", "secret + gone", "secret + removed", "stores .. login + removed", "stores .. credentials + removed", "login + removed", "secret .. not found","secret .. deleted", "secret .. missing", "secret not found", "missing secret", "deleted secret"),
    "network-delay": ("network delay", "netem", "added latency", "slow network", "latency injected", "network + delay*",
                      "held back .. on the network", "delayed .. on the network", "seconds on the network",
                      "delay* .. by .. node", "node* + delay*", "latency + added to", "tc qdisc"),
    "network-loss": ("packet loss", "dropping packets", "drops packets", "netem"),
    "wrong-dns-policy": ("look up names", "looks up names", "look names up", "name lookups .. at", "resolver .. set to", "dnspolicy", "dns policy", "nameserver", "resolv.conf"),
    "fd-limit": ("files and connections open", "open files", "files .. open at once", "open file limit", "file descriptor*", "ulimit", "nofile", "too many open files", "emfile"),
    "host-port-conflict": ("hostport", "host port"),
    "sidecar-port-conflict": ("sidecar", "address already in use"),
    "init-hang": ("init container", "initcontainer*", "init 0 1"),
    "rolling-update-broken": ("maxunavailable", "rollout strategy", "rolling update", "maxsurge"),
    "pvc-claim-mismatch": ("claimname", "claim .. does not exist", "persistentvolumeclaim not found", "pvc .. not found", "wrong claim"),
    "quota-admission": ("resourcequota", "resource quota", "quota", "must specify limits"),
    "capacity-constraint": ("resourcequota", "resource quota", "quota", "exceeded quota"),
    "limitrange-too-small": ("limitrange", "limit range"),
    "wrong-service-account": ("service account", "serviceaccount"),
    # naming the autoscaler is naming where it shows, not what was done (its maxReplicas, its metric are other faults)
    "hpa-no-request": ("cpu request* .. removed", "cpu request* .. missing", "cpu request* .. deleted", "no cpu request*",
                       "without .. cpu request*", "missing .. cpu request*", "removed .. cpu request*",
                       "deleted .. cpu request*", "lost .. cpu request*",
                       "not .. cpu request*", "no resource request*", "no requests", "cpu request* .. gone",
                       "cannot compute .. utili*", "can not compute .. utili*", "no request .. cpu",
                       "no longer asks for", "does not ask for .. cpu", "doesn't ask for .. cpu", "asks for no cpu",
                       # the field by its path, with what happened to it (the path alone is any quota's or limit's)
                       "no longer has .. requests.cpu", "lost .. requests.cpu", "without .. requests.cpu",
                       "removed .. requests.cpu", "requests.cpu .. removed", "requests.cpu .. missing",
                       "missing request for cpu", "no .. requests.cpu", "lost .. resources.requests.cpu",
                       "no longer has .. resources.requests.cpu", "without .. resources.requests.cpu",
                       "removed .. resources.requests.cpu", "no .. resources.requests.cpu"),
    # (the victim's pods "were Preempted" is what one sees; what was done is a higher-priority workload preempting them)
    "priority-preemption": ("priority .. preempt*", "preempt* .. priority", "preempt* by", "preempting", "preempts",
                            "priorityclass", "priority class"),
    "cpu-pressure": ("cpu pressure", "cpu hog", "cpu contention", "noisy neighbo*"),
    "cpu-noisy-neighbor": ("noisy neighbo*", "cpu hog", "cpu contention"),
    "ephemeral-ports": ("ephemeral port*", "port exhaustion", "eaddrnotavail"),
    "node-not-ready": ("notready", "node not ready", "kubelet stopped", "kubelet down"),
    "kubelet-crash": ("kubelet .. crash*", "kubelet .. crash loop*", "kubelet .. exit*", "kubeletconfiguration",
                      "imagegc*", "image gc", "image garbage collection", "failed to validate kubelet configuration"),
    # "stuck Terminating", "being deleted" are what one sees of it (any finalizer that is not removed), not what was done
    # (not the controller's name alone: any mention of the controller)
    "finalizer-deadlock": ("finalizer*", "deletiontimestamp", "role .. read only", "made read only",
                           "only allowed to read", "may only read", "can only read", "allowed to read .. not .. change"),
    "syscall-fail": ("fsync", "syscall", "ebpf", "injected error"),
    # FleetCast's operator faults (issue #40): phrases that say what was changed in the custom resource or the
    # operator, so that another fault's text names them as other mechanisms (a universal text lists them all)
    "datastore-replicas-overload": ("spec replicas", "replicas .. 100000", "100000 replicas", "too many replicas",
                                    "replica count .. raised", "replicas .. raised", "far more replicas"),
    "datastore-missing-storage-class": ("storageclassname", "storage class .. does not exist", "storageclass .. does not exist",
                                        "missing storage class", "nonexistent storage class", "unknown storage class"),
    "datastore-invalid-toleration": ("invalid effect", "toleration effect", "invalid toleration", "effect .. not valid",
                                     "unsupported value"),
    "datastore-invalid-run-as-user": ("runasuser", "run as user", "negative uid", "uid -1", "must be between 0"),
    "datastore-invalid-update-strategy": ("updatestrategy", "update strategy", "strategy type", "invalid strategy"),
    "operator-image-typo": ("image typo", "typo in .. image", "misspelled image", "operator image", "image .. typo"),
}

KIND_TERMS: dict[str, tuple[str, ...]] = {
    "deployment": (
        "deployment", "deploy", "pod template", "pod spec", "container spec", "container", "image", "images", "rollout",
        "replicaset", "replicas", "memory limit", "cpu limit", "resource limit", "env var", "environment variable",
        "nodeselector", "node selector", "probe", "request",
    ),
    "statefulset": ("statefulset", "sts", "pod template", "image", "replicas"),
    "daemonset": ("daemonset", "ds"),
    "service": ("service", "services", "svc", "selector", "selectors", "endpoints", "targetport", "target port", "clusterip"),
    "configmap": ("configmap", "config map", "configuration file", "config file", "settings file", "settings", "configuration"),
    "secret": ("secret", "credentials"),
    "networkpolicy": ("networkpolicy", "network policy", "policy", "firewall"),
    "persistentvolumeclaim": ("pvc", "persistentvolumeclaim", "volume claim", "persistent volume", "volume", "storage", "disk"),
    "persistentvolume": ("pv", "persistentvolume", "volume", "disk"),
    "postgresql role": ("role", "account", "user", "grant", "privilege", "password", "database"),
    "memcached configuration": ("memcached", "cache", "-m"),
    "role": ("role", "rbac", "rolebinding", "clusterrole", "permission"),
    "node": ("node", "nodes", "kubelet"),
}

LAYER_TERMS: dict[str, tuple[str, ...]] = {
    "datastore": ("database", "db", "postgres", "postgresql", "sql", "memcached", "redis", "cache", "grant", "role"),
    "config": ("configuration", "config", "env var", "environment variable", "setting", "flag", "toggle"),
    "network": ("network", "latency", "packet", "dns", "connection", "traffic", "firewall", "ingress"),
    "os": ("syscall", "kernel", "file descriptor", "operating system", "ulimit"),
    "hardware": ("disk", "sector", "i/o error", "eio", "bad block", "cpu"),
    "storage": ("volume", "pvc", "disk", "storage"),
    "control": ("control plane", "scheduler", "controller", "api server"),
    "app": ("code", "bug", "application logic", "exception"),
    "k8s": ("deployment", "pod", "service", "kubernetes", "replica", "container"),
}

# Words that alone never say what mechanism broke (used to filter a truth's keywords).
GENERIC_WORDS = frozenset({
    "service", "services", "port", "ports", "memory", "image", "images", "flag", "config", "configuration", "error",
    "errors", "env", "environment", "variable", "key", "label", "labels", "node", "tag", "pull", "limit", "request",
    "cache", "role", "user", "pod", "pods", "container", "deployment", "network", "disk", "cpu", "database", "db",
    "connection", "connections", "timeout", "latency", "missing", "deleted", "wrong", "bad", "broken", "failed",
    "mount", "volume", "claim", "secret", "password", "replicas", "scale", "zero", "probe", "selector", "endpoints",
})

# Things, not what was done to them: Kubernetes kinds and everyday objects of a fault. Alone (as a
# fault's keyword) they assert no mechanism ("the Ingress", "its ServiceAccount", "DiskPressure").
OBJECT_WORDS = frozenset({
    # the kind of an admission webhook names which webhook, not what it does (red-team round 10)
    "mutating", "validating",
    "ingress", "ingressclass", "service", "serviceaccount", "service account", "secret", "configmap", "configmaps",
    "role", "rolebinding", "clusterrole", "rbac", "node", "nodes", "pod", "pods", "deployment", "statefulset",
    "network policy", "network policies", "policy object",
    "daemonset", "persistentvolume", "persistentvolumeclaim", "pvc", "pv", "volume", "certificate", "cert", "tls",
    "dns", "coredns", "corefile", "kubelet", "kube proxy", "iptables", "cni", "webhook", "controller", "path",
    "backend", "dev shm", "shm", "diskpressure", "memorypressure", "pidpressure", "networkpolicy", "namespace",
    "container", "init container", "sidecar", "endpoint", "endpoints", "cache", "redis", "valkey", "memcached",
    "postgres", "postgresql", "mysql", "mongodb", "database", "table", "tables", "schema", "flag", "flagd",
    "feature flag", "configuration", "kafka", "queue", "clock", "time", "disk", "filesystem", "shared memory",
    "posix shared memory", "dynamic shared memory", "tmpfs", "cronjob", "cron job", "job", "jobs",
    # a custom resource and the operator that reconciles it (issue #35, sixth round): where, not what was done
    "custom resource", "custom resources", "cr", "crd", "operator", "storage class", "storageclass", "toleration",
    "tolerations",
})

# Words of a causal link between a mechanism and what it does ("... so search fails").
CONNECTIVES: tuple[str, ...] = (
    "because", "due to", "caused by", "causes", "causing", "cause", "leads to", "led to", "leading to", "results in",
    "resulting in", "so", "so that", "therefore", "hence", "thus", "which is why", "that is why", "why",
    "as a result", "which means", "meaning", "means", "making", "makes", "breaks", "broke", "prevents",
    "leaves", "leaving", "drives", "driving", "then", "consequently", "since", "symptoms", "until", "which leaves",
    "which breaks", "on every", "as soon as", "each time", "every time",
)

# What users and operators observe (in addition to each truth's own symptoms).
SYMPTOMS: tuple[str, ...] = (
    "error*", "5xx", "500*", "502", "503", "504", "timeout*", "time out", "timed out", "crash*", "restart*",
    "imagepullbackoff", "errimagepull", "pending", "fail*", "latency", "slow*", "refused", "unavailable",
    "no endpoints", "not ready", "outage", "down", "unreachable", "oomkilled", "denied", "evict*", "break*",
    "broken", "reject*", "cannot reach", "can not reach", "cannot connect", "cannot log in", "nobody can",
    "never starts", "never comes up", "no .. pod comes up", "not start", "hang*", "waits", "loses", "lose",
    "lost", "cannot resolve", "no longer resolve", "misses", "miss rate", "hit rate", "database load",
    "turns them away", "says no", "stuck", "kill*", "cannot be placed", "cannot place", "not placed",
    "is down", "are down", "goes up", "went up", "cache misses", "errors out", "error out", "out of range",
    "no space left on device",
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
TRIVIAL_VALUES = frozenset({"", "none", "null", "true", "false", "yes", "no", "all", "0", "1", "default", "(unknown)"})
