from sregym_core import hookimpl
from sregym_core.types import FaultSpec
from sregym_core.testing import StateFault



@hookimpl
def sregym_faults():
    return [FaultSpec(name="test-success-fault", summary="from the fake distribution", layer="config",
                      impl=StateFault())]
