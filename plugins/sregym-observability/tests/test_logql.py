from __future__ import annotations

import pytest
from sregym_observability.logql import LogQLError, parse_logql


def test_selector_and_chained_filters() -> None:
    query = parse_logql('{namespace="hotel", app=~"geo.*", pod!="x", container!~"side.*"} '
                        '|= "error" != "healthz" |~ "time(out)?" !~ `debug\\d`')
    assert [(m.name, m.op, m.value) for m in query.matchers] == [
        ("namespace", "=", "hotel"), ("app", "=~", "geo.*"), ("pod", "!=", "x"), ("container", "!~", "side.*")]
    assert [(f.op, f.pattern) for f in query.filters] == [
        ("|=", "error"), ("!=", "healthz"), ("|~", "time(out)?"), ("!~", "debug\\d")]
    labels = {"namespace": "hotel", "app": "geo", "pod": "geo-1", "container": "geo"}
    assert query.selects(labels)
    assert not query.selects({**labels, "container": "sidecar"})
    assert not query.selects({**labels, "app": "xgeo"})  # regexes are anchored
    assert query.keep("rpc error: timeout")
    assert not query.keep("rpc error: timeout /healthz")
    assert not query.keep("error tim debug7")
    assert not query.keep("all fine")


def test_escapes_in_double_quoted_strings() -> None:
    query = parse_logql('{app="a"} |= "say \\"hi\\"" |~ "\\d+ ms"')
    assert query.filters[0].pattern == 'say "hi"'
    assert query.keep('say "hi" after 12 ms')
    assert not query.keep('say "hi" after x ms')


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "unexpected end of input"),
        ("namespace=\"x\"", "expecting {"),
        ("{namespace=\"x\"", "expecting , between label matchers"),
        ("{namespace=x}", "expecting STRING"),
        ("{namespace~\"x\"}", "expecting = or != or =~ or !~"),
        ("{}", "at least one regexp or equality matcher"),
        ("{app=~\".*\"}", "empty-compatible value"),
        ("{app=~\"(\"}", "error parsing regexp"),
        ("{app=\"a\"} |= ", "expecting STRING"),
        ("{app=\"a\"} | line_format \"{{.msg}}\"", "unsupported pipeline stage"),
        ("{app=\"a\"} | json foo=\"bar\"", "unsupported pipeline stage"),
        ("{app=\"a\"} | json | status>=abc", "expecting a number"),
        ("{app=\"a\"} | ", "expecting a pipeline stage"),
        ("{app=\"a\"} foo", "expecting |= or != or |~ or !~"),
        ("{app=\"a\"} |~ \"[\"", "error parsing regexp"),
        ("{app=\"a} ", "literal not terminated"),
    ],
)
def test_malformed_queries_are_explained(text: str, fragment: str) -> None:
    with pytest.raises(LogQLError) as caught:
        parse_logql(text)
    assert fragment in str(caught.value)
    assert "parse error" in str(caught.value) or "regexp" in str(caught.value)


@pytest.mark.parametrize("text", [
    '{a="b"}', '{a="b"} |= "err"', '{a="b"} != "err"', '{a="b"} |~ "e.r"', '{a="b"} !~ "^x"',
    '{a="b"} |= "err" != "health" |~ "[0-9]+ms"', '{a="b"} | json | level="error"', '{a="b"} | logfmt | ms>4',
])
def test_fast_line_predicate_agrees_with_keep(text: str) -> None:
    query = parse_logql(text)
    predicate = query.line_predicate()
    for line in ["error 12ms", "err health 5ms", "x error", "eXr", "", "fine", "error healthz 3ms"]:
        assert (predicate is None or predicate(line)) == query.keep(line), line


def test_json_and_logfmt_parsers_with_label_filters() -> None:
    query = parse_logql('{app="geo"} |= "db" | json | level="error" | attempts>=3 | error_kind!~"perm.*"')
    assert [type(stage).__name__ for stage in query.stages] == [
        "LineFilter", "ParserStage", "LabelFilter", "LabelFilter", "LabelFilter"]
    assert query.keep('{"level":"error","event":"db_failed","attempts":3,"error":{"kind":"timeout"}}')
    assert not query.keep('{"level":"error","event":"db_failed","attempts":3,"error":{"kind":"permission"}}')
    assert not query.keep('{"level":"error","event":"db_failed","attempts":2}')
    assert not query.keep('{"level":"info","event":"db_ok","attempts":9}')
    assert not query.keep("db plain text line")  # JSONParserErr: label filters see no fields
    stream_label = parse_logql('{app="geo"} | json | app="geo" | level="warn"')
    assert stream_label.keep('{"level":"warn"}', {"app": "geo"})
    logfmt = parse_logql('{app="geo"} | logfmt | msg=~"time.*" | status>500')
    assert logfmt.keep('level=info msg="timeout reached" status=503')
    assert not logfmt.keep('level=info msg="timeout reached" status=200')
    assert not logfmt.keep("msg=ok status=503")
