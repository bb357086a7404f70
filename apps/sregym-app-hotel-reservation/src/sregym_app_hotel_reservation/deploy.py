"""Deploy Hotel Reservation onto any cluster with the real ``kubectl``, and wait until it works
(every pod Ready, then the workload generator succeeding; see sregym_appkit.deploy)."""

from __future__ import annotations

from sregym_appkit.deploy import AppDeployment, DeployFailed, Kubectl

from .manifests import render_yaml

__all__ = ["DEPLOYMENT", "DeployFailed", "Kubectl", "deploy", "deploy_app", "undeploy", "workload_stats"]

NAMESPACES = ("hotel-reservation", "hotel-workload")
DEPLOYMENT = AppDeployment(name="hotel-reservation", namespaces=NAMESPACES,
                           workload=("hotel-workload", "workload-generator", 8089), render=render_yaml,
                           log_hint="kubectl logs deploy/frontend -n hotel-reservation")
deploy, undeploy, deploy_app = DEPLOYMENT.deploy, DEPLOYMENT.undeploy, DEPLOYMENT.deploy_app
workload_stats = DEPLOYMENT.workload_stats  # (kubectl, window=10): the generator's /stats, None when unreachable
