"""TrainTicket tests (the SREGym harness comes from the repository's root conftest): a real MariaDB
with the app's schemas and seed, started through the embedded cluster's own mariadb entrypoint
(skipped where Debian's mariadb-server is missing)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sregym_app_train_ticket import data, manifests
from sregym_core.testing.localservers import free_port

ENTRYPOINT = Path(__import__("sregym_cluster_embedded").__file__).parent / "node" / "entrypoints" / "mariadb_entrypoint.py"


@pytest.fixture(scope="session")
def mariadb(tmp_path_factory):
    """The port of a MariaDB server holding every service's database, user and seed."""
    if not shutil.which("mariadbd", path="/usr/sbin:/usr/bin"):
        pytest.skip("needs Debian's mariadb-server (tools/setup.sh installs it)")
    root = tmp_path_factory.mktemp("mariadb")
    dirs = {p: root / p.strip("/").replace("/", "-") for p in ("/var/lib/mysql", "/run/mysqld", "/docker-entrypoint-initdb.d")}
    for d in dirs.values():
        d.mkdir()
    (dirs["/docker-entrypoint-initdb.d"] / "01-schemas.sql").write_text(data.init_sql())
    port = free_port()
    env = {**os.environ, "SREGYM_MOUNTS": json.dumps({k: str(v) for k, v in dirs.items()}),
           "MARIADB_ROOT_PASSWORD": "rootpw", "MARIADB_PORT": str(port)}
    # the server's output goes to a file: a pipe nobody reads until the end can fill and stall it
    log = root / "mariadb.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, str(ENTRYPOINT), "mariadbd", *manifests.MARIADB_ARGS,
                                 "--bind-address=127.0.0.1"], env=env, stdout=out, stderr=subprocess.STDOUT)
    import pymysql
    deadline = time.monotonic() + 180  # the first start initialises every schema; slow on a loaded machine
    while True:
        try:
            pymysql.connect(host="127.0.0.1", port=port, user="root", password="rootpw").close()
            break
        except pymysql.err.OperationalError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                proc.wait(30)
                pytest.fail(f"mariadb did not start: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.3)
    yield port
    proc.terminate()
    proc.wait(30)
