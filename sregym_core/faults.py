"""What fault primitives receive: :class:`FaultContext`, and helpers to call their callables.

Fault callables (``inject``, ``recover``, ``is_present``, ``reference_fix``) take
``(ctx, target, params)`` and may be plain functions (run in a worker thread, so blocking Kubernetes
client calls are fine) or coroutines.

.. versionadded:: 0.1
"""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from .errors import FaultError, TemporaryFaultError
from .types import AppSpec


@attrs.define
class FaultContext:
    """The benchmark-side view a fault acts through (admin identity).

    Attributes:
        kubeconfig: the admin kubeconfig.
        namespace: the app's namespace.
        app: the app.
        cluster: the cluster handle (capabilities, node-level fault hooks where supported).
        state: scratch space kept per fault instance between inject, is_present and recover.
        kubectl_path: the kubectl binary to use.
    """

    kubeconfig: Path
    namespace: str
    app: AppSpec
    cluster: Any = None
    state: dict[str, Any] = attrs.Factory(dict)
    kubectl_path: str = "kubectl"
    _api: Any = None

    @property
    def api(self) -> Any:
        """A ``kubernetes.client.ApiClient`` for the admin identity (created on first use)."""
        if self._api is None:
            from kubernetes import config

            self._api = config.new_client_from_config(config_file=str(self.kubeconfig))
        return self._api

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60.0) -> str:
        """Run the real kubectl as the admin and return stdout; raise :class:`FaultError` on failure."""
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        proc = subprocess.run([self.kubectl_path, *args], input=input, capture_output=True, text=True, errors="replace",
                              env=env, timeout=timeout)
        if check and proc.returncode != 0:
            raise FaultError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc.stdout

    def rollout_restart(self, kind: str, name: str) -> None:
        """``kubectl rollout restart kind/name``, retried when a restart landed within the last second.

        kubectl stamps ``restartedAt`` with one-second resolution and refuses a second restart in the
        same second; an inject followed quickly by a fix (or two faults on one workload) hits that.
        """
        ref = f"{kind.lower()}/{name}"
        for attempt in range(5):
            try:
                self.kubectl("rollout", "restart", ref, "-n", self.namespace)
                return
            except FaultError as exc:
                if "within the past second" not in str(exc) or attempt == 4:
                    raise
                time.sleep(1.1)

    def child(self) -> FaultContext:
        """A context sharing everything but with fresh state (one per fault instance)."""
        return FaultContext(kubeconfig=self.kubeconfig, namespace=self.namespace, app=self.app,
                            cluster=self.cluster, kubectl_path=self.kubectl_path, api=self._api)


#: how long :func:`call_fault` keeps retrying a :class:`TemporaryFaultError`
TEMPORARY_RETRY_SECONDS = 60.0


async def call_fault(func: Any, ctx: FaultContext, target: Any, params: Mapping[str, Any], *,
                     retry_for: float = TEMPORARY_RETRY_SECONDS) -> Any:
    """Call a fault callable whether it is sync (in a thread) or async.

    A :class:`TemporaryFaultError` (say, no ready pod to exec into yet) is retried after its
    ``delay`` for up to ``retry_for`` seconds; then it propagates.
    """
    deadline = time.monotonic() + retry_for
    while True:
        try:
            return await _call_once(func, ctx, target, params)
        except TemporaryFaultError as exc:
            if time.monotonic() + exc.delay > deadline:
                raise
            await asyncio.sleep(exc.delay)


async def _call_once(func: Any, ctx: FaultContext, target: Any, params: Mapping[str, Any]) -> Any:
    if inspect.iscoroutinefunction(func):
        return await func(ctx, target, dict(params))
    result = await asyncio.to_thread(func, ctx, target, dict(params))
    if inspect.isawaitable(result):
        return await result
    return result
