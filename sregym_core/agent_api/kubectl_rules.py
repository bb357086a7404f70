"""What ``exec_kubectl_cmd_safely`` accepts: one kubectl command, parsed as kubectl parses it.

kubectl's flag parser (cobra + pflag) accepts ``--flag=value``, ``--flag value``, ``-n value``,
``-nvalue``, ``-n=value`` and glued boolean shorthands (``-wn ns`` is ``-w -n ns``), and it turns
``_`` into ``-`` in long flag names (``--as_group`` is ``--as-group``). A filter that only looks
at whole words misses ``-s<url>`` or ``--insecure_skip_tls_verify``; this module walks every
argument the way pflag does, so each refusal holds for every spelling.

Rules (upstream's, plus stricter identity refusals): the command starts with ``kubectl``; no shell
syntax (pipes, chaining, redirection, substitution); no interactive or streaming commands; no flag
that changes who the agent is or which server it talks to; and no remote command (``exec ... --``)
that reaches for a kubeconfig or a service-account token.
"""

from __future__ import annotations

import shlex

import attrs

#: Longest command accepted, in bytes of UTF-8.
MAX_COMMAND_BYTES = 16 * 1024

REJECTED = "Command Rejected: "

#: Flags that would change the identity, the server, or where credentials come from.
IDENTITY_FLAGS = frozenset({
    "--kubeconfig", "--token", "--server", "--as", "--as-group", "--as-uid", "--as-user-extra", "--context", "--user",
    "--cluster", "--certificate-authority", "--client-key", "--client-certificate", "--insecure-skip-tls-verify",
    "--tls-server-name", "--username", "--password", "--proxy-url", "--kuberc", "--cache-dir"})
IDENTITY_SHORTHANDS = frozenset({"s"})  # -s is --server

#: Global flags (``kubectl options``) that take a value; the only flags allowed before the subcommand.
GLOBAL_VALUE_FLAGS = frozenset({"--namespace", "--request-timeout", "--v", "--vmodule", "--log-flush-frequency",
                                "--profile", "--profile-output", *IDENTITY_FLAGS} - {"--insecure-skip-tls-verify"})
GLOBAL_BOOL_FLAGS = frozenset({"--disable-compression", "--match-server-version", "--warnings-as-errors",
                               "--insecure-skip-tls-verify"})
GLOBAL_VALUE_SHORTHANDS = frozenset({"n", "s", "v"})

#: Shorthands that take a value in every subcommand (from ``kubectl <cmd> --help``); the rest are
#: booleans, except ``-f`` and ``-p`` which are booleans only in ``logs`` (follow, previous).
VALUE_SHORTHANDS = frozenset({"n", "s", "v", "o", "l", "L", "c", "k", "e", "r", "f", "p", "u", "P"})
BOOL_IN_LOGS = frozenset({"f", "p"})
INTERACTIVE_SHORTHANDS = frozenset({"i", "t"})

REFUSED_VERBS = {
    "edit": "it opens an editor; use `kubectl patch` or `kubectl set` instead",
    "attach": "it is interactive; use `kubectl logs`",
    "debug": "it is interactive; use `kubectl exec POD -- COMMAND`",
    "port-forward": "it runs forever; use `kubectl exec` with a client inside the pod",
    "proxy": "it runs forever",
    "wait": "it blocks; check the state with `kubectl get` instead",
    "cp": "it copies files between pods and the tool's host; use `kubectl exec POD -- cat FILE`",
    "plugin": "plugins are disabled",
    "alpha": "alpha commands are disabled",
    "config": "the kubeconfig cannot be viewed or changed",
    "completion": "shell completion is not useful here",
}
INTERACTIVE_FLAGS = frozenset({"--stdin", "--tty"})
STREAMING_FLAGS = frozenset({"--watch", "--watch-only", "--follow"})

#: Flags that read or write files of the machine kubectl runs on. Harmless inside the sandbox (it
#: has no host files); refused when the tool runs kubectl without one.
HOST_FILE_FLAGS = frozenset({"--filename", "--kustomize", "--from-file", "--from-env-file", "--env-file",
                             "--profile-output", "--output-directory"})
HOST_FILE_OUTPUTS = ("go-template-file", "templatefile", "jsonpath-file", "custom-columns-file")

#: Substrings of a remote command (``exec POD -- ...``) that reach for cluster credentials. The
#: real boundary is that pods cannot read an admin kubeconfig and their own tokens carry no rights
#: beyond the baseline; this only refuses the obvious attempt.
REMOTE_CREDENTIAL_MARKERS = ("kubeconfig", "serviceaccount", "secrets/kubernetes.io", "/.kube/", "admin.conf")

MUTATING_VERBS = frozenset({"apply", "create", "delete", "patch", "replace", "scale", "set", "label", "annotate",
                            "rollout", "cordon", "uncordon", "drain", "taint", "autoscale", "expose", "run"})
#: Mutating commands that have no ``--dry-run`` (``kubectl rollout restart --help``).
NO_DRY_RUN = frozenset({("rollout", "restart"), ("rollout", "pause"), ("rollout", "resume"), ("rollout", "status"),
                        ("rollout", "history")})
#: Subcommands of mutating verbs that change nothing stored (a token request is not an object).
READ_ONLY_SUBVERBS = frozenset({("rollout", "status"), ("rollout", "history"), ("apply", "view-last-applied"),
                                ("create", "token")})


class RefusedCommand(ValueError):
    """The command is not allowed; the message says why and what to do instead."""


@attrs.frozen
class KubectlCommand:
    """A parsed command: ``argv`` after ``kubectl``, its verb (and sub-verb), flags and remote command."""

    argv: tuple[str, ...]
    verb: str
    subverb: str
    positionals: tuple[str, ...]  # non-flag words before ``--``, verb included
    flags: tuple[tuple[str, str | None], ...]  # (``--long-name`` or ``-x``, value) in order
    remote: tuple[str, ...]  # words after ``--``

    @property
    def mutating(self) -> bool:
        return self.verb in MUTATING_VERBS and (self.verb, self.subverb) not in READ_ONLY_SUBVERBS \
            and not self.has_flag("--dry-run")

    @property
    def supports_dry_run(self) -> bool:
        return (self.verb, self.subverb) not in NO_DRY_RUN

    def has_flag(self, name: str) -> bool:
        return any(flag == name for flag, _ in self.flags)

    def with_flag(self, flag: str) -> list[str]:
        """``argv`` with ``flag`` added before the ``--`` that starts a remote command."""
        argv = list(self.argv)
        if "--" in argv:
            at = argv.index("--")
            return [*argv[:at], flag, *argv[at:]]
        return [*argv, flag]


def check_shell_syntax(cmd: str) -> None:
    """Refuse pipes, chaining, redirection, subshells and substitution outside quotes (kubectl runs
    without a shell, so inside quotes they are plain characters, except substitution, which a
    shell would expand inside double quotes too)."""
    quote = None
    escaped = False
    for index, char in enumerate(cmd):
        if escaped:
            escaped = False
            continue
        if char == "\\" and quote != "'":
            escaped = True
            continue
        if quote:
            if char == quote:
                quote = None
            elif quote == '"' and (char == "`" or cmd.startswith("$(", index)):
                raise RefusedCommand("command substitution is not allowed")
            continue
        if char in "'\"":
            quote = char
        elif char in "|;&<>()\n\r" or char == "`" or cmd.startswith("$(", index):
            what = {"|": "pipes", ";": "command chaining", "&": "command chaining or background jobs",
                    "<": "redirection", ">": "redirection", "\n": "several lines", "\r": "several lines",
                    "`": "command substitution", "(": "subshells", ")": "subshells"}.get(char, "command substitution")
            raise RefusedCommand(f"shell syntax is not allowed ({what}): run one kubectl command per call")


def parse_command(cmd: object, *, host_files: bool = False) -> KubectlCommand:
    """Split and check a kubectl command line.

    ``host_files=False`` also refuses flags that read or write local files (for a kubectl that runs
    without the sandbox).
    """
    if not isinstance(cmd, str) or not cmd.strip():
        raise RefusedCommand("empty command; pass a kubectl command such as `kubectl get pods`")
    size = len(cmd.encode("utf-8", errors="replace"))
    if size > MAX_COMMAND_BYTES:
        raise RefusedCommand(f"the command is {size} bytes long; the limit is {MAX_COMMAND_BYTES} bytes. "
                             "Send a shorter command (patch a few fields at a time)")
    if "\x00" in cmd:
        raise RefusedCommand("the command contains a NUL character")
    check_shell_syntax(cmd)
    try:
        words = shlex.split(cmd)
    except ValueError as exc:
        raise RefusedCommand(f"cannot parse the command: {exc}") from exc
    if not words or words[0] != "kubectl":
        raise RefusedCommand("Only kubectl commands are allowed. Start the command with `kubectl`, "
                             "for example `kubectl get pods`")
    command = _walk(words[1:])
    _check_policy(command, host_files=host_files)
    return command


def _normalize(name: str) -> str:
    return name.replace("_", "-")  # as kubectl's WordSepNormalizeFunc does


def _walk(argv: list[str]) -> KubectlCommand:
    """Parse like pflag: which words are flags, which are their values, which are positionals."""
    flags: list[tuple[str, str | None]] = []
    positionals: list[str] = []
    remote: list[str] = []
    verb = ""
    index = 0
    while index < len(argv):
        word = argv[index]
        index += 1
        if word == "--":
            remote = argv[index:]
            break
        if word.startswith("--"):
            name, has_value, value = word.partition("=")
            name = _normalize(name)
            if not verb and name not in GLOBAL_VALUE_FLAGS | GLOBAL_BOOL_FLAGS:
                raise RefusedCommand(f"put {name} after the subcommand (only global flags such as -n may come first)")
            if has_value:
                flags.append((name, value))
            elif _long_takes_value(name, verb) and index < len(argv) and argv[index] != "--":
                flags.append((name, argv[index]))
                index += 1
            else:
                flags.append((name, None))
            continue
        if word.startswith("-") and len(word) > 1:
            index = _shorthands(word, argv, index, verb, flags)
            continue
        if not verb:
            verb = word
        positionals.append(word)
    subverb = positionals[1] if len(positionals) > 1 and verb in ("set", "rollout", "create", "top", "auth",
                                                                   "apply", "certificate", "cluster-info") else ""
    return KubectlCommand(argv=tuple(argv), verb=verb, subverb=subverb, positionals=tuple(positionals),
                          flags=tuple(flags), remote=tuple(remote))


def _shorthands(word: str, argv: list[str], index: int, verb: str, flags: list) -> int:
    """One ``-abc`` cluster: booleans until a letter that takes a value, which gets the rest (or
    the next word); ``-x=value`` gives ``x`` the value whatever its type. Returns the index of the
    next unread word."""
    letters = word[1:]
    position = 0
    while position < len(letters):
        letter = letters[position]
        position += 1
        if letter in IDENTITY_SHORTHANDS:
            raise RefusedCommand(f"flag -{letter} (in {word!r}) is not allowed: the tool always uses your own "
                                 "credentials and cluster")
        if not verb and letter not in GLOBAL_VALUE_SHORTHANDS:
            raise RefusedCommand(f"put -{letter} after the subcommand (only global flags such as -n may come first)")
        rest = letters[position:]
        if rest.startswith("="):
            flags.append((f"-{letter}", rest[1:]))
            break
        if letter not in VALUE_SHORTHANDS or (verb == "logs" and letter in BOOL_IN_LOGS):
            flags.append((f"-{letter}", None))
            continue
        if rest:
            flags.append((f"-{letter}", rest))
        elif index < len(argv) and argv[index] != "--":
            flags.append((f"-{letter}", argv[index]))
            index += 1
        else:
            flags.append((f"-{letter}", None))
        break
    return index


def _long_takes_value(name: str, verb: str) -> bool:
    """Whether ``--name`` without ``=`` consumes the next word (booleans do not)."""
    if name in GLOBAL_VALUE_FLAGS:
        return True
    return name not in _BOOL_LONG_FLAGS and not (verb == "logs" and name in ("--follow", "--previous", "--timestamps"))


#: Boolean long flags of the subcommands agents use (``kubectl <cmd> --help``, defaults true/false).
_BOOL_LONG_FLAGS = frozenset({
    "--all-namespaces", "--all", "--watch", "--watch-only", "--recursive", "--show-labels", "--show-kind",
    "--no-headers", "--ignore-not-found", "--follow", "--previous", "--timestamps", "--prefix", "--stdin", "--tty",
    "--quiet", "--overwrite", "--force", "--now", "--wait", "--record", "--server-side", "--force-conflicts",
    "--prune", "--validate", "--local", "--allow-missing-template-keys", "--show-managed-fields", "--ignore-daemonsets",
    "--delete-emptydir-data", "--disable-eviction", "--list", "--resolve", "--containers", "--use-protocol-buffers",
    "--include-uninitialized", "--interactive", "--cascade", "--raw", "--show-events", "--sort-by-cpu",
    "--insecure-skip-tls-server-verify", "--keep-annotations", "--leave-stdin-open", "--rm", "--privileged",
    "--expose", "--attach", "--disable-compression", "--match-server-version", "--warnings-as-errors",
    "--insecure-skip-tls-verify", "--no-wait", "--sum"})


def _off(value: str | None) -> bool:
    return value is not None and value.lower() in ("false", "0")


def _check_policy(command: KubectlCommand, *, host_files: bool) -> None:
    verb = command.verb
    if not verb:
        raise RefusedCommand("no kubectl subcommand given, for example `kubectl get pods`")
    if verb in REFUSED_VERBS:
        raise RefusedCommand(f"`kubectl {verb}` is not allowed here: {REFUSED_VERBS[verb]}")
    if (verb, command.subverb) == ("apply", "edit-last-applied"):
        raise RefusedCommand("`kubectl apply edit-last-applied` opens an editor; use `kubectl apply set-last-applied`")
    if verb == "kustomize" and not host_files:
        raise RefusedCommand("`kubectl kustomize` reads local files, which this tool cannot do")
    for flag, value in command.flags:
        if flag in IDENTITY_FLAGS:
            raise RefusedCommand(f"flag {flag} is not allowed: the tool always uses your own credentials and cluster")
        if (flag in INTERACTIVE_FLAGS or flag[1:] in INTERACTIVE_SHORTHANDS) and not _off(value):
            raise RefusedCommand(f"{flag} asks for an interactive session, which is not supported; run a single "
                                 "command: `kubectl exec POD -- cat /etc/config.yaml`")
        streaming = flag in STREAMING_FLAGS or flag == "-w" or (verb == "logs" and flag == "-f")
        if streaming and not _off(value):
            raise RefusedCommand(f"{flag} streams forever; run the command without it (it returns a snapshot)")
        file_flag = flag in HOST_FILE_FLAGS or flag == "-k" or (flag == "-f" and verb != "logs")
        if file_flag and value and "://" in value:
            raise RefusedCommand(f"{flag} {value}: the tool does not fetch URLs")
        if not host_files and file_flag and value != "-":
            raise RefusedCommand(f"{flag} reads or writes local files, which this tool cannot do; pass the change "
                                 "inline (kubectl patch, kubectl set, kubectl create ... --from-literal)")
        if not host_files and flag in ("-o", "--output") and value and value.startswith(HOST_FILE_OUTPUTS):
            raise RefusedCommand(f"-o {value.split('=')[0]} reads a local file; pass the template inline "
                                 "(-o jsonpath=..., -o go-template=..., -o custom-columns=...)")
    # every word after the first "--", however the flags before it parse
    remote = command.argv[command.argv.index("--") + 1:] if "--" in command.argv else ()
    for word in remote:
        lowered = word.lower()
        marker = next((m for m in REMOTE_CREDENTIAL_MARKERS if m in lowered), None)
        if marker is not None:
            raise RefusedCommand(f"the command run in the pod refers to cluster credentials ({marker!r}); "
                                 "investigate the app, not the cluster's identities")
        flag = _normalize(word.partition("=")[0])
        if flag in IDENTITY_FLAGS:
            raise RefusedCommand(f"the command run in the pod passes {flag}: changing identity is not allowed")
