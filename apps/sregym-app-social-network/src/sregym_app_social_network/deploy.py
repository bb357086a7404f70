"""Deploy Social Network onto any cluster with the real ``kubectl``, and wait until it works
(every pod Ready, then the workload generator succeeding; see sregym_appkit.deploy).

A redeploy keeps the workload generator's post-signing key, so posts signed before stay verifiable.
"""

from __future__ import annotations

import base64
from typing import Any

from sregym_appkit.deploy import AppDeployment, DeployFailed, Kubectl

from .manifests import render_yaml

__all__ = ["DEPLOYMENT", "DeployFailed", "Kubectl", "deploy", "deploy_app", "existing_workload_secret", "undeploy",
           "workload_stats"]

NAMESPACES = ("social-network", "social-network-workload")


def existing_workload_secret(kubectl: Kubectl) -> str | None:
    """The workload generator's post-signing key if the app is already deployed, else None."""
    raw = kubectl.run("get", "secret", "workload-signing-key", "-n", NAMESPACES[1], "-o", "jsonpath={.data.key}",
                      check=False, timeout=15).strip()
    try:
        return base64.b64decode(raw).decode() if raw else None
    except ValueError:
        return None


def _keep_signing_key(kubectl: Kubectl, params: dict[str, Any]) -> dict[str, Any]:
    if not params.get("workload_secret"):
        # keep the signing key of a deployment already there: posts signed with it stay verifiable
        params["workload_secret"] = existing_workload_secret(kubectl) or ""
    return params


DEPLOYMENT = AppDeployment(name="social-network", namespaces=NAMESPACES,
                           workload=("social-network-workload", "workload-generator", 8089), render=render_yaml,
                           prepare=_keep_signing_key,
                           log_hint="kubectl logs deploy/nginx-thrift -c thrift-gateway -n social-network")
deploy, undeploy, deploy_app = DEPLOYMENT.deploy, DEPLOYMENT.undeploy, DEPLOYMENT.deploy_app
workload_stats = DEPLOYMENT.workload_stats  # (kubectl, window=10): the generator's /stats, None when unreachable
