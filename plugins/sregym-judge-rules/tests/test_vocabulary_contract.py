"""A plugin's ``vocabulary=`` extends what the judge accepts, never narrows it, and the fault contract
kit proves it offline: the fault's reference diagnosis and a plain-English paraphrase both pass."""

from __future__ import annotations

import sys
import types

import pytest

from sregym_core import hookimpl
from sregym_core.faultkit import function_fault
from sregym_core.testing.contracts import FaultContract, contract_app, reference_diagnosis
from sregym_core.types import Target


def _noop(ctx, target, params):
    ctx.state["present"] = not ctx.state.get("present", False)


def _present(ctx, target, params):
    return bool(ctx.state.get("present"))


def _quux_fault(vocabulary: tuple[str, ...]):
    # a fault no table of the judge knows: only its own words say what it does
    return function_fault(
        name="quux-poison", summary="poisons the quux cache of a workload", inject=_noop, recover=_noop,
        is_present=_present, resource_kind="Deployment", mechanism="quux cache poisoned with stale coordinates",
        layer="app", symptoms=("wrong hotels returned",), keywords=("quux poisoning",), vocabulary=vocabulary,
    )


def _plugin(vocabulary: tuple[str, ...]) -> types.ModuleType:
    module = types.ModuleType(f"quux_plugin_{len(vocabulary)}")
    module.sregym_faults = hookimpl(lambda: [_quux_fault(vocabulary)])
    sys.modules[module.__name__] = module
    return module


PARAPHRASE = "{component} keeps handing out stale locations from its quux store, which someone poisoned, so search fails."


class TestNarrowVocabularyStillPasses(FaultContract):
    """A plugin that passes two phrases of its own (as ``function_fault``'s docstring suggests)."""

    plugin = _plugin(("quux store + poisoned", "poisoned quux", "quux .. poisoned"))
    paraphrases = {"quux-poison": PARAPHRASE}
    live_only = {"quux-poison": "a stand-in for the judge's vocabulary: it changes only its own state, no object"}


def test_the_contract_fails_a_paraphrase_the_judge_cannot_read():
    contract = type("Unreadable", (FaultContract,), {"paraphrases": {"quux-poison": "{component} is sad, so search fails."}})()
    with pytest.raises(AssertionError, match="fails its paraphrase"):
        contract.test_offline_judge_passes_the_reference_and_a_paraphrase(_quux_fault(("poisoned quux",)))


def test_the_contract_fails_a_reference_the_judge_cannot_read():
    # keywords but no phrase of the mechanism's own: the reference diagnosis reads as no mechanism
    fault = function_fault(
        name="quux-poison", summary="poisons the quux cache", inject=_noop, recover=_noop, is_present=_present,
        resource_kind="Deployment", mechanism="stale coordinates", layer="app", keywords=("quux poisoning",))
    with pytest.raises(AssertionError, match="fails its reference diagnosis"):
        FaultContract().test_offline_judge_passes_the_reference_and_a_paraphrase(fault)


@pytest.mark.parametrize("vocabulary", [(), ("poisoned quux",), ("quux store + poisoned",)])
def test_vocabulary_only_adds_what_passes(vocabulary):
    from sregym_judge_rules import RulesJudge

    app = contract_app()
    target = Target(app=app, component=app.component("geo"), namespace=app.namespace)
    truth = _quux_fault(vocabulary).impl.ground_truth(None, target, {})

    def passes(text: str) -> bool:
        return RulesJudge().judge(text, (truth,), app_components=tuple(c.name for c in app.components),
                                  app_namespace=app.namespace).passed

    assert passes(reference_diagnosis(truth))
    assert passes("geo suffers from quux poisoning, so search fails with errors.")  # the fault's keyword
    assert not passes("geo is misbehaving, so search fails with errors.")
