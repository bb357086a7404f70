from sregym_core import hookimpl
from sregym_core.types import FaultSpec


@hookimpl
def sregym_faults():
    return [FaultSpec(name="test-blocked-fault", summary="must never load when blocked", layer="k8s",
                      inject=print, recover=print, is_present=print)]
