"""The ingress faults, live on Hotel Reservation behind the cluster's ingress-nginx (matrix: --matrix).

Per fault, the live contract (inject → symptom → is_present → reference fix → gone → recovered), the
symptom seen as the agent's tools and the users see it: ``kubectl get ingress`` / ``describe``, the
ingress controller's log (``kubectl logs -n ingress-nginx``), and an HTTPS request to the app's public
name through the controller's Service that verifies the certificate against the app's CA.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl

import pytest

import sregym_fault_cluster.plugin
from sregym_core.testing.live import LiveCase as Case
from sregym_core.testing.live import LiveFaultContract, load_request_for

pytestmark = pytest.mark.matrix
HOST = "hotel-reservation.sregym.test"
INGRESS = ["ingress", "frontend", "-n", "hotel-reservation"]


def _get(live, *args: str) -> dict:
    """One object as JSON, in any namespace (``live.get_json`` pins the app's)."""
    return json.loads(live.kubectl("get", *args, "-o", "json"))


def _https(live, path: str = "/hotels?inDate=2015-04-09&outDate=2015-04-10&lat=37.7867&lon=-122.4112") -> str:
    """A user's request to the public name through the controller's Service: 'status N' or the TLS error."""
    ip = _get(live, "service", "ingress-nginx-controller", "-n", "ingress-nginx")["spec"]["clusterIP"]
    ca = base64.b64decode(_get(live, "secret", "ingress-ca", "-n", "hotel-workload")["data"]["tls.crt"]).decode()
    context = ssl.create_default_context(cadata=ca)

    class Pinned(http.client.HTTPSConnection):
        def connect(self):  # the public name resolves to the load balancer, as DNS would say
            import socket

            self.sock = self._context.wrap_socket(socket.create_connection((ip, 443), self.timeout),
                                                  server_hostname=HOST)

    conn = Pinned(HOST, 443, context=context, timeout=5)
    try:
        conn.request("GET", path)
        return f"status {conn.getresponse().status}"
    except ssl.SSLCertVerificationError as exc:
        return f"TLS: {exc.verify_message}"
    except (OSError, http.client.HTTPException) as exc:
        return f"error: {type(exc).__name__}: {exc}"
    finally:
        conn.close()


def tls_refused(live) -> str | None:
    answer = _https(live)
    log = live.kubectl("logs", "-n", "ingress-nginx", "deploy/ingress-nginx-controller", "--tail=200")
    if answer == "TLS: certificate has expired" and "SSL handshak" in log:
        return f"users: {answer}; controller log: handshakes closed by the peer"
    return None


def misrouted(live) -> str | None:
    answer = _https(live)
    described = live.kubectl("describe", *INGRESS)
    backend = json.loads(live.kubectl("get", *INGRESS, "-o", "json"))["spec"]["rules"][0]["http"]["paths"][0]["backend"]
    log = live.kubectl("logs", "-n", "ingress-nginx", "deploy/ingress-nginx-controller", "--tail=300")
    # a gRPC backend answers HTTP/1.1 with HTTP/2 frames: nginx relays them as an HTTP/0.9 body
    if answer != "status 200" and backend["service"]["name"] != "frontend" and backend["service"]["name"] in described \
            and "upstream sent no valid HTTP/1.0 header" in log:
        return f"users: {answer}; the Ingress routes / to {backend['service']['name']}; controller: no valid HTTP header"
    return None


def unserved(live) -> str | None:
    ingress = json.loads(live.kubectl("get", *INGRESS, "-o", "json"))
    answer = _https(live)
    # the controller dropped it: no ADDRESS in `kubectl get ingress`
    if not ((ingress.get("status") or {}).get("loadBalancer") or {}).get("ingress") and answer.startswith("TLS:"):
        return f"no ADDRESS on the Ingress (class {ingress['spec'].get('ingressClassName')}); users: {answer}"
    return None


CASES = {"ingress-tls-expired": Case("frontend", tls_refused),
         "ingress-misrouted-path": Case("frontend", misrouted),
         "ingress-class-mismatch": Case("frontend", unserved)}


class TestIngressFaultsLive(LiveFaultContract):
    plugin = sregym_fault_cluster.plugin
    request_for = staticmethod(lambda kind, rng: load_request_for("sregym_app_hotel_reservation.workload.mix")(kind, rng))
    cases = CASES
    not_here = {spec.name: "covered by test_cluster_faults_live.py or test_cluster_faults_matrix.py"
                for spec in sregym_fault_cluster.plugin.sregym_faults() if spec.name not in CASES}



@pytest.mark.slow
def test_the_agent_reads_the_ingress_controller_but_cannot_change_it(deployed_app, tmp_path):
    """The agent identity sees what an SRE on call looks at (IngressClasses, the controller's pods and
    logs) and can change none of it."""
    import subprocess

    from sregym_core.conductor.agent_access import grant_agent_access, revoke_agent_access

    live_app = deployed_app("hotel-reservation")
    ns, account = live_app.app.namespace, "agent-ingresstest"
    kubeconfig = grant_agent_access(live_app.env.kube, [ns], tmp_path / "agent.kubeconfig", account=account)

    def agent(*args):
        done = subprocess.run([str(live_app.env.kubectl), "--kubeconfig", str(kubeconfig), *args],
                              capture_output=True, text=True, timeout=60)
        return done.returncode, done.stdout + done.stderr

    try:
        code, out = agent("get", "ingressclass")
        assert code == 0 and "k8s.io/ingress-nginx" in out, out
        code, out = agent("logs", "-n", "ingress-nginx", "deploy/ingress-nginx-controller", "--tail=50")
        assert code == 0 and ("Backend successfully reloaded" in out or "HTTP/1.1" in out), out
        code, out = agent("describe", "ingress", "frontend", "-n", ns)
        assert code == 0 and "frontend:http" in out and "Sync" in out, out
        for args in (("delete", "pods", "--all", "-n", "ingress-nginx"),
                     ("scale", "deployment/ingress-nginx-controller", "--replicas=0", "-n", "ingress-nginx"),
                     ("patch", "ingressclass", "nginx", "--type=merge", "-p", '{"metadata":{"labels":{"x":"y"}}}'),
                     ("get", "secrets", "-n", "ingress-nginx")):
            code, out = agent(*args)
            assert code != 0 and "forbidden" in out.lower(), (args, out)
    finally:
        revoke_agent_access(live_app.env.kube, [ns], account)
