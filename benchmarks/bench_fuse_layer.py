"""What the dormant FUSE layer (node/fuselayer.py) costs a volume's reader: side by side, in one run.

Not a test (no bar): it prints read throughput and latency of one volume directory read directly
and through the dormant layer (no rule: a passthrough), served by the real layer server process,
and their ratios. The layer is mounted as a container start mounts it: in a private mount
namespace of the measuring child, so nothing is mounted on the host. Needs root and /dev/fuse.

    .venv/bin/python benchmarks/bench_fuse_layer.py [--mib 64] [--rounds 3]

Measured per path:
* sequential read: the whole file in 128 KiB reads, after a fresh open (the layer's pages are
  dropped at each open, as the layer answers opens without KEEP_CACHE);
* random 8 KiB preads (PostgreSQL's page size): every block once, in random order, per fresh open,
  latency p50/p99;
* stat of the file (a cached attribute through the layer, until its 1 s timeout).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "sregym-cluster-embedded" / "src"))

from sregym_cluster_embedded.node import fuselayer  # noqa: E402

CHILD = r"""
import json, os, random, statistics, sys, time
path, rounds = sys.argv[1], int(sys.argv[2])
size = os.path.getsize(path)
out = {}
seq = []
for _ in range(rounds):
    fd = os.open(path, os.O_RDONLY)
    start = time.perf_counter()
    while os.read(fd, 131072):
        pass
    seq.append(size / (time.perf_counter() - start) / 1e6)
    os.close(fd)
out["seq_MBps"] = statistics.median(seq)
lat = []
for _ in range(rounds):
    fd = os.open(path, os.O_RDONLY)
    blocks = list(range(size // 8192))
    random.shuffle(blocks)
    for b in blocks:
        start = time.perf_counter()
        os.pread(fd, 8192, b * 8192)
        lat.append((time.perf_counter() - start) * 1e6)
    os.close(fd)
lat.sort()
out["rand8k_p50_us"] = lat[len(lat) // 2]
out["rand8k_p99_us"] = lat[int(len(lat) * 0.99)]
out["rand8k_ops"] = 1e6 / statistics.mean(lat)
st = []
for _ in range(2000):
    start = time.perf_counter()
    os.stat(path)
    st.append((time.perf_counter() - start) * 1e6)
st.sort()
out["stat_p50_us"] = st[len(st) // 2]
print(json.dumps(out), flush=True)
"""


def measure(path: str, rounds: int, preexec=None) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, path, str(rounds)], capture_output=True, text=True,
                         preexec_fn=preexec, timeout=600, check=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ok, reason = fuselayer.probe()
    if not ok:
        sys.exit(f"the FUSE layer is unavailable here: {reason}")
    libc = ctypes.CDLL(None, use_errno=True)
    with tempfile.TemporaryDirectory(prefix="bench-fuse-") as tmp:
        volume, target = Path(tmp) / "volume", Path(tmp) / "mnt"
        volume.mkdir()
        target.mkdir()
        data = volume / "table"
        with open(data, "wb") as handle:
            for _ in range(args.mib):
                handle.write(os.urandom(1 << 20))
        plain = measure(str(data), args.rounds)
        layers = fuselayer.FuseLayers(wanted=lambda pod, host: True)
        planned = layers.plan({}, {str(target): str(volume)}, set())

        def enter() -> None:
            if libc.unshare(0x00020000) != 0:
                raise OSError(ctypes.get_errno(), "unshare")
            libc.mount(None, b"/", None, (1 << 14) | (1 << 18), None)

        child = subprocess.Popen([sys.executable, "-c", CHILD, str(target / "table"), str(args.rounds)],
                                 stdout=subprocess.PIPE, text=True, preexec_fn=fuselayer.with_layers(enter, planned))
        try:
            layers.started("bench", planned)
            layered = json.loads(child.communicate(timeout=600)[0])
        finally:
            if child.poll() is None:
                child.kill()
            layers.close()
    print(f"volume: one {args.mib} MiB file, {args.rounds} rounds; load average {os.getloadavg()[0]:.1f}")
    print(f"{'measure':<16}{'direct':>12}{'dormant layer':>16}{'layer/direct':>14}")
    for key in ("seq_MBps", "rand8k_ops", "rand8k_p50_us", "rand8k_p99_us", "stat_p50_us"):
        ratio = layered[key] / plain[key] if plain[key] else float("nan")
        print(f"{key:<16}{plain[key]:>12.1f}{layered[key]:>16.1f}{ratio:>14.2f}")


if __name__ == "__main__":
    main()
