from sregym_core import hookimpl
from sregym_core.types import FaultSpec


def _noop(ctx, target, params):
    return None


@hookimpl
def sregym_faults():
    return [FaultSpec(name="test-success-fault", summary="from the fake distribution", layer="config",
                      inject=_noop, recover=_noop, is_present=lambda c, t, p: False)]
