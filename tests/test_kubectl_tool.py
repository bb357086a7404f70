"""The kubectl tool: flag parsing as kubectl does it, upstream's rules, the sandbox around real
kubectl, per-session rollback stacks.

The parser's shorthand table is checked against the pinned kubectl's own ``--help``; the sandbox
tests run the real kubectl binary and check what it could touch on this machine.
"""

from __future__ import annotations

import asyncio
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from sregym_core.agent_api import kubectl_rules
from sregym_core.agent_api.kubectl_rules import MAX_COMMAND_BYTES, RefusedCommand, parse_command
from sregym_core.agent_api.kubectl_sandbox import bwrap_usable
from sregym_core.agent_api.kubectl_tool import MAX_OUTPUT, TRUNCATED, KubectlTool

KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
needs_sandbox = pytest.mark.skipif(not KUBECTL or bwrap_usable(KUBECTL) is None,
                                   reason="bubblewrap cannot build the kubectl sandbox here")

IDENTITY_SPELLINGS = [
    "kubectl get pods --kubeconfig /root/.kube/config", "kubectl get pods --kubeconfig=/x",
    "kubectl get pods --server https://127.0.0.1:6443", "kubectl get pods -s https://127.0.0.1:6443",
    "kubectl get pods -shttps://127.0.0.1:6443", "kubectl get pods -s=https://x", "kubectl get pods -As x",
    "kubectl -shttps://x get pods", "kubectl get pods --token=abc", "kubectl get pods --token abc",
    "kubectl get pods --as=admin", "kubectl get pods --as system:admin", "kubectl get pods --as-group=system:masters",
    "kubectl get pods --as_group=system:masters", "kubectl get pods --as-uid=0", "kubectl get pods --as-user-extra=a=b",
    "kubectl get pods --user=admin", "kubectl --context=admin get pods", "kubectl get pods --cluster=other",
    "kubectl get pods --certificate-authority=/x", "kubectl get pods --client-key=/x", "kubectl get pods --client-certificate=/x",
    "kubectl get pods --insecure-skip-tls-verify", "kubectl get pods --insecure_skip_tls_verify=true",
    "kubectl get pods --username=a", "kubectl get pods --password=b", "kubectl get pods --tls-server-name=x",
    "kubectl get pods --proxy-url=http://10.0.0.1:3128", "kubectl get pods --kuberc=/x", "kubectl get pods --cache-dir=/x",
    # through a command run in a pod
    "kubectl exec geo-1 -- env KUBECONFIG=/root/.sregym/clusters/e2e/kubeconfig kubectl get secrets -A",
    "kubectl exec geo-1 -- kubectl --kubeconfig /x get secrets",
    "kubectl exec geo-1 -- kubectl --token=abc get secrets", "kubectl exec geo-1 -- kubectl --as=admin get secrets",
    "kubectl exec geo-1 -- cat /var/run/secrets/kubernetes.io/serviceaccount/token",
    "kubectl exec geo-1 -- sh -c 'TOKEN=$(cat /run/secrets/kubernetes.io/serviceaccount/token) curl ...'",
    "kubectl exec geo-1 -c x -- cat /root/.kube/config",
    "kubectl run evil --image=x -- kubectl --server=https://x get pods",
]

UPSTREAM_REFUSALS = [
    "get pods",  # must start with kubectl
    "bash -c 'kubectl get pods'", "kubectl get pods | grep geo", "kubectl get pods > /tmp/x", "kubectl get pods >> x",
    "kubectl get pods < /etc/passwd", "kubectl get pods; kubectl delete pods --all", "kubectl get pods && echo",
    "kubectl get pods || true", "kubectl get pods &", "kubectl get pods $(id)", "kubectl get pods `id`",
    "kubectl get pods\nkubectl delete pod x", "(kubectl get pods)",
    "kubectl debug geo-1 -it --image=busybox", "kubectl edit deploy geo", "kubectl wait --for=condition=Ready pod/x",
    "kubectl proxy", "kubectl port-forward svc/frontend 5000", "kubectl cp geo-1:/etc/x /tmp/x",
    "kubectl attach geo-1", "kubectl exec -i geo-1 -- sh", "kubectl exec -t geo-1 -- sh", "kubectl exec -it geo-1 -- sh",
    "kubectl exec geo-1 -ti -- sh", "kubectl exec --stdin geo-1 -- sh", "kubectl exec --tty geo-1 -- sh",
    "kubectl run x --image=busybox -i", "kubectl logs -f geo-1", "kubectl logs --follow geo-1", "kubectl logs -pf geo-1",
    "kubectl get pods -w", "kubectl get pods --watch", "kubectl get pods -wn default", "kubectl get pods -Aw",
    "kubectl config view --raw", "kubectl plugin list", "kubectl apply edit-last-applied deploy/geo", "", "   ",
]

ACCEPTED = {
    "kubectl get pods -n hotel -o wide": ("get", ""),
    "kubectl -n hotel get pods": ("get", ""),
    "kubectl get po -lapp=geo -ojson": ("get", ""),
    "kubectl get pods -o jsonpath='{.items[*].metadata.name}'": ("get", ""),
    "kubectl get pods --field-selector status.phase!=Running": ("get", ""),
    "kubectl get pods -w=false": ("get", ""),
    "kubectl logs deploy/geo --tail=20 -p": ("logs", ""),
    "kubectl logs geo-1 -c hotel --previous --timestamps": ("logs", ""),
    "kubectl exec geo-1 -- cat /etc/config.yaml": ("exec", ""),
    "kubectl exec geo-1 -c hotel -- sh -c 'ls /app | head'": ("exec", ""),  # shell syntax inside quotes is data
    "kubectl patch deploy geo -p '{\"spec\":{\"replicas\":1}}'": ("patch", ""),
    "kubectl set image deploy/geo hotel=hotel:1.0": ("set", "image"),
    "kubectl rollout undo deployment/geo -n hotel": ("rollout", "undo"),
    "kubectl delete pod geo-1": ("delete", ""),
    "kubectl scale deploy geo --replicas=1": ("scale", ""),
    "kubectl auth can-i --list": ("auth", "can-i"),
}


@pytest.mark.parametrize("cmd", IDENTITY_SPELLINGS)
def test_identity_changes_are_refused_in_every_spelling(cmd):
    with pytest.raises(RefusedCommand):
        parse_command(cmd, host_files=True)


@pytest.mark.parametrize("cmd", UPSTREAM_REFUSALS)
def test_upstream_refusals(cmd):
    with pytest.raises(RefusedCommand):
        parse_command(cmd, host_files=True)


@pytest.mark.parametrize("cmd", sorted(ACCEPTED))
def test_ordinary_commands_pass(cmd):
    command = parse_command(cmd, host_files=False)
    assert (command.verb, command.subverb) == ACCEPTED[cmd]


def test_glued_shorthands_parse_like_pflag():
    command = parse_command("kubectl get pods -Ao=json -lapp=geo,tier=db -nhotel", host_files=True)
    assert command.flags == (("-A", None), ("-o", "json"), ("-l", "app=geo,tier=db"), ("-n", "hotel"))
    # in logs -p and -f are booleans; elsewhere -p takes a value (so -pfoo is a patch, not -p -f)
    assert parse_command("kubectl logs geo -pc hotel", host_files=True).flags == (("-p", None), ("-c", "hotel"))
    assert parse_command("kubectl patch deploy geo -pfoo", host_files=True).flags == (("-p", "foo"),)
    assert parse_command("kubectl exec geo -c hotel -- ls -la", host_files=True).remote == ("ls", "-la")


def test_oversized_and_binary_commands_are_refused_clearly():
    with pytest.raises(RefusedCommand, match=f"limit is {MAX_COMMAND_BYTES} bytes"):
        parse_command("kubectl get pods " + "x" * 200_000)
    with pytest.raises(RefusedCommand, match="NUL"):
        parse_command("kubectl get pods\x00x")
    with pytest.raises(RefusedCommand, match="cannot parse"):
        parse_command("kubectl get pods 'unbalanced")
    with pytest.raises(RefusedCommand):
        parse_command(["kubectl", "get"])  # not a string


@pytest.mark.parametrize("cmd", [
    "kubectl create configmap x --from-file=/etc/shadow", "kubectl create secret generic x --from-env-file=/x",
    "kubectl apply -f /etc/x.yaml", "kubectl apply --filename=/x", "kubectl apply -k /x", "kubectl kustomize /x",
    "kubectl get pods --profile=cpu --profile-output=/etc/cron.d/x", "kubectl cluster-info dump --output-directory=/x",
    "kubectl get pods -o go-template-file=/etc/shadow", "kubectl get pods -ojsonpath-file=/etc/shadow",
    "kubectl get pods -o=custom-columns-file=/etc/shadow"])
def test_without_the_sandbox_local_file_flags_are_refused(cmd):
    with pytest.raises(RefusedCommand, match="local file"):
        parse_command(cmd, host_files=False)


def test_urls_are_never_fetched():
    with pytest.raises(RefusedCommand, match="URL"):
        parse_command("kubectl apply -f http://169.254.169.254/latest/meta-data", host_files=True)


def _kubectl_help_shorthands(*command: str) -> dict[str, bool]:
    """{letter: takes a value} from ``kubectl <command> --help`` (booleans show =false/=true); the
    global flags are what ``kubectl options`` itself prints (its ``--help`` lists none)."""
    args = list(command) if command == ("options",) else [*command, "--help"]
    text = subprocess.run([KUBECTL, *args], capture_output=True, text=True, timeout=30).stdout
    found = {}
    for letter, default in re.findall(r"^\s+-([a-zA-Z]), --[a-z-]+=(\S*?):?$", text, flags=re.M):
        found[letter] = default not in ("false", "true")
    return found


@pytest.mark.skipif(not KUBECTL, reason="needs kubectl")
@pytest.mark.parametrize("command", [("get",), ("logs",), ("exec",), ("patch",), ("set", "env"), ("run",),
                                     ("delete",), ("rollout", "status"), ("create", "deployment"), ("top", "pod"),
                                     ("options",)])
def test_shorthand_table_matches_kubectl(command):
    verb = command[0]
    shorthands = _kubectl_help_shorthands(*command)
    assert shorthands, f"kubectl {' '.join(command)}: no shorthand read from its help (format changed?)"
    for letter, takes_value in shorthands.items():
        ours = letter in kubectl_rules.VALUE_SHORTHANDS and not (verb == "logs" and letter in kubectl_rules.BOOL_IN_LOGS)
        assert ours == takes_value, f"kubectl {' '.join(command)}: -{letter}"


# ---------------------------------------------------------------------- real kubectl in the sandbox


def _kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "agent.kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                    "contexts: [{name: c, context: {cluster: c, user: u, namespace: demo}}]\ncurrent-context: c\n"
                    "users: [{name: u, user: {token: agent-token}}]\n")
    return path


@needs_sandbox
def test_sandboxed_kubectl_cannot_read_or_write_host_files(tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("GROUND-TRUTH")
    (tmp_path / "manifest.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: GROUND-TRUTH}\n")
    tool = KubectlTool(kubeconfig=_kubeconfig(tmp_path), kubectl=KUBECTL)
    assert tool.sandboxed

    async def run(cmd):
        return await tool.execute(cmd)

    for cmd in (f"kubectl create configmap x --from-file={secret} --dry-run=client -o yaml",
                f"kubectl create secret generic x --from-env-file={secret} --dry-run=client -o yaml",
                f"kubectl create -f {tmp_path / 'manifest.yaml'} --dry-run=client -o yaml",
                "kubectl create configmap x --from-file=/etc/shadow --dry-run=client -o yaml",
                f"kubectl get pods -o go-template-file={secret}"):
        out = asyncio.run(run(cmd))
        assert "GROUND-TRUTH" not in out and out.startswith("Command Rejected: Error executing kubectl command:"), cmd
        assert "root:" not in out
    # kubectl does run in there: a file-free command works and writes only inside the sandbox
    target = tmp_path / "profile.out"
    out = asyncio.run(run(f"kubectl version --client --profile=cpu --profile-output={target}"))
    assert not target.exists()
    inside = asyncio.run(run("kubectl version --client --profile=cpu --profile-output=/tmp/p.out"))
    assert "Client Version" in inside
    assert not Path("/tmp/p.out").exists() or Path("/tmp/p.out").stat().st_mtime < secret.stat().st_mtime


@needs_sandbox
def test_the_sandbox_does_not_show_where_the_attempts_kubeconfig_lives(tmp_path):
    """Red-team round 7, finding 3: /proc/self/mountinfo (a bind mount's source) and /proc/1/cmdline
    (bwrap's argv) read through the tool named the kubeconfig's host path, so the results directory
    and the attempt. The sandbox binds a copy under a name that says nothing."""
    where = tmp_path / "results-hotel-wrong-image-geo" / ".work" / "a1b2c3" / "agent.kubeconfig"
    where.parent.mkdir(parents=True)
    where.write_text(_kubeconfig(tmp_path).read_text())
    tool = KubectlTool(kubeconfig=where, kubectl=KUBECTL)
    assert tool.sandboxed
    for source in ("/proc/self/mountinfo", "/proc/1/cmdline"):
        out = asyncio.run(tool.execute(f"kubectl create configmap x --from-file=s={source} --dry-run=client -o yaml"))
        assert "data:" in out, out  # it was read
        assert "hotel-wrong-image" not in out and "a1b2c3" not in out and str(tmp_path) not in out, out
    # the copy follows a kubeconfig rewritten during the attempt
    import os

    where.write_text(where.read_text().replace("agent-token", "rotated-token"))
    os.utime(where, ns=(where.stat().st_atime_ns, where.stat().st_mtime_ns + 1_000_000))
    assert "rotated-token" in tool._neutral_kubeconfig().read_text()


@needs_sandbox
def test_the_sandbox_holds_only_kubectl_and_the_kubeconfig(tmp_path):
    from sregym_core.agent_api import kubectl_sandbox

    bwrap = bwrap_usable(KUBECTL)
    argv = kubectl_sandbox.sandboxed_argv(bwrap, KUBECTL, _kubeconfig(tmp_path), ["version", "--client"])
    # swap kubectl for a shell to look around: the same mounts, namespaces and user
    script = ("PATH=/usr/bin:/bin; echo uid=$(id -u); echo root=$(ls / | tr '\\n' ' '); "
              "echo kube=$(ls /home/agent/.kube); grep CapEff /proc/self/status; "
              f"cat {tmp_path}/agent.kubeconfig /etc/shadow 2>&1; echo end")
    shell = argv[:argv.index("--")] + ["--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink",
                                       "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                                       "--", "/bin/sh", "-c", script]
    seen = subprocess.run(shell, capture_output=True, text=True, timeout=30).stdout
    assert f"uid={kubectl_sandbox.SANDBOX_UID}" in seen
    # the test's own /usr mount aside: kubectl, its kubeconfig, name resolution files, private tmp
    root = set(re.search(r"root=(.*)", seen).group(1).split())
    assert root <= {"bin", "dev", "etc", "home", "lib", "lib64", "proc", "tmp", "usr"}, root
    assert "kube=config" in seen
    assert "CapEff:\t0000000000000000" in seen
    assert seen.count("No such file") == 2 and "root:" not in seen


def test_fallback_refuses_local_files_and_runs_from_a_private_directory(tmp_path):
    script = tmp_path / "fake-kubectl"
    script.write_text("#!/bin/sh\necho \"cwd=$(pwd) home=$HOME path=$PATH args=$*\"\n")
    script.chmod(0o755)
    tool = KubectlTool(kubeconfig=_kubeconfig(tmp_path), kubectl=str(script), isolation="none",
                       cache_dir=tmp_path / "work" / "kube-cache")
    out = asyncio.run(tool.execute("kubectl create configmap x --from-file=/etc/shadow"))
    assert out.startswith("Command Rejected:") and "local files" in out
    out = asyncio.run(tool.execute("kubectl get pods"))
    cwd = out.split("cwd=")[1].split()[0]
    assert Path(cwd).parent == tmp_path / "work" and os.listdir(cwd) == []
    assert f"path={tmp_path}" in out  # only kubectl's own directory: no kubectl-<plugin> from the host
    del tool
    gc.collect()
    assert not Path(cwd).exists()  # the private directory goes with the tool: none pile up in /tmp


# ---------------------------------------------------------------------- upstream behaviour, sessions


def _recording_kubectl(tmp_path: Path, *, fail_on: str = "") -> Path:
    script = tmp_path / "kubectl"
    script.write_text(f"""#!/bin/sh
echo "$*" >> {tmp_path}/calls.log
case "$*" in
  *"{fail_on or '@@never@@'}"*) echo "Error from server (NotFound): deployments.apps \\"nope\\" not found" >&2; exit 1;;
  *"get -o json"*) echo '{{"apiVersion": "v1", "kind": "List", "items": []}}';;
  *"big"*) /usr/bin/head -c 20000 /dev/zero | /usr/bin/tr '\\0' x;;
  *) echo "deployment.apps/geo scaled";;
esac
""")
    script.chmod(0o755)
    return script


def _calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "calls.log").read_text().splitlines()


def test_mutations_are_dry_run_first_and_delete_does_not_wait(tmp_path):
    tool = KubectlTool(kubeconfig=_kubeconfig(tmp_path), kubectl=str(_recording_kubectl(tmp_path)), isolation="none")
    assert asyncio.run(tool.execute("kubectl scale deploy geo --replicas=2 -n hotel")) == "deployment.apps/geo scaled\n"
    calls = [c.split(" ", 2)[2] for c in _calls(tmp_path)]  # drop --cache-dir <dir>
    assert calls == ["scale deploy geo --replicas=2 -n hotel --dry-run=server",
                     "get -o json --ignore-not-found deploy geo -n hotel", "scale deploy geo --replicas=2 -n hotel"]
    asyncio.run(tool.execute("kubectl delete pod geo-1"))
    assert _calls(tmp_path)[-1].endswith("delete pod geo-1 --wait=false")
    asyncio.run(tool.execute("kubectl get pods"))
    assert _calls(tmp_path)[-1].endswith("get pods")  # reads run once


def test_failures_and_truncation_read_as_upstream(tmp_path):
    tool = KubectlTool(kubeconfig=_kubeconfig(tmp_path), kubectl=str(_recording_kubectl(tmp_path, fail_on="nope")),
                       isolation="none")
    failed = asyncio.run(tool.execute("kubectl scale deploy nope --replicas=2"))
    assert failed == ('Command Rejected: Error executing kubectl command:\n'
                      'Error from server (NotFound): deployments.apps "nope" not found')
    assert not any(c.endswith("--replicas=2") for c in _calls(tmp_path))  # the dry run failed: nothing ran for real
    big = asyncio.run(tool.execute("kubectl get big"))
    assert len(big) == MAX_OUTPUT + len(TRUNCATED) and big.endswith("... [truncated]")
    huge = asyncio.run(tool.execute("kubectl get pods " + "x" * 200_000))
    assert huge.startswith("Command Rejected: the command is") and "16384" in huge


def test_each_session_has_its_own_rollback_stack(tmp_path):
    tool = KubectlTool(kubeconfig=_kubeconfig(tmp_path), kubectl=str(_recording_kubectl(tmp_path)), isolation="none")
    alice, bob = tool.for_session("alice"), tool.for_session("bob")
    asyncio.run(alice.execute("kubectl scale deploy geo --replicas=2"))
    asyncio.run(alice.execute("kubectl scale deploy rate --replicas=3"))
    asyncio.run(bob.execute("kubectl scale deploy geo --replicas=0"))
    assert alice.previous_rollbackable() == "1. kubectl scale deploy geo --replicas=2\n2. kubectl scale deploy rate --replicas=3"
    assert bob.previous_rollbackable() == "1. kubectl scale deploy geo --replicas=0"
    assert tool.for_session("alice") is alice and tool.for_session(None).previous_rollbackable().startswith("No ")
    undone = asyncio.run(alice.rollback())
    assert undone.startswith("Rolled back `kubectl scale deploy rate --replicas=3`")
    assert undone.endswith("action_stack: ['kubectl scale deploy geo --replicas=2']")
    assert bob.previous_rollbackable() == "1. kubectl scale deploy geo --replicas=0"


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="simulates a non-root conductor from root; as non-root the tests above are that")
def test_the_sandbox_holds_for_a_non_root_conductor(tmp_path):
    """The same sandbox started by a normal user (uid 1000): kubectl runs, host files stay out."""
    from sregym_core.agent_api import kubectl_sandbox

    base = Path(tempfile.mkdtemp(prefix="sregym-kubectl-user-"))
    try:
        base.chmod(0o755)
        kubeconfig = _kubeconfig(base)
        os.chown(kubeconfig, 1000, 1000)
        secret = base / "secret.txt"
        secret.write_text("GROUND-TRUTH")
        secret.chmod(0o644)  # even a file the user could read outside is not in the sandbox

        def as_user(*args):
            argv = kubectl_sandbox.sandboxed_argv(bwrap_usable(KUBECTL), KUBECTL, kubeconfig, list(args))
            return subprocess.run(["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "--", *argv],
                                  capture_output=True, text=True, timeout=30)

        assert "agent-token" in as_user("config", "view", "--raw").stdout
        stolen = as_user("create", "configmap", "x", f"--from-file={secret}", "--dry-run=client", "-o", "yaml")
        assert stolen.returncode != 0 and "GROUND-TRUTH" not in stolen.stdout + stolen.stderr
    finally:
        shutil.rmtree(base, ignore_errors=True)
