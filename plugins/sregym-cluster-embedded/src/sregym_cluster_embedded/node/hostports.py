"""hostPort: the node's address forwards ``<node IP>:<hostPort>`` to ``<pod IP>:<containerPort>``
(TCP), as the CNI portmap plugin does on a real node."""

from __future__ import annotations

import asyncio
import contextlib
import logging

log = logging.getLogger(__name__)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


class HostPortForwarder:
    def __init__(self) -> None:
        self.servers: list[asyncio.AbstractServer] = []

    async def start(self, host_ip: str, pod_ip: str, pod: dict) -> None:
        for container in pod.get("spec", {}).get("containers") or []:
            for port in container.get("ports") or []:
                if not port.get("hostPort") or (port.get("protocol") or "TCP") != "TCP":
                    continue
                target = (pod_ip, int(port.get("containerPort")))

                async def handle(reader, writer, target=target):
                    try:
                        up_reader, up_writer = await asyncio.open_connection(*target)
                    except OSError:
                        writer.close()
                        return
                    await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
                bind = port.get("hostIP") or host_ip
                try:
                    self.servers.append(await asyncio.start_server(handle, bind, int(port["hostPort"])))
                except OSError as exc:
                    log.warning("hostPort %s:%s for pod %s: %s", bind, port["hostPort"],
                                pod.get("metadata", {}).get("name"), exc)

    async def stop(self) -> None:
        for server in self.servers:
            server.close()
        for server in self.servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 1)
        self.servers = []
