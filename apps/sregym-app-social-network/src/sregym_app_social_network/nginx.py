"""The nginx front of ``nginx-thrift``: Debian's nginx, configured here and exec'd in the foreground.

It listens on ``NGINX_PORT`` (8080) and proxies ``/wrk2-api/`` to the Thrift gateway in the same
pod (``GATEWAY_ADDR``, default ``127.0.0.1:8082``); ``/nginx_status`` is its stub_status page.
Access logs go to stdout, errors to stderr, so ``kubectl logs -c nginx`` shows both. nginx cannot
reopen the container's stdout as a non-root user, so it writes the access log into a FIFO that this
wrapper copies to stdout; the wrapper forwards SIGTERM/SIGQUIT and exits with nginx's status.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")


def find_nginx() -> str | None:
    override = os.environ.get("NGINX_BIN")
    if override:
        return override
    for path in NGINX_CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    return shutil.which("nginx")


def render_conf(prefix: str, port: int, gateway: str, workers: int = 1) -> str:
    return f"""\
daemon off;
worker_processes {workers};
pid {prefix}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 1024; }}
http {{
  client_body_temp_path {prefix}/client_body;
  proxy_temp_path {prefix}/proxy;
  fastcgi_temp_path {prefix}/fastcgi;
  uwsgi_temp_path {prefix}/uwsgi;
  scgi_temp_path {prefix}/scgi;
  log_format sn escape=json '{{"ts":"$time_iso8601","service":"nginx-thrift","event":"http_access",'
    '"method":"$request_method","uri":"$uri","status":$status,"upstream":"$upstream_addr",'
    '"upstream_status":"$upstream_status","request_time":$request_time}}';
  access_log {prefix}/access.fifo sn;
  keepalive_timeout 30;
  upstream thrift_gateway {{ server {gateway}; keepalive 16; }}
  server {{
    listen {port};
    location /wrk2-api/ {{
      proxy_pass http://thrift_gateway;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_connect_timeout 2s;
      proxy_read_timeout 10s;
    }}
    location = /nginx_status {{ stub_status; access_log off; }}
    location / {{ return 404 '{{"error":"not found"}}'; }}
  }}
}}
"""


def main() -> int:
    binary = find_nginx()
    if binary is None:
        print('{"level":"error","service":"nginx-thrift","event":"nginx_missing",'
              '"hint":"install nginx (apt-get install nginx)"}', flush=True)
        return 127
    prefix = tempfile.mkdtemp(prefix="nginx-")
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(prefix, sub), exist_ok=True)
    conf = os.path.join(prefix, "nginx.conf")
    with open(conf, "w") as handle:
        handle.write(render_conf(prefix, int(os.environ.get("NGINX_PORT", "8080")),
                                 os.environ.get("GATEWAY_ADDR", "127.0.0.1:8082"),
                                 int(os.environ.get("NGINX_WORKERS", "1"))))
    fifo = os.path.join(prefix, "access.fifo")
    os.mkfifo(fifo, 0o600)
    sys.stdout.flush()
    proc = subprocess.Popen([binary, "-p", prefix, "-e", "stderr", "-c", conf])

    def copy_access_log() -> None:
        with open(fifo, "rb", buffering=0) as source:  # blocks until nginx opens it
            while chunk := source.read(65536):
                sys.stdout.buffer.write(chunk)
                sys.stdout.buffer.flush()

    threading.Thread(target=copy_access_log, daemon=True).start()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
        signal.signal(sig, lambda signum, _frame: proc.send_signal(signum))
    return proc.wait()
