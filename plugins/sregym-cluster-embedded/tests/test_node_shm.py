"""A memory-backed emptyDir at /dev/shm is a tmpfs of its sizeLimit: writes past it get ENOSPC."""

from __future__ import annotations

import os

import pytest

from _fixtures_node import node_cluster, pod_manifest, wait_for
from sregym_cluster_embedded.node import isolation

pytestmark = [pytest.mark.anyio, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0 or not isolation.available(),
                                 reason="needs root: tmpfs mounts and pod mount namespaces")]


async def test_dev_shm_size_comes_from_the_volume_size_limit():
    script = ("dd if=/dev/zero of=/dev/shm/fill bs=1024 count=2048 2>&1; "
              "echo used=$(du -k /dev/shm/fill | cut -f1); sleep 3600")
    async with node_cluster(1) as (client, nodes):
        pod = pod_manifest("shm", [{"name": "app", "image": "busybox", "command": ["sh", "-c", script],
                                    "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}],
                           volumes=[{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}])
        await client.create("pods", pod, "default")
        await wait_for(lambda: client.get("pods", "shm", "default"), lambda p: p["status"].get("phase") == "Running")
        worker = nodes.agents["node-1"].find("default", "shm")
        host = worker.root / "volumes" / "dshm"

        async def logs():
            return {"text": (worker.log_dir / "app" / "0.log").read_text() if (worker.log_dir / "app" / "0.log").exists()
                    else "".join(p.read_text() for p in worker.log_dir.rglob("*") if p.is_file())}

        out = await wait_for(logs, lambda d: "used=" in d["text"], timeout=30)
        assert "No space left on device" in out["text"], out
        assert "used=1024" in out["text"], out
        assert os.path.ismount(host)
    assert not os.path.ismount(host)
