"""The ingress faults, live on Hotel Reservation behind the cluster's ingress-nginx (matrix: --matrix).

Per fault, the live contract (inject → symptom → is_present → reference fix → gone → recovered), the
symptom seen as the agent's tools and the users see it: ``kubectl get ingress`` / ``describe``, the
ingress controller's log (``kubectl logs -n ingress-nginx``), and an HTTPS request to the app's public
name through the controller's Service that verifies the certificate against the app's CA.
"""

from __future__ import annotations

import base64
import json
import ssl

import pytest

import sregym_fault_cluster.plugin
from sregym_core.testing.live import LiveCase as Case
from sregym_core.testing.live import LiveFaultContract, load_request_for

pytestmark = pytest.mark.matrix
HOST = "hotel-reservation.sregym.test"
INGRESS = ["ingress", "frontend", "-n", "hotel-reservation"]


def _https(live, path: str = "/hotels?inDate=2015-04-09&outDate=2015-04-10&lat=37.7867&lon=-122.4112") -> str:
    """A user's request to the public name through the controller's Service: 'status N' or the TLS error."""
    ip = live.get_json("service", "ingress-nginx-controller", "-n", "ingress-nginx")["spec"]["clusterIP"]
    ca = base64.b64decode(live.get_json("secret", "ingress-ca", "-n", "hotel-workload")["data"]["tls.crt"]).decode()
    context = ssl.create_default_context(cadata=ca)
    import http.client

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
    except OSError as exc:
        return f"error: {exc}"
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
    if answer == "status 502" and backend["service"]["name"] != "frontend" and backend["service"]["name"] in described:
        return f"users: {answer}; the Ingress routes / to {backend['service']['name']}"
    return None


def unserved(live) -> str | None:
    row = live.kubectl("get", *INGRESS, "--no-headers").split()
    answer = _https(live)
    # NAME CLASS HOSTS ADDRESS PORTS AGE: no ADDRESS once the controller dropped it
    if len(row) == 5 and answer.startswith("TLS:"):
        return f"no ADDRESS on the Ingress (class {row[1]}); users: {answer}"
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

