"""How the embedded cluster runs the ``nginx`` image: Debian's nginx in the foreground with the
configuration the pod mounts (``/etc/nginx/nginx.conf`` from the ConfigMap ``frontend-proxy-config``).

Only what an image provides and a process-based node lacks is done here: nginx logs errors to
stderr, and its access log (``/tmp/access.log`` in the shipped config) is a FIFO relayed to stdout,
because a non-root nginx cannot reopen the node's ``/dev/stdout`` file.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading

CONFIG = "/etc/nginx/nginx.conf"
ACCESS_LOG = "/tmp/access.log"


def _relay(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    os.set_blocking(fd, True)
    keep_open = os.open(path, os.O_WRONLY)  # reads never see EOF while nginx reopens the log
    with os.fdopen(fd, "rb", buffering=0) as fifo:
        for line in fifo:
            sys.stdout.buffer.write(line)
            sys.stdout.flush()
    os.close(keep_open)


def main(argv: list[str]) -> int:
    nginx = shutil.which("nginx", path="/usr/sbin:/usr/bin:/usr/local/sbin:/usr/local/bin")
    if nginx is None:
        print("nginx is not installed on this node (Debian package nginx)", file=sys.stderr)
        return 127
    config = os.environ.get("NGINX_CONFIG", CONFIG)
    if not os.path.exists(config):
        print(f"{config} does not exist: mount the ConfigMap frontend-proxy-config (key nginx.conf) there",
              file=sys.stderr)
        return 1
    if not os.path.exists(ACCESS_LOG):
        os.mkfifo(ACCESS_LOG, 0o600)
    if os.path.exists(ACCESS_LOG) and not os.path.isfile(ACCESS_LOG):
        threading.Thread(target=_relay, args=(ACCESS_LOG,), daemon=True).start()
    proc = subprocess.Popen([nginx, "-c", config, "-e", "stderr", *(argv or ["-g", "daemon off;"])])

    def forward(signum: int, _frame: object) -> None:
        proc.send_signal(signal.SIGQUIT if signum == signal.SIGTERM else signum)  # SIGQUIT: graceful

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    return proc.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
