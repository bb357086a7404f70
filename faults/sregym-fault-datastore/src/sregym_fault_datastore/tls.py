"""db-require-tls: the PostgreSQL server starts accepting TCP clients over TLS only.

As a DBA hardening the database would do it: ``ssl = on`` (ALTER SYSTEM) with a self-signed
certificate and key written into the data directory, and a ``hostnossl all all all reject`` rule put
ahead of every other rule of ``pg_hba.conf``, then a configuration reload. Clients that connect in
plain text (the app's, ``sslmode=disable``) are refused at login with ``pg_hba.conf rejects
connection ... no encryption``; clients that speak TLS still get in. Everything lives in the data
directory, on the volume: a restart of the database keeps it.

Files are read and written by the server itself, through SQL as the database admin (the way every
fault of this pack reaches PostgreSQL: ``kubectl exec`` and the pod's own psql): ``pg_read_binary_file``
to read, a large object exported with ``lo_export`` to write (byte for byte, created by the server's
user under its umask, so the key is 0600 as PostgreSQL demands).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from sregym_core.errors import PermanentFaultError, TemporaryFaultError
from sregym_core.faultkit import kube

from .sql import app_roles, psql, running_pod

if TYPE_CHECKING:
    from sregym_core.faults import FaultContext
    from sregym_core.types import FaultSpec, Target

#: the rule that makes TLS mandatory for TCP: pg_hba.conf is first-match, so ahead of the others it
#: refuses every plain-text TCP connection whatever rule would have let it in
REJECT_PLAIN = "hostnossl all all all reject"
REJECT_COMMENT = "# TCP clients must use TLS (hostssl): plain-text connections are refused"

#: how long a reload may take to show on new connections (the postmaster reads the files on SIGHUP)
RELOAD_TIMEOUT_S = 30.0


# ------------------------------------------------------------------ pg_hba.conf text

def _fields(line: str) -> list[str]:
    return line.split("#", 1)[0].split()


def _rejects_plain(line: str) -> bool:
    fields = _fields(line)
    return len(fields) >= 4 and fields[0] == "hostnossl" and fields[-1] == "reject"


def require_tls(hba: str) -> str:
    """``hba`` with :data:`REJECT_PLAIN` ahead of its first rule (unchanged when it already is there)."""
    lines = hba.splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines) if _fields(line)), len(lines))
    if first < len(lines) and _rejects_plain(lines[first]):
        return hba
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    return "".join([*lines[:first], REJECT_COMMENT + newline, REJECT_PLAIN + newline, *lines[first:]])


def allow_plain(hba: str) -> str:
    """What an SRE writes back: ``hba`` without the rules that refuse plain-text TCP (``hostnossl ...
    reject``) and the comment announcing them; every other line as it is."""
    return "".join(line for line in hba.splitlines(keepends=True)
                   if not _rejects_plain(line) and line.rstrip("\r\n") != REJECT_COMMENT)


# ------------------------------------------------------------------ a certificate for the server

def self_signed(common_name: str) -> tuple[bytes, bytes]:
    """A self-signed server certificate and its unencrypted key, PEM (a P-256 key: fast to make)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=825))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(common_name)]), critical=False)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


# ------------------------------------------------------------------ the server's files, through SQL

def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def read_file(ctx: FaultContext, target: Target, path: str) -> bytes | None:
    """The file's bytes as the server reads them, or None when there is no such file."""
    # the 'x' keeps an empty file from printing an empty line (psql's rows drop those)
    rows = psql(ctx, target, f"SELECT CASE WHEN (pg_stat_file({_literal(path)}, true)).size IS NULL THEN 'missing' "
                             f"ELSE 'x' || encode(pg_read_binary_file({_literal(path)}), 'hex') END")
    answer = rows[0][0] if rows and rows[0] else ""
    if answer == "missing":
        return None
    if not answer.startswith("x"):
        raise TemporaryFaultError(f"could not read {path} in {target.component.name}: {answer[:200]!r}", delay=2.0)
    return bytes.fromhex(answer[1:])


#: bytes per statement: an exec's command travels in the request's URL, which API servers cap (the
#: embedded one refuses a few kilobytes of it), so a file goes in pieces
CHUNK = 2000


def write_file(ctx: FaultContext, target: Target, path: str, content: bytes) -> None:
    """Write ``content`` to ``path`` as the server's user: a large object filled piece by piece (it
    outlives each psql session), exported, then dropped."""
    rows = psql(ctx, target, f"SELECT lo_from_bytea(0, decode('{content[:CHUNK].hex()}', 'hex'))")
    oid = rows[0][0] if rows and rows[0] and rows[0][0].isdigit() else None
    if oid is None:
        raise PermanentFaultError(f"could not write {path} in {target.component.name}: no large object ({rows!r})")
    try:
        for offset in range(CHUNK, len(content), CHUNK):
            psql(ctx, target, f"SELECT lo_put({oid}, {offset}, decode('{content[offset:offset + CHUNK].hex()}', 'hex'))")
        psql(ctx, target, f"SELECT lo_export({oid}, {_literal(path)})")
    finally:
        psql(ctx, target, f"SELECT lo_unlink({oid})", check=False)
    # psql's errors go to kubectl's stderr, which an exec does not return: read the file back
    if read_file(ctx, target, path) != content:
        raise PermanentFaultError(f"could not write {path} in {target.component.name}")


def _server_shell(ctx: FaultContext, target: Target, command: str) -> None:
    """One shell command run by the server as its own user (COPY TO PROGRAM, a superuser's right)."""
    psql(ctx, target, f"COPY (SELECT 1) TO PROGRAM {_literal(command)}", check=False)


def remove_file(ctx: FaultContext, target: Target, path: str) -> None:
    _server_shell(ctx, target, f"rm -f -- {shlex.quote(path)}")


def write_key(ctx: FaultContext, target: Target, path: str, content: bytes) -> None:
    """A private key the server accepts: lo_export leaves files world-readable (it sets its own
    umask), and PostgreSQL refuses a key the group or others can read."""
    write_file(ctx, target, path, content)
    _server_shell(ctx, target, f"chmod 0600 -- {shlex.quote(path)}")


def _settings(ctx: FaultContext, target: Target) -> dict[str, tuple[str, str, str]]:
    """name -> (setting, source, sourcefile) of the settings this fault reads."""
    rows = psql(ctx, target, "SELECT name, setting, source, coalesce(sourcefile, '') FROM pg_settings WHERE name IN "
                             "('ssl', 'ssl_cert_file', 'ssl_key_file', 'data_directory', 'hba_file')")
    return {r[0]: (r[1], r[2], r[3]) for r in rows if len(r) == 4}


def _in_data_dir(data_dir: str, path: str) -> str:
    return path if path.startswith("/") else f"{data_dir.rstrip('/')}/{path}"


def reload(ctx: FaultContext, target: Target) -> None:
    psql(ctx, target, "SELECT pg_reload_conf()")
    errors = psql(ctx, target, "SELECT line_number, error FROM pg_hba_file_rules WHERE error IS NOT NULL", check=False)
    if errors:
        raise PermanentFaultError(f"pg_hba.conf of {target.component.name} has errors: {errors[:3]}")


# ------------------------------------------------------------------ what a client sees

def tls_login_works(ctx: FaultContext, target: Target) -> bool:
    """Whether the admin gets in over TLS (the fault never locks itself out: checked before the rule)."""
    rows = psql(ctx, target, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", check=False,
                sslmode="require")
    return rows == [["t"]]


_PLAIN_LOGIN = ('PGCONNECT_TIMEOUT=5 PGSSLMODE=disable PGPASSWORD= psql -w -h "${POD_IP:-127.0.0.1}" -U "$1" '
                '-d "${POSTGRES_DB:-postgres}" -At -c "SELECT 1" 2>&1')


def plain_login(ctx: FaultContext, target: Target, role: str) -> str:
    """What the server answers a plain-text TCP login as ``role`` (no password: the answer tells whether
    pg_hba.conf let the connection reach authentication)."""
    pod = running_pod(ctx, target)
    container = target.component.container_name if target.component.container else "postgres"
    return ctx.kubectl("exec", pod, "-n", ctx.namespace, "-c", container, "--", "sh", "-c", _PLAIN_LOGIN, "psql",
                       role, check=False)


def plain_refused(answer: str) -> bool | None:
    """True when pg_hba.conf refused the connection, False when it reached authentication (or got in),
    None when the answer shows neither (no server answered as PostgreSQL)."""
    text = answer.lower()
    if "pg_hba.conf" in text:
        return True
    if "no password supplied" in text or "authentication failed" in text or text.strip() == "1":
        return False
    return None


def plain_refused_now(ctx: FaultContext, target: Target) -> bool:
    """Whether the live server refuses a plain-text TCP login to the app's database for any app role."""
    for role in app_roles(ctx, target):
        answer = plain_login(ctx, target, role)
        refused = plain_refused(answer)
        if refused is None:
            raise TemporaryFaultError(f"{target.component.name} did not answer a plain-text login as PostgreSQL: "
                                      f"{answer.strip()[:200]!r}", delay=2.0)
        if refused:
            return True
    return False


def _wait_plain(ctx: FaultContext, target: Target, refused: bool) -> None:
    if not kube.wait_until(lambda: plain_refused_now(ctx, target) is refused, timeout=RELOAD_TIMEOUT_S, interval=0.5):
        raise TemporaryFaultError(f"{target.component.name}: plain-text logins are still "
                                  f"{'accepted' if refused else 'refused'} after the reload", delay=2.0)


# ------------------------------------------------------------------ inject, is_present, fix, recover

def inject(ctx: FaultContext, target: Target, params: Any) -> None:
    settings = _settings(ctx, target)
    data_dir, hba_path = settings["data_directory"][0], settings["hba_file"][0]
    ssl, ssl_source, ssl_file = settings["ssl"]
    if "saved_hba" not in ctx.state:
        original = read_file(ctx, target, hba_path)
        if original is None:
            raise PermanentFaultError(f"{target.component.name} has no pg_hba.conf at {hba_path}")
        ctx.state.update(hba_file=hba_path, saved_hba=original.hex(), ssl_changed=False, tls_files={})
    if ssl != "on":
        if ssl_source in ("command line", "override", "environment variable"):
            raise PermanentFaultError(f"{target.component.name}: ssl is set on the server's {ssl_source}; "
                                      "ALTER SYSTEM cannot turn it on")
        files = {_in_data_dir(data_dir, settings["ssl_cert_file"][0]): None,
                 _in_data_dir(data_dir, settings["ssl_key_file"][0]): None}
        if not ctx.state["tls_files"]:
            for path in files:
                before = read_file(ctx, target, path)
                ctx.state["tls_files"][path] = before.hex() if before is not None else None
        cert, key = self_signed(target.component.service_name or target.component.name)
        cert_path, key_path = files
        write_file(ctx, target, cert_path, cert)
        write_key(ctx, target, key_path, key)
        # an ssl line of postgresql.auto.conf is put back as it was; otherwise the line goes again
        ctx.state.update(ssl_changed=True, ssl_before=ssl if ssl_file.endswith("postgresql.auto.conf") else None)
        psql(ctx, target, "ALTER SYSTEM SET ssl = on")
        reload(ctx, target)
        # 'SHOW ssl' says on even when the server refused the key: only a TLS login proves it
        if not kube.wait_until(lambda: tls_login_works(ctx, target), timeout=RELOAD_TIMEOUT_S, interval=0.5):
            raise PermanentFaultError(f"{target.component.name} did not turn TLS on (see its log: the key or "
                                      "certificate was refused)")
    if _edit_file(ctx, target, hba_path, require_tls):
        reload(ctx, target)
    _wait_plain(ctx, target, refused=True)
    # sessions opened before the change were let in already: end the plain-text ones, so the app's
    # pools connect again and meet the new rule (as the restart of a reconfigured server would)
    psql(ctx, target, "SELECT pg_terminate_backend(a.pid) FROM pg_stat_activity a JOIN pg_stat_ssl s ON s.pid = a.pid "
                      "WHERE a.backend_type = 'client backend' AND NOT s.ssl AND a.client_addr IS NOT NULL "
                      "AND a.pid <> pg_backend_pid()", check=False)


def _edit_file(ctx: FaultContext, target: Target, path: str, edit: Any) -> bool:
    """Rewrite the server's file at ``path`` with ``edit`` (text to text); False when it changed nothing."""
    current = read_file(ctx, target, path) or b""
    wanted = edit(current.decode()).encode()
    if wanted != current:
        write_file(ctx, target, path, wanted)
    return wanted != current


def is_present(ctx: FaultContext, target: Target, params: Any) -> bool:
    """The live server (its loaded pg_hba rules and ssl setting, asked by connecting) refuses a
    plain-text TCP login of the app's role. A server that answers neither way (a stub in its place)
    is an error, never "fixed"."""
    return plain_refused_now(ctx, target)


def reference_fix(ctx: FaultContext, target: Target, params: Any) -> None:
    """What the SRE who read ``pg_hba.conf rejects connection ... no encryption`` in the app's log does:
    take the rule refusing plain-text TCP out of the live pg_hba.conf and reload. TLS stays on for
    clients that want it."""
    hba_path = psql(ctx, target, "SHOW hba_file")[0][0]
    _edit_file(ctx, target, hba_path, allow_plain)
    reload(ctx, target)
    _wait_plain(ctx, target, refused=False)


def recover(ctx: FaultContext, target: Target, params: Any) -> None:
    """Put back pg_hba.conf byte for byte, the ssl setting and the certificate files as they were."""
    if "saved_hba" not in ctx.state:
        return
    original = bytes.fromhex(ctx.state["saved_hba"])
    if read_file(ctx, target, ctx.state["hba_file"]) != original:
        write_file(ctx, target, ctx.state["hba_file"], original)
    if ctx.state.get("ssl_changed"):
        before = ctx.state.get("ssl_before")
        psql(ctx, target, f"ALTER SYSTEM SET ssl = {_literal(before)}" if before else "ALTER SYSTEM RESET ssl")
    reload(ctx, target)
    if ctx.state.get("ssl_changed"):
        for path, content in ctx.state.get("tls_files", {}).items():
            if content is None:
                remove_file(ctx, target, path)
            else:
                write_file(ctx, target, path, bytes.fromhex(content))
    _wait_plain(ctx, target, refused=False)


def truth_values(target: Target, params: Any, state: Any) -> dict:
    return {"pg_hba.conf": {"before": "no rule on TLS", "after": REJECT_PLAIN}, "ssl": "on",
            "hba_file": state.get("hba_file") or "$PGDATA/pg_hba.conf"}


def _spec() -> FaultSpec:
    from sregym_core.faultkit import function_fault, schema

    from .postgres import POSTGRES

    return function_fault(
        name="db-require-tls", summary="the database now accepts TCP clients over TLS only; its clients speak plain text",
        layer="datastore", selector=POSTGRES, params_schema=schema(), inject=inject, recover=recover,
        is_present=is_present, reference_fix=reference_fix, resource_kind="PostgreSQL configuration",
        mechanism="the PostgreSQL server was made to require TLS from TCP clients (ssl = on and a "
                  "'hostnossl all all all reject' rule first in pg_hba.conf); the app's clients connect "
                  "without TLS and are refused at login",
        symptoms=("pg_hba.conf rejects connection", "no encryption"),
        keywords=("tls", "ssl", "hostssl", "hostnossl", "pg_hba", "encryption"),
        vocabulary=("hostnossl", "hostssl", "pg hba", "pg_hba", "hba conf", "hba rule*", "require* tls",
                    "require* ssl", "tls required", "ssl required", "tls only", "ssl only", "only .. over tls",
                    "only .. over ssl", "only .. tls connections", "only .. ssl connections", "enforc* tls",
                    "enforc* ssl", "forc* tls", "forc* ssl", "mandatory tls", "mandatory ssl",
                    "reject* .. plain text", "reject* .. plaintext", "reject* .. unencrypted", "reject* .. non tls",
                    "reject* .. non ssl", "refus* .. unencrypted", "refus* .. plain text", "refus* .. non tls",
                    "refus* .. non ssl", "unencrypted connections", "plaintext connections",
                    "plain text connections", "non tls connections", "non ssl connections"),
        values=truth_values)


FAULTS = [_spec()]
