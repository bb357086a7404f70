"""The parts of an app's :class:`~sregym_core.types.AppSpec` every app fills in the same way.

An app's ``app.py`` says what is its own (description, components, knobs) and takes the conventions
from here: its problems live in the package's ``problems/`` folder, its image is one Python entry
point whose first argument names the service (:func:`service_images`), its workload generator
answers ``/stats`` and ``/control`` from a hidden namespace (:func:`workload_spec`), datastores are
described alike (:func:`postgres_component`, :func:`memcached_component`), and a deploy that only
applies its manifests issues the Ingress certificates after (:func:`apply_manifests`): the runner
waits for Ready, not the deploy.

Host side only: it builds sregym_core records (needs sregym-core, as :mod:`sregym_appkit.deploy`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from importlib import import_module, resources
from pathlib import Path
from typing import Any

try:
    from sregym_core.errors import DeployError, PluginError
    from sregym_core.types import AppSpec, ComponentSpec, LocalImage, WorkloadSpec
except ImportError as exc:  # re-raised with the fix: this module runs on the host, not in an image
    raise ImportError("sregym_appkit.appspec runs on the host and needs sregym-core: "
                      "pip install 'sregym-appkit[deploy]'", name=exc.name) from exc

#: the tags this project publishes of an app image: the release the manifests use and its aliases.
#: Any other tag is an image that does not exist (a pod asking for it goes to ErrImagePull).
STABLE_TAGS = ("1.0", "1.0.0", "latest")
#: the hint every failed ``kubectl apply`` carries
APPLY_HINT = "check the kubeconfig and that the cluster is up"


def problems_dir(package: str) -> Path:
    """The ``problems`` folder of the app's package (``__package__``): its curated problem files."""
    return Path(str(resources.files(package) / "problems"))


def description(package: str) -> str:
    """What agents are told about the app (``/get_app``'s ``descriptions``): the paragraph in the
    package's ``description.md``, its lines joined. What the app is and does, as upstream's are; no
    ports, knobs or metric names (those are for the agent to find)."""
    text = (resources.files(package) / "description.md").read_text()
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def knobs(*candidates: tuple[str, bool]) -> tuple[str, ...]:
    """A component's knobs (ComponentSpec.knobs: what app-specific faults can really turn on it):
    the names of the ``(knob, applies)`` pairs that apply, in order."""
    return tuple(name for name, applies in candidates if applies)


def app_record(app_module: str, *, summary: str, workload: WorkloadSpec, params: Mapping[str, Any], deploy: Any,
               deploy_timeout: float) -> AppSpec:
    """The AppSpec of the app whose ``app`` module is ``app_module`` (its ``__name__``), filled in by
    convention: that module defines ``NAME``, ``NAMESPACE`` and ``DISPLAY_NAME``, ``components()`` and
    ``local_images()``; what agents are told is the package's ``description.md`` (:func:`description`),
    the manifests are the YAML files in its ``manifests/``, the problems those in its ``problems/``,
    and the workload generator's namespace is hidden from agents."""
    from .manifests import manifest_files

    app = import_module(app_module)
    package = app.__package__
    if not package:
        raise PluginError(f"{app_module} is not a module of a package (its manifests/ and problems/ live beside it)")
    return AppSpec(name=app.NAME, summary=summary, namespace=app.NAMESPACE, description=description(package),
                   display_name=app.DISPLAY_NAME, manifests=manifest_files(package), components=app.components(),
                   workload=workload, images=app.local_images(), hidden_namespaces=(workload.namespace,),
                   problems_dir=problems_dir(package), params=dict(params), deploy=deploy,
                   deploy_timeout=deploy_timeout, render=_renderer(app))


def _renderer(app: Any) -> Any:
    """The app module's ``render_yaml`` (the objects its deploy applies, rendered offline), when it has one: apps
    import it into their ``app`` module for this."""
    render = getattr(app, "render_yaml", None)
    return render if callable(render) else None


def service_images(image_repo: str, package: str, default_service: str, summary: str, *,
                   tags: tuple[str, ...] = STABLE_TAGS, env: Mapping[str, str] | None = None) -> tuple[LocalImage, ...]:
    """How the embedded cluster runs the app's one image: ``python -m <package>.serve <service>``
    (a container's ``args`` name the service; ``default_service`` when they name none)."""
    entry = (sys.executable, "-m", f"{package}.serve")
    image_env = dict(env or {"PYTHONUNBUFFERED": "1"})
    search_entry = pythonpath_entry(package)
    if search_entry and "PYTHONPATH" not in image_env:
        image_env["PYTHONPATH"] = search_entry
    return tuple(LocalImage(image=f"{image_repo}:{tag}", argv=entry, cmd=(default_service,),
                            env=image_env, summary=summary) for tag in tags)


def pythonpath_entry(package: str) -> str | None:
    """The ``PYTHONPATH`` entry this process imports ``package`` from, or None when the interpreter
    finds it by itself (installed into the environment, or editable). An app installed with
    ``pip install --target DIR`` and found through ``PYTHONPATH=DIR`` (as an app built outside the
    repository is in its tests) runs in the image's processes only if they search DIR too: a pod's
    environment is its image's and its own, never the host's."""
    entries = [e for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e]
    locations = list(getattr(import_module(package), "__path__", ())) if entries else []
    if not locations:
        return None
    found_in = Path(locations[0]).resolve().parent
    return next((str(found_in) for e in entries if Path(e).resolve() == found_in), None)


def workload_spec(namespace: str, service: str, *, port: int = 8089, max_request_s: float | None = None) -> WorkloadSpec:
    """The workload generator (Deployment and Service of one name) and its ``/stats`` + ``/control`` API.

    ``max_request_s``: how long one recorded request may take at the most (the generator's deadline
    plus scheduling), when the app's requests can outlast the runner's default."""
    extra: dict[str, Any] = {} if max_request_s is None else {"max_request_s": max_request_s}
    return WorkloadSpec(name=service, namespace=namespace, service=service, port=port, query_path="/stats",
                        control_path="/control", **extra)


def component(name: str, roles: tuple[str, ...], ports: tuple[int, ...], **fields: Any) -> ComponentSpec:
    """A component whose Service and ``app.kubernetes.io/name`` label carry its name (a Deployment
    unless ``kind`` says otherwise; its container is named as it unless ``container`` says otherwise)."""
    fields = {"kind": "Deployment", "container": name, "service": name,
              "labels": {"app.kubernetes.io/name": name}, **fields}
    return ComponentSpec(name=name, roles=roles, ports=ports, **fields)


def postgres_component(name: str) -> ComponentSpec:
    """A PostgreSQL StatefulSet keeping its data on the PVC ``<name>-data`` (no superuser password in
    its environment need be declared: the curated apps read it from a file, issue #34)."""
    return component(name, ("db:postgres", "stateful"), (5432,), kind="StatefulSet", pvcs=(f"{name}-data",),
                     container="postgres", env=("POSTGRES_USER", "POSTGRES_DB", "PGDATA"))


def memcached_component(name: str) -> ComponentSpec:
    """A memcached Deployment (a cache: nothing on it is the only copy)."""
    return component(name, ("cache:memcached",), (11211,), container="memcached")


def apply_manifests(ctx: Any, manifests: str, ca_namespace: str, *, what: str = "",
                    hints: tuple[str, ...] = ()) -> None:
    """``kubectl apply`` the rendered ``manifests`` (a DeployContext's kubectl and kubeconfig), remove the
    last-applied annotation it leaves (a record of the deployed state would name any fault, issue #34),
    then issue the Ingresses' TLS certificates from the app's CA kept in ``ca_namespace`` (its hidden
    one). Waiting for Ready is the runner's: an AppSpec.deploy only applies."""
    from .deploy import DEPLOY_FIELD_MANAGER, LAST_APPLIED

    changed = _changed_manifests(ctx, manifests)  # on a kept cluster, usually none
    for verb in (("apply", "-f", "-"),
                 ("annotate", "-f", "-", f"{LAST_APPLIED}-", f"--field-manager={DEPLOY_FIELD_MANAGER}")):
        if not changed:
            break
        proc = subprocess.run([ctx.kubectl_path, "--kubeconfig", str(ctx.kubeconfig), *verb],
                              input=changed, capture_output=True, text=True, timeout=ctx.timeout)
        if proc.returncode != 0:
            raise DeployError(f"kubectl {verb[0]}{f' of {what}' if what else ''} failed: "
                              f"{proc.stderr.strip()[-1500:]}", hints=(APPLY_HINT, *hints))
    from .deploy import Kubectl
    from .ingress import ensure_tls

    ensure_tls(Kubectl(ctx.kubeconfig, ctx.kubectl_path), manifests, ca_namespace)


def _changed_manifests(ctx: Any, manifests: str) -> str:
    """The documents of ``manifests`` the live cluster does not already hold as written (sregym_core.unchanged)."""
    from sregym_core.unchanged import GET_LIVE_ARGS, changed_manifests

    from .deploy import Kubectl

    def get_live(text: str) -> str | None:
        try:
            return Kubectl(ctx.kubeconfig, ctx.kubectl_path).run(*GET_LIVE_ARGS, stdin=text, timeout=ctx.timeout)
        except DeployError:  # not read back (or not in time): everything is applied
            return None

    return changed_manifests(manifests, get_live)
