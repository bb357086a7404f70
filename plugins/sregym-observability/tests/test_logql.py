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


def test_metric_queries_parse() -> None:
    from sregym_observability.logql import MetricQuery, parse_query

    plain = parse_query('{app="geo"} |= "error"')
    assert not isinstance(plain, MetricQuery)
    query = parse_query('sum by (app) (count_over_time({namespace="hotel"} |~ "err[a-z]+" [5m]))')
    assert isinstance(query, MetricQuery)
    assert (query.function, query.range_s, query.aggregation, query.grouping) == ("count_over_time", 300, "sum", ("app",))
    assert query.log.filters[0].pattern == "err[a-z]+"
    suffix = parse_query('max(rate({app="geo"}[30s])) without (pod)')
    assert (suffix.aggregation, suffix.grouping, suffix.without, suffix.function) == ("max", ("pod",), True, "rate")
    assert suffix.series_labels({"app": "geo", "pod": "p"}) == {"app": "geo"}
    for bad, fragment in [("topk(3, rate({a=\"b\"}[1m]))", "expecting a log query"),
                          ("absent_over_time({a=\"b\"}[1m])", "unsupported function"),
                          ("rate({a=\"b\"}[soon])", "invalid range"),
                          ("rate({a=}[1m])", "parse error")]:
        with pytest.raises(LogQLError, match=fragment):
            parse_query(bad)


def test_metric_evaluation_counts_rates_and_groups() -> None:
    from sregym_observability.logql import parse_query
    from sregym_observability.logstore import LogStore, evaluate_metric

    s = 1_000_000_000
    store = LogStore()
    store.append({"app": "geo", "pod": "geo-1"}, [(1 * s, "error a"), (2 * s, "ok"), (3 * s, "error b")])
    store.append({"app": "geo", "pod": "geo-2"}, [(3 * s, "error c")])
    store.append({"app": "rate", "pod": "rate-1"}, [(2 * s, "error d")])
    counts = evaluate_metric(store, parse_query('sum by (app) (count_over_time({app=~".+"} |= "error" [10s]))'),
                             [3 * s, 12 * s])
    assert sorted((labels["app"], points) for labels, points in counts) == [
        ("geo", [(3 * s, 3.0), (12 * s, 2.0)]), ("rate", [(3 * s, 1.0), (12 * s, 0.0)])]
    [(labels, points)] = evaluate_metric(store, parse_query('rate({pod="geo-1"} |= "error" [2s])'), [3 * s])
    assert labels == {"app": "geo", "pod": "geo-1"} and points == [(3 * s, 0.5)]
    per_pod = evaluate_metric(store, parse_query('count(count_over_time({app="geo"}[10s]))'), [3 * s])
    assert per_pod == [({}, [(3 * s, 2.0)])]
    size = evaluate_metric(store, parse_query('bytes_over_time({pod="rate-1"}[5s])'), [3 * s])
    assert size[0][1] == [(3 * s, 7.0)]
