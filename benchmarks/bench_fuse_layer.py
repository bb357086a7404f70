"""What the dormant FUSE layer (node/fuselayer.py) costs a volume's reader: side by side, in one run.

Not a test (no bar): it prints read throughput and latency of one volume directory read directly
and through the dormant layer (no rule: a passthrough), served by the real layer server process,
and their ratios. The layer is mounted as a container start mounts it: in a private mount
namespace of the measuring child, so nothing is mounted on the host. Needs root and /dev/fuse.

    .venv/bin/python benchmarks/bench_fuse_layer.py [--mib 64] [--rounds 3] [--postgres SECONDS]

Measured per path:
* sequential read: the whole file in 128 KiB reads, after a fresh open (the layer's pages are
  dropped at each open, as the layer answers opens without KEEP_CACHE);
* random 8 KiB preads (PostgreSQL's page size): every block once, in random order, per fresh open,
  latency p50/p99;
* stat of the file (a cached attribute through the layer, until its 1 s timeout);
* with ``--postgres``: PostgreSQL (Debian's, as user postgres) with its data directory on the
  volume: initdb's duration, then pgbench (scale 4, 4 clients) read-write and select-only for the
  given seconds each, tps and mean latency.
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


PG_SCRIPT = r"""
set -e
dir=$1; sock=$2; secs=$3
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
pg() { runuser -u postgres -- "$bin/$@"; }
start=$(date +%s.%N)
pg initdb -D "$dir/pg" -A trust >/dev/null
echo "initdb_s $(echo "$(date +%s.%N) - $start" | bc)"
pg pg_ctl -D "$dir/pg" -o "-k $sock -c listen_addresses=''" -w -l "$sock/log" start >/dev/null
trap 'pg pg_ctl -D "$dir/pg" -m fast -w stop >/dev/null' EXIT
pg pgbench -h "$sock" -i -s 4 -q postgres >/dev/null 2>&1
for mode in rw ro; do
  flag=; [ $mode = ro ] && flag=-S
  pg pgbench -h "$sock" -T "$secs" -c 4 -j 2 $flag postgres 2>/dev/null \
    | awk -v m=$mode '/^latency average/{print "pg_" m "_lat_ms", $4} /^tps/{print "pg_" m "_tps", $3}'
done
"""


def measure_postgres(volume: Path, secs: int, preexec=None) -> dict:
    sock = Path(tempfile.mkdtemp(prefix="bench-pgsock-"))
    os.chmod(sock, 0o777)
    try:
        out = subprocess.run(["bash", "-c", PG_SCRIPT, "pg", str(volume), str(sock), str(secs)], capture_output=True,
                             text=True, preexec_fn=preexec, timeout=600 + 4 * secs)
    finally:
        subprocess.run(["rm", "-rf", str(sock)], check=False)
    if out.returncode != 0:
        sys.exit(f"the PostgreSQL run failed: {out.stderr[-500:]}")
    return {k: float(v) for k, v in (line.split() for line in out.stdout.splitlines() if len(line.split()) == 2)}


def measure(path: str, rounds: int, preexec=None) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, path, str(rounds)], capture_output=True, text=True,
                         preexec_fn=preexec, timeout=600, check=True)
    return json.loads(out.stdout)


def _postgres_ids() -> tuple[int, int]:
    import pwd
    entry = pwd.getpwnam("postgres")
    return entry.pw_uid, entry.pw_gid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", type=int, default=0, metavar="SECONDS",
                        help="also run PostgreSQL + pgbench on the volume for this many seconds per mode")
    args = parser.parse_args()
    ok, reason = fuselayer.probe()
    if not ok:
        sys.exit(f"the FUSE layer is unavailable here: {reason}")
    libc = ctypes.CDLL(None, use_errno=True)
    with tempfile.TemporaryDirectory(prefix="bench-fuse-") as tmp:
        os.chmod(tmp, 0o755)  # PostgreSQL runs as its own user
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
            if args.postgres:
                for side in ("plain-pg", "layer-pg"):
                    (volume / side).mkdir()
                    os.chown(volume / side, *_postgres_ids())
                plain.update(measure_postgres(volume / "plain-pg", args.postgres))
                again = layers.plan({}, {str(target): str(volume)}, set())
                try:
                    # the same script inside a namespace whose volume is the layer (dormant)
                    layered.update(measure_postgres(target / "layer-pg", args.postgres,
                                                    preexec=fuselayer.with_layers(enter, again)))
                finally:
                    layers.started("bench", again)
        finally:
            if child.poll() is None:
                child.kill()
            layers.close()
    print(f"volume: one {args.mib} MiB file, {args.rounds} rounds; load average {os.getloadavg()[0]:.1f}")
    print(f"{'measure':<16}{'direct':>12}{'dormant layer':>16}{'layer/direct':>14}")
    keys = ["seq_MBps", "rand8k_ops", "rand8k_p50_us", "rand8k_p99_us", "stat_p50_us"]
    keys += [k for k in ("initdb_s", "pg_rw_tps", "pg_rw_lat_ms", "pg_ro_tps", "pg_ro_lat_ms") if k in plain]
    for key in keys:
        ratio = layered[key] / plain[key] if plain[key] else float("nan")
        print(f"{key:<16}{plain[key]:>12.1f}{layered[key]:>16.1f}{ratio:>14.2f}")


if __name__ == "__main__":
    main()
