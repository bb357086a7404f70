"""Builtin oracles, registered exactly like a plugin's: the mitigation-oracle leaves
(``baseline-preserved``, ``fault-invariant``, ``functional-slo``, ``workload-healthy``). Diagnosis
judges are plugins (``judge-rules``, ``judge-llm``).

Combinators (``all``, ``any``, ``sustained``, ``replay``) are syntax of the ``oracle:`` section, not
registered records; see :func:`sregym_core.oracles.mitigation.build_oracle`.
"""

from __future__ import annotations

from sregym_core import hookimpl
from sregym_core.types import OracleSpec

from . import mitigation


@hookimpl
def sregym_oracles() -> list[OracleSpec]:
    # the records the oracle schema is generated from and build_oracle builds the leaves with
    return list(mitigation.BUILTIN_LEAVES)
