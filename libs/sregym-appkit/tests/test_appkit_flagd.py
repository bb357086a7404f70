"""sregym_appkit.flagd: flagd's file format, reloads, and OFREP answers."""

from __future__ import annotations

import json

import pytest

from sregym_appkit.flagd import FlagFile, flag_file, parse


def _doc(**overrides):
    flags = {"newCheckout": {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "off"},
             "discount": {"state": "ENABLED", "variants": {"none": 0.0, "half": 0.5}, "defaultVariant": "none",
                          "targeting": {"if": [True, "half", "none"]}},
             "legacy": {"state": "DISABLED", "variants": {"on": True}, "defaultVariant": "on"}}
    for key, fields in overrides.items():
        flags[key].update(fields)
    return json.dumps({"flags": flags})


@pytest.mark.parametrize("raw, where", [
    ("{}", r"\$.flags: must be an object"),
    ("{", "not JSON"),
    ('{"flags": {"x": 1}}', r"\$.flags.x: must be an object"),
    ('{"flags": {"x": {"state": "ON", "variants": {"a": 1}, "defaultVariant": "a"}}}', r"\$.flags.x.state"),
    ('{"flags": {"x": {"state": "ENABLED", "variants": {}, "defaultVariant": "a"}}}', r"\$.flags.x.variants"),
    ('{"flags": {"x": {"state": "ENABLED", "variants": {"a": 1}, "defaultVariant": "b"}}}',
     r"\$.flags.x.defaultVariant: 'b' is not one of \['a'\]"),
])
def test_a_bad_flag_file_is_refused_with_its_json_path(raw, where):
    with pytest.raises(ValueError, match=where):
        parse(raw)


def test_evaluation_follows_the_file_and_a_broken_edit_keeps_the_last_good_flags(tmp_path, capsys):
    path = tmp_path / "flags.json"
    path.write_text(_doc())
    store = FlagFile(str(path))
    assert store.reload() and not store.reload()  # unchanged bytes: nothing to do
    assert store.evaluate("newCheckout") == (200, {"key": "newCheckout", "value": False, "variant": "off",
                                                   "reason": "STATIC", "metadata": {}})
    assert store.evaluate("discount")[1]["reason"] == "DEFAULT"  # targeting is not evaluated
    assert store.evaluate("legacy") == (404, {"key": "legacy", "errorCode": "FLAG_NOT_FOUND",
                                              "errorDetails": "flag 'legacy' is disabled"})
    assert store.evaluate("nope")[1]["errorDetails"] == "flag 'nope' is not defined"
    assert [f["key"] for f in store.evaluate_all()["flags"]] == ["newCheckout", "discount"]

    path.write_text(_doc(newCheckout={"defaultVariant": "on"}, legacy={"state": "ENABLED"}))
    assert store.reload()
    assert store.evaluate("newCheckout")[1]["value"] is True
    assert store.evaluate("legacy")[0] == 200
    reloaded = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"flags_reloaded"' in line]
    assert reloaded[-1]["changed"] == {"newCheckout": "on", "legacy": "on"}

    path.write_text("{broken")
    assert not store.reload() and not store.reload()
    errors = [line for line in capsys.readouterr().out.splitlines() if '"flags_invalid"' in line]
    assert len(errors) == 1  # logged once, not every second
    assert store.evaluate("newCheckout")[1]["value"] is True


def test_an_unreadable_file_before_the_first_load_is_logged_and_serves_nothing(tmp_path, capsys):
    store = FlagFile(str(tmp_path / "missing.json"))
    assert not store.reload()
    assert '"flags_unreadable"' in capsys.readouterr().out
    assert store.evaluate("newCheckout")[0] == 404 and not store.loaded


def test_a_shipped_flag_file_keeps_its_order_and_serves_every_flag_off(tmp_path):
    raw = flag_file([("zeta", "last by name, first here", {"on": True, "off": False}),
                     ("alpha", "a rate", {"off": 0, "on": 50})])
    assert raw.endswith("}\n") and raw.startswith('{\n  "$schema": "https://flagd.dev/schema/v0/flags.json"')
    assert list(parse(raw)) == ["zeta", "alpha"]
    assert json.loads(raw)["flags"]["zeta"]["description"] == "last by name, first here"
    path = tmp_path / "flags.json"
    path.write_text(raw)
    store = FlagFile(str(path))
    assert store.reload()
    assert [(f["key"], f["variant"], f["value"]) for f in store.evaluate_all()["flags"]] == [
        ("zeta", "off", False), ("alpha", "off", 0)]
