"""The FUSE bad-block layer on a live embedded cluster (issue 36): a statically linked reader in a
target pod gets EIO on exactly the blocks of disk-bad-blocks' map (``bad_blocks``) and reads the
others; a pod beside it on the same volume, and the host, read everything; the fault is armed and
disarmed while the pods run (no restart), by map, by rate and by an explicit block list; nothing
in the target pod's environment, mounts or files names the fault."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from sregym_core.testing.live import wait_for
from sregym_fault_dm_dust.badblocks import bad_blocks

pytestmark = pytest.mark.slow

BLOCKS = 64
KUBECTL = str(Path(sys.executable).parent / "kubectl") if (Path(sys.executable).parent / "kubectl").exists() \
    else (shutil.which("kubectl") or "kubectl")
BLOCKREAD_C = r"""
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
/* blockread FILE BLOCKS ROUNDS [sum]: one line per round (ROUNDS 0: forever, 0.3 s apart) naming each
   8 KiB block whose read failed, as block/errno; with "sum", each block's FNV-1a hash instead */
int main(int argc, char **argv) {
    static unsigned char buf[8192];
    int blocks = atoi(argv[2]), rounds = atoi(argv[3]), sums = argc > 4;
    for (int r = 0; rounds == 0 || r < rounds; r++) {
        int fd = open(argv[1], O_RDONLY);
        if (fd < 0) {
            printf("open %d\n", errno);
        } else {
            printf(sums ? "sum:" : "bad:");
            for (int b = 0; b < blocks; b++) {
                ssize_t got = pread(fd, buf, sizeof buf, (off_t)b * 8192);
                if (!sums) {
                    if (got < 0) printf(" %d/%d", b, errno);
                    continue;
                }
                unsigned int h = 2166136261u;
                for (ssize_t i = 0; i < got; i++) h = (h ^ buf[i]) * 16777619u;
                printf(" %08x", got < 0 ? 0u : h);
            }
            printf("\n");
            close(fd);
        }
        fflush(stdout);
        if (rounds == 0 || r + 1 < rounds) usleep(300000);
    }
    return 0;
}
"""


@pytest.fixture
def handle(embedded_cluster, monkeypatch) -> Any:
    from sregym_cluster_embedded.plugin import EmbeddedCluster

    monkeypatch.setenv("SREGYM_HOME", str(embedded_cluster.home))
    return EmbeddedCluster(name=embedded_cluster.name)


def kubectl(handle: Any, *args: str, input: str | None = None, check: bool = True) -> str:
    out = subprocess.run([KUBECTL, "--kubeconfig", str(handle.kubeconfig()), *args], input=input,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 or not check, out.stderr
    return out.stdout


def _static_reader(handle: Any) -> None:
    from sregym_cluster_embedded import cluster as clusters

    directory = Path(clusters.cluster_dir(handle.name)) / "nodes" / "node-1" / "host" / "sregym-static-dust"
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / "blockread.c"
    source.write_text(BLOCKREAD_C)
    built = subprocess.run(["gcc", "-static", "-O2", "-o", str(directory / "blockread"), str(source)],
                           capture_output=True, text=True, timeout=120)
    if built.returncode != 0:
        pytest.skip(f"no static C library to build a static program: {built.stderr[-200:]}")
    (directory / "blockread").chmod(0o755)
    out = subprocess.run(["file", str(directory / "blockread")], capture_output=True, text=True)
    assert out.returncode != 0 or "statically linked" in out.stdout, out.stdout


def _pod(name: str, claim: str, *extra: str) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"nodeName": "node-1", "terminationGracePeriodSeconds": 1,
                 "volumes": [{"name": "bin", "hostPath": {"path": "/sregym-static-dust", "type": "Directory"}},
                             {"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
                 "containers": [{"name": "c", "image": "busybox",
                                 "command": ["/opt/static/blockread", "/data/table", str(BLOCKS), "0", *extra],
                                 "volumeMounts": [{"name": "bin", "mountPath": "/opt/static", "readOnly": True},
                                                  {"name": "data", "mountPath": "/data"}]}]}})


def _last_line(handle: Any, pod: str, want: str, timeout: float = 90.0) -> str:
    """Wait (hang guard only) until the pod's newest complete line is ``want``; return the last seen."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        lines = kubectl(handle, "logs", pod, "--tail=2", check=False).splitlines()
        last = lines[-1] if lines else ""
        if last == want:
            return last
        time.sleep(0.3)
    return last


def test_static_reader_in_target_pod_meets_bad_blocks_through_the_fuse_layer(handle: Any, embedded_cluster) -> None:
    mechanism = handle.faults()["mechanisms"].get("fuse-badblocks") or {}
    if not mechanism.get("available"):
        pytest.skip(f"the FUSE layer is unavailable here: {mechanism.get('reason', 'not offered')}")
    _static_reader(handle)
    suffix = uuid.uuid4().hex[:6]
    pv, claim, target, other = f"dust-pv-{suffix}", f"dust-data-{suffix}", f"dust-target-{suffix}", f"dust-other-{suffix}"
    from sregym_cluster_embedded import cluster as clusters

    volume = Path(clusters.cluster_dir(handle.name)) / "volumes" / f"dust-volume-{suffix}"  # where PVs live
    volume.mkdir(mode=0o755, parents=True)
    table = volume / "table"
    table.write_bytes(os.urandom(8192 * BLOCKS))
    table.chmod(0o644)
    for obj in ({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
                 "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                          "hostPath": {"path": str(volume)}}},
                {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim},
                 "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": pv,
                          "resources": {"requests": {"storage": "1Gi"}}}}):
        kubectl(handle, "apply", "-f", "-", input=json.dumps(obj))
    fault_id, rate_id, ranges_id = f"dust-{suffix}", f"lse-{suffix}", f"ranges-{suffix}"
    seed, frac = 7, 0.15
    expected = "bad:" + "".join(f" {b}/5" for b in bad_blocks(table.stat().st_ino, BLOCKS, seed, frac))
    assert expected != "bad:"
    try:
        deadline = time.monotonic() + 300  # an outer bound against a hang, not a speed check
        while kubectl(handle, "get", "pvc", claim, "-o", "jsonpath={.status.phase}") != "Bound":
            assert time.monotonic() < deadline, ("the claim never bound", kubectl(handle, "get", "pv,pvc", "-o", "wide"))
            time.sleep(0.3)
        # the record first: the pods start with the layer over the volume (inject restarts the
        # datastore's pods for the same reason)
        record = handle.node_fault(fault_id, namespace="default", labels={"app": target}, calls=["read"],
                                   errno="EIO", mode="badblocks", frac=frac, block=8192, seed=seed,
                                   volumes=[{"namespace": "default", "claim": claim}],
                                   mechanisms=["fuse-badblocks"], fuse_install=True)
        assert record["mechanism"] == "fuse-badblocks", record
        for name in (target, other):
            kubectl(handle, "apply", "-f", "-", input=_pod(name, claim))
        for name in (target, other):
            kubectl(handle, "wait", "--for=condition=Ready", f"pod/{name}", "--timeout=90s")
        assert _last_line(handle, target, expected) == expected
        assert _last_line(handle, other, "bad:") == "bad:"  # same volume, same layer, not a target
        assert table.read_bytes()  # the host reads the whole file
        status = handle.fault_status("shim", fault_id)
        assert status["active"] and status["layered"] == [target], status
        # a process started in the pod later meets the same blocks
        assert kubectl(handle, "exec", target, "--", "/opt/static/blockread", "/data/table", str(BLOCKS), "1").strip() \
            == expected
        # nothing in the pod names the fault: its environment, its mounts (the layer shows as a
        # fuse mount whose options are the kernel's own), its files
        seen = kubectl(handle, "exec", target, "--", "/bin/sh", "-c",
                       "env; cat /proc/self/mountinfo /proc/1/environ; "
                       f"grep -rl -e {fault_id} -e 'frac={frac}' /data /tmp /run /etc /var /root 2>/dev/null; true")
        for secret in (fault_id, f"seed={seed}", f"frac={frac}", "badblocks"):
            assert secret not in seen, secret
        fuse_mounts = [line for line in seen.splitlines() if " - fuse " in line]
        assert len(fuse_mounts) == 1 and " /data " in fuse_mounts[0], fuse_mounts
        assert fuse_mounts[0].split(" - fuse ")[1].split()[1] == \
            "rw,user_id=0,group_id=0,default_permissions,allow_other", fuse_mounts
        # disarmed while the pods run: every block reads again, nothing restarted
        assert handle.clear_fault("shim", fault_id)
        assert _last_line(handle, target, "bad:") == "bad:"
        # armed again without a restart (the layer stayed, dormant): latent sector errors at rate 1
        record = handle.node_fault(rate_id, namespace="default", labels={"app": target}, calls=["read"],
                                   errno="EIO", rate=1.0, volumes=[{"namespace": "default", "claim": claim}],
                                   mechanisms=["fuse-badblocks"])
        assert record["mechanism"] == "fuse-badblocks" and record["active"], record
        everything = "bad:" + "".join(f" {b}/5" for b in range(BLOCKS))
        assert _last_line(handle, target, everything) == everything
        assert _last_line(handle, other, "bad:") == "bad:"
        assert handle.clear_fault("shim", rate_id)
        assert _last_line(handle, target, "bad:") == "bad:"
        # an explicit bad-block list, as a dust target takes it (the file named as the pod sees it)
        record = handle.node_fault(ranges_id, namespace="default", labels={"app": target}, calls=["read"],
                                   errno="EIO", mode="ranges", files={"/data/table": [[5, 6], [40, 40]]},
                                   volumes=[{"namespace": "default", "claim": claim}], mechanisms=["fuse-badblocks"])
        assert record["mechanism"] == "fuse-badblocks", record
        assert _last_line(handle, target, "bad: 5/5 6/5 40/5") == "bad: 5/5 6/5 40/5"
        assert handle.clear_fault("shim", ranges_id)
        assert _last_line(handle, target, "bad:") == "bad:"
        restarts = kubectl(handle, "get", "pod", target, "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
        assert restarts == "0"
    finally:
        handle.clear_fault("shim", fault_id)
        handle.clear_fault("shim", rate_id)
        handle.clear_fault("shim", ranges_id)
        kubectl(handle, "delete", "pod", target, other, "--wait=false", "--ignore-not-found", check=False)
        kubectl(handle, "delete", "pvc", claim, "--wait=false", "--ignore-not-found", check=False)
        kubectl(handle, "delete", "pv", pv, "--wait=false", "--ignore-not-found", check=False)
        shutil.rmtree(volume, ignore_errors=True)


def _fnv(data: bytes) -> str:
    h = 2166136261
    for byte in data:
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return f"{h:08x}"


def _volume_and_claim(handle: Any, suffix: str) -> tuple[str, str, Path]:
    """A PersistentVolume (where the cluster keeps them) with a 64-block file, and its bound claim."""
    from sregym_cluster_embedded import cluster as clusters

    pv, claim = f"dust-pv-{suffix}", f"dust-data-{suffix}"
    volume = Path(clusters.cluster_dir(handle.name)) / "volumes" / f"dust-volume-{suffix}"
    volume.mkdir(mode=0o755, parents=True)
    (volume / "table").write_bytes(os.urandom(8192 * BLOCKS))
    (volume / "table").chmod(0o644)
    for obj in ({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
                 "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                          "hostPath": {"path": str(volume)}}},
                {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim},
                 "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": pv,
                          "resources": {"requests": {"storage": "1Gi"}}}}):
        kubectl(handle, "apply", "-f", "-", input=json.dumps(obj))
    deadline = time.monotonic() + 300  # an outer bound against a hang, not a speed check
    while kubectl(handle, "get", "pvc", claim, "-o", "jsonpath={.status.phase}") != "Bound":
        assert time.monotonic() < deadline, ("the claim never bound", kubectl(handle, "get", "pv,pvc", "-o", "wide"))
        time.sleep(0.3)
    return pv, claim, volume


def _rounds(handle: Any, pod: str, count: int, timeout: float = 90.0) -> list[str]:
    """The pod's next ``count`` complete lines (a hang guard bounds the wait)."""
    seen = len(kubectl(handle, "logs", pod, check=False).splitlines())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = kubectl(handle, "logs", pod, check=False).splitlines()
        if len(lines) >= seen + count:
            return lines[seen:seen + count]
        time.sleep(0.3)
    return kubectl(handle, "logs", pod, check=False).splitlines()[seen:]


def test_static_reader_meets_latent_sector_errors_and_silent_corruption(handle: Any) -> None:
    # latent-sector-error (sticky, at a rate) and silent-data-corruption (corrupt) on the layer, met by
    # a statically linked reader; a pod beside it on the same volume meets neither; clearing heals
    mechanism = handle.faults()["mechanisms"].get("fuse-badblocks") or {}
    if not mechanism.get("available"):
        pytest.skip(f"the FUSE layer is unavailable here: {mechanism.get('reason', 'not offered')}")
    _static_reader(handle)
    suffix = uuid.uuid4().hex[:6]
    target, other, summer = f"lse-target-{suffix}", f"lse-other-{suffix}", f"lse-sum-{suffix}"
    lse_id, corrupt_id = f"lse-{suffix}", f"sdc-{suffix}"
    pv, claim, volume = _volume_and_claim(handle, suffix)
    table = volume / "table"
    data = table.read_bytes()
    clean = "sum: " + " ".join(_fnv(data[b * 8192:(b + 1) * 8192]) for b in range(BLOCKS))
    volumes = [{"namespace": "default", "claim": claim}]
    try:
        record = handle.node_fault(lse_id, namespace="default", labels={"role": "target"}, calls=["read"],
                                   errno="EIO", rate=0.5, sticky=True, volumes=volumes,
                                   mechanisms=["fuse-badblocks"], fuse_install=True)
        assert record["mechanism"] == "fuse-badblocks" and record["sticky"], record
        for name, extra in ((target, ()), (summer, ("sum",)), (other, ())):
            pod = json.loads(_pod(name, claim, *extra))
            if name != other:
                pod["metadata"]["labels"]["role"] = "target"
            kubectl(handle, "apply", "-f", "-", input=json.dumps(pod))
        for name in (target, summer, other):
            kubectl(handle, "wait", "--for=condition=Ready", f"pod/{name}", "--timeout=90s")
        # a block a read failed on fails every later read (the reader caches nothing, so the set
        # only grows); the pod beside it reads everything
        rounds = [set(line.split()[1:]) for line in _rounds(handle, target, 4)]
        assert len(rounds) == 4 and rounds[0], rounds
        assert all(a <= b for a, b in zip(rounds, rounds[1:])), rounds
        assert all(item.endswith("/5") for item in rounds[-1])
        assert _last_line(handle, other, "bad:") == "bad:"
        assert handle.clear_fault("shim", lse_id)
        assert _last_line(handle, target, "bad:") == "bad:"
        # silent corruption: the map's blocks read back altered, no read fails, the rest is intact
        seed, frac = 3, 0.2
        chosen = bad_blocks(table.stat().st_ino, BLOCKS, seed, frac)
        assert 0 < len(chosen) < BLOCKS
        record = handle.node_fault(corrupt_id, namespace="default", labels={"role": "target"}, calls=["read"],
                                   errno="EIO", mode="badblocks", frac=frac, block=8192, seed=seed, corrupt=True,
                                   flips=1024, volumes=volumes, mechanisms=["fuse-badblocks"])
        assert record["mechanism"] == "fuse-badblocks" and record["active"], record
        assert _last_line(handle, target, "bad:") == "bad:"  # nothing fails
        def differing() -> list[int]:
            line = (_rounds(handle, summer, 1) or [""])[-1]
            sums = line.split()[1:]
            assert line.startswith("sum:") and len(sums) == BLOCKS, line
            return [b for b, (got, want) in enumerate(zip(sums, clean.split()[1:])) if got != want]
        # the rule reaches the server while a round may be under way: wait for a round that met it
        assert wait_for(lambda: differing() == chosen, 60, 0.1)
        assert differing() == chosen  # and the same bytes again
        assert table.read_bytes() == data  # the disk holds what was written
        assert handle.clear_fault("shim", corrupt_id)
        assert _last_line(handle, summer, clean) == clean
    finally:
        handle.clear_fault("shim", lse_id)
        handle.clear_fault("shim", corrupt_id)
        kubectl(handle, "delete", "pod", target, other, summer, "--wait=false", "--ignore-not-found", check=False)
        kubectl(handle, "delete", "pvc", claim, "--wait=false", "--ignore-not-found", check=False)
        kubectl(handle, "delete", "pv", pv, "--wait=false", "--ignore-not-found", check=False)
        shutil.rmtree(volume, ignore_errors=True)
