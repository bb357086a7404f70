"""Container paths → host paths, for processes that cannot chroot.

Rule: every volumeMount (and every private directory of the image, e.g. postgres's
``/var/lib/postgresql/data``) maps a container path prefix to a real directory. Before a process
starts, each argument, env value and the working directory is rewritten: an absolute path that
starts with a mapped prefix (at a path boundary), whether it is the whole value, follows ``=`` or
``:``, or sits inside a shell script, is replaced by the real path. Paths outside every prefix are
left alone and refer to the host (``/bin/sh``, ``/usr/share/...``). Processes can also read
``$SREGYM_MOUNTS`` (JSON of the mapping) and ``$SREGYM_ROOT`` (the container's private root).
"""

from __future__ import annotations

import re


class PathMap:
    def __init__(self, mounts: dict[str, str]) -> None:
        self.mounts = {k.rstrip("/") or "/": v for k, v in mounts.items()}
        prefixes = sorted((k for k in self.mounts if k != "/"), key=len, reverse=True)
        self._pattern: re.Pattern[str] | None = None
        if prefixes:
            alternatives = "|".join(re.escape(p) for p in prefixes)
            self._pattern = re.compile(rf"(?:^|(?<=[\s'\"=:(,;]))({alternatives})(?=$|[/\s'\";:),])")

    def host(self, path: str) -> str:
        """The host path for one container path (unchanged when unmapped)."""
        for prefix in sorted(self.mounts, key=len, reverse=True):
            if prefix != "/" and (path == prefix or path.startswith(prefix + "/")):
                return self.mounts[prefix] + path[len(prefix):]
        return path

    def rewrite(self, text: str) -> str:
        """Rewrite every mapped path occurring in an argument or env value."""
        if self._pattern is None or "/" not in text:
            return text
        return self._pattern.sub(lambda m: self.mounts[m.group(1)], text)
