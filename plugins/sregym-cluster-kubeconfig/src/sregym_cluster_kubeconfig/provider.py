"""A cluster handle for a cluster SREGym does not own: it only reaches it through a kubeconfig."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sregym_core.errors import ClusterError

CAPABILITIES = frozenset({"any", "real"})
MULTI_NODE = "multi-node"


class KubeconfigCluster:
    """``up`` verifies the API answers; ``down`` leaves the cluster alone (it is not ours)."""

    def __init__(self, name: str = "default", kubeconfig: str | os.PathLike[str] | None = None, **_options: Any) -> None:
        self.name = name
        path = kubeconfig or os.environ.get("SREGYM_KUBECONFIG") or os.environ.get("KUBECONFIG") \
            or Path.home() / ".kube" / "config"
        self._kubeconfig = Path(str(path).split(os.pathsep)[0]).expanduser()
        self._capabilities: frozenset[str] | None = None

    @property
    def capabilities(self) -> frozenset[str]:
        """``any`` and ``real``, and ``multi-node`` when the cluster has two nodes or more (asked once;
        a cluster that does not answer offers no more than the first two)."""
        if self._capabilities is not None:
            return self._capabilities
        nodes = self._nodes()
        found = CAPABILITIES | ({MULTI_NODE} if (nodes or 0) >= 2 else set())
        if nodes is not None:
            self._capabilities = found
        return found

    def _nodes(self) -> int | None:
        from kubernetes import client, config

        try:
            api = config.new_client_from_config(config_file=str(self.kubeconfig()))
            return len(client.CoreV1Api(api).list_node(_request_timeout=10).items)
        except Exception:  # noqa: BLE001 - unreachable or no kubeconfig (`up` says why): ask again later
            return None

    def fault_mechanisms(self) -> dict[str, dict]:
        """What this cluster offers of ``sregym_core.mechanisms`` (``mechanisms.py``): the DaemonSet
        loader when this identity may deploy it; nothing that needs SREGym's own node agent."""
        from .mechanisms import probe

        try:
            path = self.kubeconfig()
        except ClusterError as exc:
            return probe(None, str(exc))
        return probe(path)

    def kubeconfig(self, agent: bool = False) -> Path:
        if not self._kubeconfig.is_file():
            raise ClusterError(f"kubeconfig {self._kubeconfig} does not exist",
                               hints=("set SREGYM_KUBECONFIG or KUBECONFIG to an admin kubeconfig",))
        return self._kubeconfig

    def up(self) -> None:
        from kubernetes import client, config

        try:
            api = config.new_client_from_config(config_file=str(self.kubeconfig()))
            client.VersionApi(api).get_code()
        except ClusterError:
            raise
        except Exception as exc:
            raise ClusterError(f"the cluster in {self._kubeconfig} does not answer: {exc}",
                               hints=("check the kubeconfig's server and credentials with `kubectl version`",)) from exc

    def down(self) -> None:
        """Nothing to do: SREGym never deletes a cluster it did not create."""
