"""Stand-in for the official postgres image's docker-entrypoint.sh, run on the host's binaries.

On an empty ``$PGDATA`` it runs initdb with POSTGRES_USER / POSTGRES_PASSWORD(_FILE) /
POSTGRES_DB / POSTGRES_INITDB_ARGS / POSTGRES_HOST_AUTH_METHOD, runs
``/docker-entrypoint-initdb.d/*.sql|*.sql.gz|*.sh`` against a temporary socket-only server, then
execs postgres. As root it drops to the ``postgres`` user first, like the image's gosu step.
Container paths are mapped to host paths through ``$SREGYM_MOUNTS`` (set by the node agent).
Standalone on purpose: no imports from the package, so it starts fast.
"""

from __future__ import annotations

import gzip
import json
import os
import pwd
import shlex
import shutil
import subprocess
import sys
import tempfile

MOUNTS: dict[str, str] = json.loads(os.environ.get("SREGYM_MOUNTS", "{}"))


INIT_MARKER = ".sregym-initialised"


def host_path(path: str) -> str:
    for mount in sorted(MOUNTS, key=len, reverse=True):
        if path == mount or path.startswith(mount.rstrip("/") + "/"):
            return MOUNTS[mount] + path[len(mount.rstrip("/")):]
    return path


def fail(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
    sys.exit(1)


def drop_privileges(dirs: list[str]) -> None:
    if os.geteuid() != 0:
        return
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        fail("error: running as root needs a 'postgres' user on this host (postgres refuses root)")
    for path in dirs:
        os.makedirs(path, exist_ok=True)
        os.chown(path, user.pw_uid, user.pw_gid)
    os.chmod(dirs[0], 0o700)
    os.initgroups("postgres", user.pw_gid)
    os.setgid(user.pw_gid)
    os.setuid(user.pw_uid)
    os.environ["HOME"] = user.pw_dir
    for lib in filter(None, os.environ.get("LD_PRELOAD", "").replace(":", " ").split()):
        if not os.access(lib, os.R_OK):
            fail(f'error: user "postgres" cannot read the preloaded library {lib}; refusing to start '
                 "(postgres would listen on every address instead of the pod IP)")
    for path in dirs:
        if not os.access(path, os.W_OK | os.X_OK):
            fail(f'error: user "postgres" cannot reach {path}: the cluster state directory and its '
                 "parents must be traversable (chmod o+x) when the node agent runs as root")


def run(argv: list[str], **kwargs) -> None:
    result = subprocess.run(argv, **kwargs)
    if result.returncode != 0:
        fail(f"error: {' '.join(argv[:2])} failed with exit code {result.returncode}")


def initialise(pg_bin: str, pgdata: str, sockdir: str) -> None:
    password = os.environ.get("POSTGRES_PASSWORD", "")
    if not password and os.environ.get("POSTGRES_PASSWORD_FILE"):
        with open(host_path(os.environ["POSTGRES_PASSWORD_FILE"])) as handle:
            password = handle.read().strip()
    auth = os.environ.get("POSTGRES_HOST_AUTH_METHOD") or ("scram-sha-256" if password else "")
    if not password and auth != "trust":
        fail("Error: Database is uninitialized and superuser password is not specified.\n"
             "       You must specify POSTGRES_PASSWORD to a non-empty value for the\n"
             "       superuser. For example, \"-e POSTGRES_PASSWORD=password\" on \"docker run\".")
    user = os.environ.get("POSTGRES_USER") or "postgres"
    database = os.environ.get("POSTGRES_DB") or user
    argv = [os.path.join(pg_bin, "initdb"), "-D", pgdata, f"--username={user}", "--no-sync"]
    with tempfile.NamedTemporaryFile("w", delete=False) as pwfile:
        pwfile.write(password + "\n")
    if password:
        argv.append(f"--pwfile={pwfile.name}")
    argv += shlex.split(os.environ.get("POSTGRES_INITDB_ARGS", ""))
    try:
        run(argv, stdout=sys.stdout, stderr=sys.stderr)
    finally:
        os.unlink(pwfile.name)
    with open(os.path.join(pgdata, "postgresql.conf"), "a") as conf:
        conf.write("\nlisten_addresses = '*'\n")
    hba_path = os.path.join(pgdata, "pg_hba.conf")
    with open(hba_path) as hba:
        lines = hba.read().splitlines()
    if auth and auth != "trust":
        # initdb trusts TCP from 127.0.0.1 and ::1, which in a real pod is the pod itself; here the
        # loopback is shared by every pod (and Service traffic arrives from 127.0.0.1), so only the
        # pod-private Unix socket stays trusted and TCP needs the password, as from another pod
        lines = [line if not line.startswith("host") else line.replace(" trust", f" {auth}") for line in lines]
    with open(hba_path, "w") as hba:
        hba.write("\n".join(lines) + f"\nhost all all all {auth}\n")
    port = os.environ.get("PGPORT", "5432")
    ctl = os.path.join(pg_bin, "pg_ctl")
    options = f"-c listen_addresses='' -c unix_socket_directories={sockdir} -p {port}"
    run([ctl, "-D", pgdata, "-o", options, "-w", "start"], stdout=sys.stdout, stderr=sys.stderr)
    psql = [os.path.join(pg_bin, "psql"), "-v", "ON_ERROR_STOP=1", "--username", user, "--no-password",
            "--no-psqlrc", "-h", sockdir, "-p", port]
    env = dict(os.environ, PGPASSWORD=password)
    if database != "postgres":
        run(psql + ["--dbname", "postgres", "-c", f'CREATE DATABASE "{database}"'], env=env)
    initdir = host_path("/docker-entrypoint-initdb.d")
    if os.path.isdir(initdir):
        for name in sorted(os.listdir(initdir)):
            path = os.path.join(initdir, name)
            if name.endswith(".sh"):
                print(f"{sys.argv[0]}: running {name}", flush=True)
                run(["/bin/sh", path], env=dict(env, PGHOST=sockdir, PGPORT=port, PGUSER=user))
            elif name.endswith(".sql"):
                print(f"{sys.argv[0]}: running {name}", flush=True)
                run(psql + ["--dbname", database, "-f", path], env=env)
            elif name.endswith(".sql.gz"):
                print(f"{sys.argv[0]}: running {name}", flush=True)
                with gzip.open(path) as handle:
                    run(psql + ["--dbname", database], input=handle.read(), env=env)
            else:
                print(f"{sys.argv[0]}: ignoring {name}", flush=True)
    run([ctl, "-D", pgdata, "-m", "fast", "-w", "stop"], stdout=sys.stdout, stderr=sys.stderr)
    with open(os.path.join(pgdata, INIT_MARKER), "w") as marker:
        marker.write("initialised\n")
    print("\nPostgreSQL init process complete; ready for start up.\n", flush=True)


def main() -> None:
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        args = ["postgres", *args]
    if args[0] != "postgres":
        os.execvp(args[0], args)
    pg_bin = os.environ["PG_BIN"]
    pgdata = host_path(os.environ.get("PGDATA", "/var/lib/postgresql/data"))
    sockdir = host_path(os.environ.get("PGHOST", "/var/run/postgresql"))
    if not sockdir.startswith("/"):
        sockdir = host_path("/var/run/postgresql")
    drop_privileges([pgdata, sockdir])
    os.environ["PGHOST"] = sockdir
    if os.path.exists(os.path.join(pgdata, "PG_VERSION")) and not os.path.exists(os.path.join(pgdata, INIT_MARKER)):
        # a first start killed half-way through initialisation (say by a liveness probe on a loaded
        # machine) would otherwise leave a cluster without the application's database forever
        print("\nPostgreSQL data directory is only partly initialised; initialising it again\n", flush=True)
        for entry in os.listdir(pgdata):
            path = os.path.join(pgdata, entry)
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
    if not os.path.exists(os.path.join(pgdata, "PG_VERSION")):
        initialise(pg_bin, pgdata, sockdir)
    else:
        print("\nPostgreSQL Database directory appears to contain a database; Skipping initialization\n",
              flush=True)
    extra = [] if any("unix_socket_directories" in a for a in args) else ["-c", f"unix_socket_directories={sockdir}"]
    server = os.path.join(pg_bin, "postgres")
    os.execv(server, [server, "-D", pgdata, *args[1:], *extra])


if __name__ == "__main__":
    main()
