"""A cluster handle for a cluster SREGym does not own: it only reaches it through a kubeconfig."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sregym_core.errors import ClusterError

CAPABILITIES = frozenset({"any", "real"})


class KubeconfigCluster:
    """``up`` verifies the API answers; ``down`` leaves the cluster alone (it is not ours)."""

    def __init__(self, name: str = "default", kubeconfig: str | os.PathLike[str] | None = None, **_options: Any) -> None:
        self.name = name
        path = kubeconfig or os.environ.get("SREGYM_KUBECONFIG") or os.environ.get("KUBECONFIG") \
            or Path.home() / ".kube" / "config"
        self._kubeconfig = Path(str(path).split(os.pathsep)[0]).expanduser()
        self.capabilities = CAPABILITIES

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
