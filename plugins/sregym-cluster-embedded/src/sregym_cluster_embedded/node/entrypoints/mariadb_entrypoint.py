"""Stand-in for the official mariadb image's docker-entrypoint.sh, run on the host's Debian MariaDB.

On an empty datadir (``/var/lib/mysql``) it runs ``mariadb-install-db``, starts a temporary
socket-only server, sets the root password (``MARIADB_ROOT_PASSWORD`` or ``MYSQL_ROOT_PASSWORD``,
``*_FILE`` variants too), creates ``MARIADB_DATABASE`` and ``MARIADB_USER``/``MARIADB_PASSWORD``,
runs ``/docker-entrypoint-initdb.d/*.sql|*.sql.gz|*.sh``, stops it, then execs ``mariadbd``. The
server reads no option files (``--no-defaults``: the host's /etc/mysql belongs to the host); server
options come from the container's args, as with the image. As root it passes ``--user=root`` (the
image drops to ``mysql``; on this node a pod's root is already confined by the runtime), as any
other uid it simply runs as that uid. Standalone on purpose: no package imports, so it starts fast.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from typing import NoReturn

MOUNTS: dict[str, str] = json.loads(os.environ.get("SREGYM_MOUNTS", "{}"))
INIT_MARKER = ".sregym-initialised"
SERVERS = ("mariadbd", "mysqld", "mariadb")


def host_path(path: str) -> str:
    for mount in sorted(MOUNTS, key=len, reverse=True):
        if path == mount or path.startswith(mount.rstrip("/") + "/"):
            return MOUNTS[mount] + path[len(mount.rstrip("/")):]
    return path


def fail(message: str) -> NoReturn:
    print(message, file=sys.stderr, flush=True)
    sys.exit(1)


def env_secret(*names: str) -> str:
    for name in names:
        if os.environ.get(name):
            return os.environ[name]
        if os.environ.get(name + "_FILE"):
            with open(host_path(os.environ[name + "_FILE"])) as handle:
                return handle.read().strip()
    return ""


def program(name: str) -> str:
    found = shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
    if not found:
        fail(f"error: {name} is not installed on this node (apt-get install mariadb-server)")
    return found


def quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def initialise(datadir: str, sockdir: str, options: list[str], as_root: list[str]) -> None:
    root_password = env_secret("MARIADB_ROOT_PASSWORD", "MYSQL_ROOT_PASSWORD")
    allow_empty = os.environ.get("MARIADB_ALLOW_EMPTY_ROOT_PASSWORD") or os.environ.get("MYSQL_ALLOW_EMPTY_PASSWORD")
    if not root_password and not allow_empty:
        fail("error: database is uninitialized and password option is not specified\n"
             "       You need to specify one of MARIADB_ROOT_PASSWORD, MARIADB_ROOT_PASSWORD_HASH,\n"
             "       MARIADB_ALLOW_EMPTY_ROOT_PASSWORD and MARIADB_RANDOM_ROOT_PASSWORD")
    for entry in os.listdir(datadir):  # a half-finished first start: begin again
        path = os.path.join(datadir, entry)
        shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
    install = [program("mariadb-install-db"), "--no-defaults", f"--datadir={datadir}", "--skip-test-db",
               "--auth-root-authentication-method=normal", *as_root, *options]
    result = subprocess.run(install, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        fail(f"error: mariadb-install-db failed:\n{result.stdout[-2000:]}")
    socket = os.path.join(sockdir, "init.sock")
    server = subprocess.Popen([program("mariadbd"), "--no-defaults", f"--datadir={datadir}", f"--socket={socket}",
                               "--skip-networking", "--skip-log-bin", *as_root, *options])
    client = [program("mariadb"), "--no-defaults", f"--socket={socket}", "-uroot", "--batch"]
    deadline = time.monotonic() + 60
    while subprocess.run([*client, "-e", "SELECT 1"], capture_output=True).returncode != 0:
        if server.poll() is not None or time.monotonic() > deadline:
            fail("error: the temporary server for initialisation did not start")
        time.sleep(0.2)
    # install-db also creates root@127.0.0.1, root@::1 and root@<hostname> with no password: on this
    # node every pod shares the loopback, so those would let any pod in as root; keep only
    # root@localhost (the pod-private socket) and root@'%' with the password, as the image does
    listed = subprocess.run([*client, "--skip-column-names", "-e",
                             "SELECT CONCAT(QUOTE(User), '@', QUOTE(Host)) FROM mysql.user "
                             "WHERE (User = 'root' AND Host <> 'localhost') OR User = ''"],
                            capture_output=True, text=True).stdout.split()
    statements = ["SET @@SESSION.SQL_LOG_BIN=0", *[f"DROP USER {account}" for account in listed],
                  f"CREATE USER 'root'@'%' IDENTIFIED BY {quote(root_password)}",
                  "GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION",
                  f"ALTER USER 'root'@'localhost' IDENTIFIED BY {quote(root_password)}"]
    database = os.environ.get("MARIADB_DATABASE") or os.environ.get("MYSQL_DATABASE") or ""
    if database:
        statements.append(f"CREATE DATABASE IF NOT EXISTS `{database}`")
    user = os.environ.get("MARIADB_USER") or os.environ.get("MYSQL_USER") or ""
    if user:
        password = env_secret("MARIADB_PASSWORD", "MYSQL_PASSWORD")
        statements.append(f"CREATE USER {quote(user)}@'%' IDENTIFIED BY {quote(password)}")
        if database:
            statements.append(f"GRANT ALL ON `{database}`.* TO {quote(user)}@'%'")
    run_sql(client, ";\n".join(statements) + ";\n", "users")
    authed = [*client, f"--password={root_password}"] if root_password else client
    initdir = host_path("/docker-entrypoint-initdb.d")
    if os.path.isdir(initdir):
        for name in sorted(os.listdir(initdir)):
            path = os.path.join(initdir, name)
            if name.endswith(".sh"):
                print(f"entrypoint: running {name}", flush=True)
                if subprocess.run(["/bin/sh", path], env=dict(os.environ, MYSQL_UNIX_PORT=socket)).returncode:
                    fail(f"error: {name} failed")
            elif name.endswith(".sql"):
                print(f"entrypoint: running {name}", flush=True)
                with open(path) as handle:
                    run_sql([*authed, *([database] if database else [])], handle.read(), name)
            elif name.endswith(".sql.gz"):
                print(f"entrypoint: running {name}", flush=True)
                with gzip.open(path, "rt") as handle:
                    run_sql([*authed, *([database] if database else [])], handle.read(), name)
            else:
                print(f"entrypoint: ignoring {name}", flush=True)
    subprocess.run([program("mariadb-admin"), "--no-defaults", f"--socket={socket}", "-uroot",
                    *([f"--password={root_password}"] if root_password else []), "shutdown"], capture_output=True)
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    with open(os.path.join(datadir, INIT_MARKER), "w") as marker:
        marker.write("initialised\n")
    print("\nMariaDB init process done. Ready for start up.\n", flush=True)


def run_sql(client: list[str], sql: str, what: str) -> None:
    result = subprocess.run(client, input=sql, text=True, capture_output=True)
    if result.returncode != 0:
        fail(f"error: running {what} failed: {result.stderr.strip()[-1500:]}")


def main() -> None:
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        args = ["mariadbd", *args]
    if os.path.basename(args[0]) not in SERVERS:
        os.execvp(args[0], args)
    options = [a for a in args[1:] if not a.startswith(("--socket", "--datadir", "--user"))]
    datadir = host_path("/var/lib/mysql")
    sockdir = host_path("/run/mysqld")
    os.makedirs(datadir, exist_ok=True)
    os.makedirs(sockdir, exist_ok=True)
    as_root = ["--user=root"] if os.geteuid() == 0 else []
    if not os.path.exists(os.path.join(datadir, INIT_MARKER)):
        initialise(datadir, sockdir, options, as_root)
    else:
        print("\nMariaDB database directory appears to contain a database; skipping initialization\n", flush=True)
    server = program("mariadbd")
    port = os.environ.get("MARIADB_PORT") or "3306"
    os.execv(server, [server, "--no-defaults", f"--datadir={datadir}", f"--socket={os.path.join(sockdir, 'mysqld.sock')}",
                      f"--port={port}", "--bind-address=0.0.0.0", "--skip-name-resolve", "--skip-log-bin",
                      *as_root, *options])


if __name__ == "__main__":
    main()
