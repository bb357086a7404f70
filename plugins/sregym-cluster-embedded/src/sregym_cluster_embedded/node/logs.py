"""Container logs in the CRI log format, with size-capped rotation and ``--previous``.

Each line on disk is ``<RFC3339Nano timestamp> <stdout|stderr> <F|P> <text>``, the format the
real kubelet reads from containerd. ``F`` marks a full line, ``P`` a partial one (a chunk of a
line longer than the buffer, or the last bytes before the stream closed without a newline).

Files: ``<log_dir>/<container>/<restartCount>.log`` is one container instance. When it grows past
``max_bytes`` it is renamed to ``<n>.log.1`` (replacing an older one) and a new file is started, so
a noisy container uses at most about ``2 * max_bytes``. Instance files older than the previous one
are removed, which is what keeps ``--previous`` working and nothing more.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
_CHUNK = 16 * 1024


def rfc3339_nano(ts: float | None = None) -> str:
    """``2026-11-22T07:37:46.123456789Z`` for a UNIX time (now when None)."""
    ns = time.time_ns() if ts is None else int(ts * 1e9)
    seconds, frac = divmod(ns, 1_000_000_000)
    base = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{frac:09d}Z"


def parse_rfc3339(text: str) -> float:
    """UNIX time of an RFC3339 timestamp with up to nanosecond precision."""
    text = text.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    main, _, rest = text.partition(".")
    if rest:
        digits = ""
        i = 0
        while i < len(rest) and rest[i].isdigit():
            digits += rest[i]
            i += 1
        tz = rest[i:]
        base = datetime.fromisoformat(main + tz).timestamp()
        return base + (int(digits) / (10 ** len(digits)) if digits else 0.0)
    return datetime.fromisoformat(text).timestamp()


class LogWriter:
    """Appends CRI-format lines for one container instance, rotating at ``max_bytes``."""

    def __init__(self, path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "ab")  # noqa: SIM115 - kept open for the container's lifetime
        self._size = self._file.tell()

    def write_line(self, stream: str, data: bytes, *, partial: bool = False) -> None:
        if self._file.closed:
            return
        record = b"%s %s %s %s\n" % (rfc3339_nano().encode(), stream.encode(), b"P" if partial else b"F", data)
        self._file.write(record)
        self._file.flush()
        self._size += len(record)
        if self._size >= self.max_bytes:
            self._rotate()

    def _rotate(self) -> None:
        self._file.close()
        os.replace(self.path, str(self.path) + ".1")
        self._file = open(self.path, "ab")  # noqa: SIM115
        self._size = 0

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


async def pump_stream(reader: asyncio.StreamReader, stream: str, writer: LogWriter) -> None:
    """Copy a child's pipe into the log until EOF, one CRI record per line."""
    pending = b""
    while True:
        chunk = await reader.read(_CHUNK)
        if not chunk:
            break
        pending += chunk
        while True:
            nl = pending.find(b"\n")
            if nl < 0:
                break
            writer.write_line(stream, pending[:nl])
            pending = pending[nl + 1:]
        if len(pending) >= _CHUNK:
            writer.write_line(stream, pending, partial=True)
            pending = b""
    if pending:
        writer.write_line(stream, pending, partial=True)


def instance_log_path(log_dir: Path, container: str, restart_count: int) -> Path:
    return log_dir / container / f"{restart_count}.log"


def prune_old_instances(log_dir: Path, container: str, current: int) -> None:
    """Keep the logs of the current and the previous instance only."""
    folder = log_dir / container
    if not folder.is_dir():
        return
    for entry in folder.iterdir():
        try:
            number = int(entry.name.split(".", 1)[0])
        except ValueError:
            continue
        if number < current - 1:
            entry.unlink(missing_ok=True)


def _parse_record(line: bytes) -> tuple[float, str, bool, bytes] | None:
    parts = line.rstrip(b"\n").split(b" ", 3)
    if len(parts) < 3:
        return None
    content = parts[3] if len(parts) == 4 else b""
    try:
        ts = parse_rfc3339(parts[0].decode())
    except ValueError:
        return None
    return ts, parts[0].decode(), parts[2] == b"P", content


def _render(records: list[tuple[float, str, bool, bytes]], timestamps: bool) -> list[bytes]:
    """Join partial records back into lines (kubectl sees whole lines)."""
    out: list[bytes] = []
    buf = b""
    first_ts = ""
    for _, ts_text, partial, content in records:
        if not buf:
            first_ts = ts_text
        buf += content
        if not partial:
            out.append((first_ts.encode() + b" " if timestamps else b"") + buf + b"\n")
            buf = b""
    if buf:
        out.append((first_ts.encode() + b" " if timestamps else b"") + buf)
    return out


def read_records(paths: list[Path], since: float | None = None) -> list[tuple[float, str, bool, bytes]]:
    records = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                for line in handle:
                    record = _parse_record(line)
                    if record and (since is None or record[0] >= since):
                        records.append(record)
        except FileNotFoundError:
            continue
    return records


async def read_log(
    path: Path,
    *,
    tail_lines: int | None = None,
    since_time: float | None = None,
    timestamps: bool = False,
    limit_bytes: int | None = None,
    follow: bool = False,
    is_running=None,
) -> AsyncIterator[bytes]:
    """Yield log bytes of one instance (its rotated part first); with ``follow`` keep yielding
    new lines until ``is_running()`` turns false and the file has been drained."""
    rotated = Path(str(path) + ".1")
    records = read_records([rotated, path], since_time)
    lines = _render(records, timestamps)
    if tail_lines is not None:
        lines = lines[-tail_lines:] if tail_lines > 0 else []
    sent = 0
    for line in lines:
        if limit_bytes is not None:
            if sent >= limit_bytes:
                return
            line = line[: limit_bytes - sent]
        sent += len(line)
        yield line
    if not follow:
        return
    position = path.stat().st_size if path.exists() else 0
    inode = path.stat().st_ino if path.exists() else None
    partial = b""
    idle_rounds = 0
    while True:
        await asyncio.sleep(0.2)
        try:
            stat = path.stat()
        except FileNotFoundError:
            stat = None
        if stat is not None and inode is not None and stat.st_ino != inode:
            position, inode = 0, stat.st_ino  # rotated: continue in the new file
        if stat is not None and stat.st_size > position:
            with open(path, "rb") as handle:
                handle.seek(position)
                data = handle.read()
            position += len(data)
            inode = stat.st_ino
            data = partial + data
            complete, _, partial = data.rpartition(b"\n")
            if complete:
                recs = [r for r in (_parse_record(x) for x in complete.split(b"\n")) if r]
                for line in _render(recs, timestamps):
                    if limit_bytes is not None:
                        if sent >= limit_bytes:
                            return
                        line = line[: limit_bytes - sent]
                    sent += len(line)
                    yield line
            idle_rounds = 0
            continue
        if is_running is not None and not is_running():
            idle_rounds += 1
            if idle_rounds >= 2:
                return
