from sregym_core import hookimpl
from sregym_core.types import FaultSpec
from sregym_core.testing import StateFault


@hookimpl
def sregym_faults():
    return [FaultSpec(name="test-blocked-fault", summary="must never load when blocked", layer="k8s",
                      impl=StateFault())]
