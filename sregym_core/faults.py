"""The fault contract: :class:`Fault` (what a primitive implements), :class:`FaultContext` (what it
acts through), :class:`NoiseSource` (the same for transient noise), and :func:`call_fault`.

A fault implements five methods, all with ONE signature ``(ctx, target, params)``:

* ``inject`` breaks the target; whatever ``recover``/``is_present`` need later goes in ``ctx.state``
  (one dict per fault instance, :meth:`FaultContext.child` makes a fresh one).
* ``is_present`` is the fault-specific invariant the mitigation oracle checks: True while the
  injected breakage is live, False once *any* correct fix removed it (not only ``recover``).
* ``recover`` undoes the injection (the benchmark's own cleanup).
* ``reference_fix`` is the gold mitigation done *as an agent would* (kubectl, a datastore's
  protocol), which the reference agent applies to prove the problem is solvable.
* ``ground_truth`` describes what was done (read ``ctx.state`` for concrete values); it must work
  before injection too (with an empty state), because problems are checked up front.

Methods may be plain functions (run in a worker thread, so blocking Kubernetes calls are fine) or
coroutines. :mod:`sregym_core.faultkit` has helpers to write them.

.. versionadded:: 0.1
"""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from .errors import FaultError, TemporaryFaultError
from .types import AppSpec

if TYPE_CHECKING:
    from .types import GroundTruth, Target


@runtime_checkable
class UsersProbe(Protocol):
    """The app's users as a fault watches them: its workload generator (``AppSpec.workload``).

    The engine fills :attr:`FaultContext.users` with one when the app has a generator, so the fault
    toolkit (:mod:`sregym_core.faultkit.users`) reads the users without importing the engine.

    .. versionadded:: 0.3
    """

    def stats(self, window_s: float) -> Mapping[str, Any]:
        """The generator's view of the last ``window_s`` seconds: ``count``, ``success_rate`` (0..1),
        ``error_kinds``... (``WorkloadSpec.query_path``)."""
        ...

    def control(self, **settings: Any) -> Mapping[str, Any]:
        """Change the generator's run (``WorkloadSpec.control_path``): rate, duration, route..."""
        ...


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
        api: (the ``api`` argument) a ``kubernetes.client.ApiClient`` for the admin identity, or a
            callable that makes one on first use, filled by the engine; read it as :attr:`api`.
        users: the app's workload generator as a :class:`UsersProbe` (admin identity), filled by the
            engine when the app has one; None otherwise.

    .. versionchanged:: 0.3 ``users``; ``api`` is filled by the engine.
    """

    kubeconfig: Path
    namespace: str
    app: AppSpec
    cluster: Any = None
    state: dict[str, Any] = attrs.Factory(dict)
    kubectl_path: str = "kubectl"
    _api: Any = None
    users: UsersProbe | None = None

    @property
    def api(self) -> Any:
        """A ``kubernetes.client.ApiClient`` for the admin identity, which the engine fills (the
        contract never imports the Kubernetes client; ``sregym-core[run]`` has it).

        .. versionchanged:: 0.3 filled by the engine, no longer created from the kubeconfig here.
        """
        if self._api is None:
            raise FaultError("this fault context has no Kubernetes API client",
                             hints=("the engine fills FaultContext.api (sregym run, validate, the live test harness); "
                                    "a context built by hand passes api=<a kubernetes.client.ApiClient>",))
        if callable(self._api):  # the engine hands a maker: no client for the faults that never read one
            self._api = self._api()
        return self._api

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60.0) -> str:
        """Run the real kubectl as the admin and return stdout; raise :class:`FaultError` on failure.

        A write names :data:`FAULT_FIELD_MANAGER`, the deploy's own field manager, so a real API server's
        ``managedFields`` show the fields a fault wrote owned as the deployed ones are (issue #34)."""
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        proc = subprocess.run([self.kubectl_path, *with_fault_field_manager(args)], input=input, capture_output=True,
                              text=True, errors="replace", env=env, timeout=timeout)
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

    @classmethod
    def detached(cls, app: AppSpec) -> FaultContext:
        """A context with no cluster behind it (its kubectl fails): for ``ground_truth`` before injection."""
        return _DetachedFaultContext(kubeconfig=Path("/nonexistent/kubeconfig"), namespace=app.namespace, app=app)

    def child(self) -> FaultContext:
        """A context sharing everything but with fresh state (one per fault instance).

        It keeps the subclass, so a recording context (the test harness's) stays recording.
        """
        return attrs.evolve(self, state={})


#: the field manager a fault's kubectl writes name: the one a client-side ``kubectl apply`` (every app's
#: deploy) records. A fault's own manager name would sit on exactly the fields it changed, in every
#: object's ``managedFields`` the agent may read (``--show-managed-fields``): one look would name the fault.
FAULT_FIELD_MANAGER = "kubectl-client-side-apply"
#: the kubectl writes that take ``--field-manager`` (``kubectl <verb> --help``, 1.3x); ``rollout`` only
#: with ``restart``, ``pause``, ``resume``; ``create`` not with ``--raw`` or ``token``
_MANAGED_VERBS = frozenset({"patch", "apply", "create", "replace", "annotate", "label", "set", "taint", "rollout",
                            "autoscale", "expose", "edit"})


def with_fault_field_manager(args: tuple[str, ...] | list[str]) -> list[str]:
    """``args`` with ``--field-manager=``:data:`FAULT_FIELD_MANAGER` when they are a write that takes one
    and name no manager themselves (before a ``--``: what follows is a command's, not kubectl's)."""
    argv = list(args)
    if not argv or argv[0] not in _MANAGED_VERBS or any(a.startswith("--field-manager") for a in argv):
        return argv
    if argv[0] == "rollout" and argv[1:2] not in (["restart"], ["pause"], ["resume"]):
        return argv
    if argv[0] == "create" and ("--raw" in argv or argv[1:2] == ["token"]):
        return argv
    end = argv.index("--") if "--" in argv else len(argv)
    return [*argv[:end], f"--field-manager={FAULT_FIELD_MANAGER}", *argv[end:]]


@attrs.define
class _DetachedFaultContext(FaultContext):
    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60.0) -> str:
        raise FaultError(f"kubectl {' '.join(args)}: this context has no cluster (ground_truth must only read ctx.state)")


@runtime_checkable
class Fault(Protocol):
    """What a fault primitive implements (see the module docstring for each method's meaning)."""

    def inject(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> Any: ...

    def is_present(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool: ...

    def recover(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> Any: ...

    def reference_fix(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> Any: ...

    def ground_truth(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> GroundTruth: ...


@runtime_checkable
class NoiseSource(Protocol):
    """What a noise source implements: a transient disturbance that is not a root cause.

    ``inject`` starts it (state in ``ctx.state``), ``is_active`` says whether it is still in
    effect, ``revert`` stops it (it must also work after the noise ended by itself), and
    ``describe`` returns one line for logs and trajectories (never shown as ground truth).
    """

    def inject(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> Any: ...

    def is_active(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> bool: ...

    def revert(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> Any: ...

    def describe(self, ctx: FaultContext, target: Target, params: Mapping[str, Any]) -> str: ...


FaultMethod = Callable[[FaultContext, Any, Mapping[str, Any]], Any | Awaitable[Any]]

#: how long :func:`call_fault` keeps retrying a :class:`TemporaryFaultError`
TEMPORARY_RETRY_SECONDS = 60.0


async def call_fault(method: FaultMethod, ctx: FaultContext, target: Any, params: Mapping[str, Any], *,
                     retry_for: float = TEMPORARY_RETRY_SECONDS) -> Any:
    """Call one method of a fault (``spec.impl.inject``...) whether it is sync (in a thread) or async.

    A :class:`TemporaryFaultError` (say, no ready pod to exec into yet) is retried after its
    ``delay`` for up to ``retry_for`` seconds; then it propagates.
    """
    deadline = time.monotonic() + retry_for
    while True:
        try:
            return await _call_once(method, ctx, target, params)
        except TemporaryFaultError as exc:
            if time.monotonic() + exc.delay > deadline:
                raise
            await asyncio.sleep(exc.delay)


async def _call_once(method: FaultMethod, ctx: FaultContext, target: Any, params: Mapping[str, Any]) -> Any:
    if inspect.iscoroutinefunction(method):
        return await method(ctx, target, dict(params))
    result = await asyncio.to_thread(method, ctx, target, dict(params))
    if inspect.isawaitable(result):
        return await result
    return result


__all__ = ["FAULT_FIELD_MANAGER", "Fault", "FaultContext", "FaultMethod", "NoiseSource", "TEMPORARY_RETRY_SECONDS", "UsersProbe", "call_fault",
           "with_fault_field_manager"]
