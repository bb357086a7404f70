"""The LogQL subset agents use: a stream selector, line filters, parsers and label filters.

    {namespace="hotel", app=~"geo.*"} |= "error" != "healthz" |~ "timeout|refused"
    {app="geo"} | json | level="error" | attempts>=3

Errors read like Loki's (``parse error at line 1, col N: ...``) because agents and tools that
know Loki recognise them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping

import attrs

LABEL_OPS = ("=", "!=", "=~", "!~")
FILTER_OPS = ("|=", "!=", "|~", "!~")
_LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class LogQLError(ValueError):
    """A query that is not valid in the supported LogQL subset."""


@attrs.frozen
class LabelMatcher:
    """One ``name op "value"`` term of a stream selector."""

    name: str
    op: str
    value: str
    _regex: re.Pattern[str] | None = attrs.field(default=None, eq=False, repr=False)

    @classmethod
    def build(cls, name: str, op: str, value: str) -> LabelMatcher:
        regex = None
        if op in ("=~", "!~"):
            # Prometheus and Loki anchor label regexes at both ends.
            regex = re.compile(f"(?:{value})\\Z", re.DOTALL)
        return cls(name, op, value, regex)

    def matches(self, labels: Mapping[str, str]) -> bool:
        actual = labels.get(self.name, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        assert self._regex is not None
        found = self._regex.match(actual) is not None
        return found if self.op == "=~" else not found

    def matches_empty(self) -> bool:
        return self.matches({})


@attrs.frozen
class LineFilter:
    """One ``|= "text"`` (contains), ``!=``, ``|~`` (regex search) or ``!~`` step."""

    op: str
    pattern: str
    _regex: re.Pattern[str] | None = attrs.field(default=None, eq=False, repr=False)

    @classmethod
    def build(cls, op: str, pattern: str) -> LineFilter:
        return cls(op, pattern, re.compile(pattern) if op in ("|~", "!~") else None)

    def keep(self, line: str) -> bool:
        if self.op == "|=":
            return self.pattern in line
        if self.op == "!=":
            return self.pattern not in line
        assert self._regex is not None
        found = self._regex.search(line) is not None
        return found if self.op == "|~" else not found


@attrs.frozen
class ParserStage:
    """``| json`` or ``| logfmt``: extract fields of the line as labels for later label filters."""

    kind: str

    def extract(self, line: str) -> dict[str, str]:
        return parse_json_fields(line) if self.kind == "json" else parse_logfmt_fields(line)


NUMERIC_OPS = (">=", "<=", "==", ">", "<")


@attrs.frozen
class LabelFilter:
    """``| level="error"``, ``| status>=500``: a filter on stream or extracted labels."""

    name: str
    op: str
    value: str
    _matcher: LabelMatcher | None = attrs.field(default=None, eq=False, repr=False)
    _number: float | None = attrs.field(default=None, eq=False, repr=False)

    @classmethod
    def build(cls, name: str, op: str, value: str) -> LabelFilter:
        if op in NUMERIC_OPS:
            try:
                number = float(value)
            except ValueError:
                raise LogQLError(f"label filter {name}{op}{value}: {value!r} is not a number") from None
            return cls(name, op, value, None, number)
        return cls(name, op, value, LabelMatcher.build(name, op, value), None)

    def keep(self, labels: Mapping[str, str]) -> bool:
        if self._matcher is not None:
            return self._matcher.matches(labels)
        try:
            actual = float(labels.get(self.name, ""))
        except ValueError:
            return False
        assert self._number is not None
        return {">": actual > self._number, ">=": actual >= self._number, "<": actual < self._number,
                "<=": actual <= self._number, "==": actual == self._number}[self.op]


Stage = LineFilter | ParserStage | LabelFilter


def parse_json_fields(line: str) -> dict[str, str]:
    """Loki's ``| json``: nested keys joined with ``_``; a line that is not a JSON object gets ``__error__``."""
    try:
        data = json.loads(line)
    except ValueError:
        return {"__error__": "JSONParserErr"}
    if not isinstance(data, dict):
        return {"__error__": "JSONParserErr"}
    out: dict[str, str] = {}

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}_{key}" if prefix else str(key), inner)
        elif isinstance(value, list):
            out[_LABEL_SANITIZE.sub("_", prefix)] = json.dumps(value)
        elif value is not None:
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            out[_LABEL_SANITIZE.sub("_", prefix)] = text

    walk("", data)
    return out


_LOGFMT = re.compile(r'([A-Za-z_][\w.-]*)=("(?:[^"\\]|\\.)*"|\S*)')
_LABEL_SANITIZE = re.compile(r"[^A-Za-z0-9_]")


def parse_logfmt_fields(line: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in _LOGFMT.findall(line):
        if value.startswith('"'):
            value = value[1:-1].replace('\\"', '"')
        out[_LABEL_SANITIZE.sub("_", key)] = value
    return out


@attrs.frozen
class LogQuery:
    """A parsed log query: stream matchers plus a pipeline of stages applied in order.

    ``filters`` holds the line filters alone (they are also in ``stages``). Extracted labels are used
    by later label filters only; unlike Loki they do not split the result into new streams.
    """

    matchers: tuple[LabelMatcher, ...]
    filters: tuple[LineFilter, ...] = ()
    stages: tuple[Stage, ...] = ()

    def selects(self, labels: Mapping[str, str]) -> bool:
        return all(m.matches(labels) for m in self.matchers)

    def keep(self, line: str, labels: Mapping[str, str] | None = None) -> bool:
        """Run the pipeline on one line (the reference; :meth:`line_predicate` is the fast path)."""
        current: Mapping[str, str] = labels or {}
        for stage in self.stages or self.filters:
            if isinstance(stage, LineFilter):
                if not stage.keep(line):
                    return False
            elif isinstance(stage, ParserStage):
                current = {**current, **stage.extract(line)}
            elif not stage.keep(current):
                return False
        return True

    def line_predicate(self, stream_labels: Mapping[str, str] | None = None) -> Callable[[str], bool] | None:
        """A fast callable deciding whether a line of a stream with ``stream_labels`` is kept
        (None when every line is)."""
        stages = self.stages or self.filters
        if not stages:
            return None
        if all(isinstance(stage, LineFilter) for stage in stages):
            checks = [_line_check(stage) for stage in stages]  # type: ignore[arg-type]
            if len(checks) == 1:
                return checks[0]
            return lambda line: all(check(line) for check in checks)
        base = dict(stream_labels or {})
        return lambda line: self.keep(line, base)


def _line_check(f: LineFilter) -> Callable[[str], bool]:
    pattern = f.pattern
    if f.op == "|=":
        return lambda line: pattern in line
    if f.op == "!=":
        return lambda line: pattern not in line
    assert f._regex is not None
    search = f._regex.search
    if f.op == "|~":
        return lambda line: search(line) is not None
    return lambda line: search(line) is None


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, why: str) -> LogQLError:
        return LogQLError(f"parse error at line 1, col {self.pos + 1}: {why}")

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def at_end(self) -> bool:
        self.skip_space()
        return self.pos >= len(self.text)

    def peek_op(self, ops: tuple[str, ...]) -> str | None:
        self.skip_space()
        # Longest first so "=~" wins over "=".
        for op in sorted(ops, key=len, reverse=True):
            if self.text.startswith(op, self.pos):
                return op
        return None

    def expect(self, token: str, context: str) -> None:
        self.skip_space()
        if not self.text.startswith(token, self.pos):
            raise self.fail(f"syntax error: unexpected {self._describe_next()}, expecting {token} {context}")
        self.pos += len(token)

    def name(self) -> str:
        self.skip_space()
        found = _LABEL_NAME.match(self.text, self.pos)
        if not found:
            raise self.fail(f"syntax error: unexpected {self._describe_next()}, expecting IDENTIFIER")
        self.pos = found.end()
        return found.group()

    def string(self) -> str:
        self.skip_space()
        if self.pos >= len(self.text):
            raise self.fail("syntax error: unexpected end of input, expecting STRING")
        quote = self.text[self.pos]
        if quote == "`":
            end = self.text.find("`", self.pos + 1)
            if end < 0:
                raise self.fail("literal not terminated")
            value = self.text[self.pos + 1 : end]
            self.pos = end + 1
            return value
        if quote != '"':
            raise self.fail(f"syntax error: unexpected {self._describe_next()}, expecting STRING")
        out: list[str] = []
        i = self.pos + 1
        escapes = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
        while i < len(self.text):
            ch = self.text[i]
            if ch == "\\" and i + 1 < len(self.text):
                nxt = self.text[i + 1]
                # Unknown escapes keep their backslash, so regexes like "\d" survive as in Go.
                out.append(escapes.get(nxt, "\\" + nxt))
                i += 2
                continue
            if ch == '"':
                self.pos = i + 1
                return "".join(out)
            out.append(ch)
            i += 1
        raise self.fail("literal not terminated")

    def _describe_next(self) -> str:
        if self.pos >= len(self.text):
            return "end of input"
        return repr(self.text[self.pos : self.pos + 12])


def parse_logql(text: str) -> LogQuery:
    """Parse ``text`` into a :class:`LogQuery`; raise :class:`LogQLError` with Loki-style wording."""
    scanner = _Scanner(text)
    if scanner.at_end():
        raise LogQLError("parse error : syntax error: unexpected end of input, expecting {")
    scanner.expect("{", "to start a stream selector")
    matchers: list[LabelMatcher] = []
    while True:
        scanner.skip_space()
        if scanner.text.startswith("}", scanner.pos):
            scanner.pos += 1
            break
        if matchers:
            scanner.expect(",", "between label matchers")
        name = scanner.name()
        op = scanner.peek_op(LABEL_OPS)
        if op is None:
            raise scanner.fail(f"syntax error: unexpected {scanner._describe_next()}, expecting = or != or =~ or !~")
        scanner.pos += len(op)
        value = scanner.string()
        try:
            matchers.append(LabelMatcher.build(name, op, value))
        except re.error as err:
            raise LogQLError(f"error parsing regexp: {err} in label matcher {name}{op}{value!r}") from None
    if not matchers:
        raise LogQLError("parse error : queries require at least one regexp or equality matcher that does not "
                         "have an empty-compatible value. For instance, app=~\".*\" does not meet this "
                         "requirement, but app=~\".+\" will")
    if all(m.matches_empty() for m in matchers):
        raise LogQLError("parse error : queries require at least one regexp or equality matcher that does not "
                         "have an empty-compatible value. For instance, app=~\".*\" does not meet this "
                         "requirement, but app=~\".+\" will")
    stages: list[Stage] = []
    while not scanner.at_end():
        op = scanner.peek_op(FILTER_OPS)
        if op is not None:
            scanner.pos += len(op)
            pattern = scanner.string()
            try:
                stages.append(LineFilter.build(op, pattern))
            except re.error as err:
                raise LogQLError(f"error parsing regexp: {err} in line filter {op} {pattern!r}") from None
            continue
        if not scanner.text.startswith("|", scanner.pos):
            raise scanner.fail(f"syntax error: unexpected {scanner._describe_next()}, expecting |= or != or |~ or !~")
        scanner.pos += 1
        stages.append(_pipeline_stage(scanner))
    filters = tuple(stage for stage in stages if isinstance(stage, LineFilter))
    return LogQuery(tuple(matchers), filters, tuple(stages))


def _pipeline_stage(scanner: _Scanner) -> Stage:
    scanner.skip_space()
    start = scanner.pos
    found = _LABEL_NAME.match(scanner.text, scanner.pos)
    if not found:
        raise scanner.fail(f"syntax error: unexpected {scanner._describe_next()}, expecting a pipeline stage")
    name = found.group()
    scanner.pos = found.end()
    if name in ("json", "logfmt"):
        after = scanner.text[scanner.pos:].lstrip()
        if after and not after.startswith("|"):
            raise scanner.fail(f"unsupported pipeline stage: | {name} with parameters")
        return ParserStage(name)
    op = scanner.peek_op(LABEL_OPS + NUMERIC_OPS)
    if op is None:
        scanner.pos = start
        raise scanner.fail(f"unsupported pipeline stage {name!r}: supported are line filters, | json, | logfmt "
                           "and label filters such as | level=\"error\" or | status>=500")
    scanner.pos += len(op)
    scanner.skip_space()
    if op in NUMERIC_OPS:
        number = re.match(r"-?\d+(?:\.\d+)?", scanner.text[scanner.pos:])
        if not number:
            raise scanner.fail(f"syntax error: expecting a number after {name}{op}")
        scanner.pos += number.end()
        return LabelFilter.build(name, op, number.group())
    value = scanner.string()
    try:
        return LabelFilter.build(name, op, value)
    except re.error as err:
        raise LogQLError(f"error parsing regexp: {err} in label filter {name}{op}{value!r}") from None


# -- metric queries ------------------------------------------------------------------------------

RANGE_FUNCTIONS = ("count_over_time", "rate", "bytes_over_time", "bytes_rate")
AGGREGATIONS = ("sum", "count", "max", "min", "avg")
_AGGREGATION = re.compile(
    r"^(sum|count|max|min|avg)\s*(?:(by|without)\s*\(([^)]*)\))?\s*\((.*?)\)\s*(?:(by|without)\s*\(([^)]*)\))?$",
    re.DOTALL)
_RANGE_FUNCTION = re.compile(r"^(\w+)\s*\((.*)\[([^\]]+)\]\s*\)$", re.DOTALL)


@attrs.frozen
class MetricQuery:
    """``[agg [by|without (labels)]] (fn(<log query> [range]))`` over log lines.

    ``fn`` is count_over_time, rate (lines per second), bytes_over_time or bytes_rate.
    """

    function: str
    log: LogQuery
    range_s: float
    aggregation: str | None = None
    grouping: tuple[str, ...] = ()
    without: bool = False

    def series_labels(self, labels: Mapping[str, str]) -> dict[str, str]:
        if self.aggregation is None:
            return dict(labels)
        if self.without:
            return {k: v for k, v in labels.items() if k not in self.grouping}
        return {k: labels[k] for k in self.grouping if k in labels}


def parse_query(text: str) -> LogQuery | MetricQuery:
    """A log query (``{...} | ...``) or a metric query over one."""
    stripped = text.strip()
    if not stripped or stripped.startswith("{"):
        return parse_logql(text)
    from .timeparse import parse_duration

    grouping: tuple[str, ...] = ()
    aggregation, without = None, False
    found = _AGGREGATION.match(stripped)
    if found:
        aggregation = found.group(1)
        mode, names = (found.group(2), found.group(3)) if found.group(2) else (found.group(5), found.group(6))
        if mode:
            grouping = tuple(n.strip() for n in names.split(",") if n.strip())
            without = mode == "without"
        stripped = found.group(4).strip()
    inner = _RANGE_FUNCTION.match(stripped)
    if not inner:
        raise LogQLError("parse error : syntax error: expecting a log query {...} or a metric query such as "
                         'sum by (app) (count_over_time({namespace="x"} |= "error" [5m]))')
    function, log_text, range_text = inner.groups()
    if function not in RANGE_FUNCTIONS:
        raise LogQLError(f"parse error : unsupported function {function!r}; supported: {', '.join(RANGE_FUNCTIONS)}"
                         f" (optionally inside {', '.join(AGGREGATIONS)})")
    try:
        range_s = parse_duration(range_text)
    except ValueError as err:
        raise LogQLError(f"parse error : invalid range [{range_text}]: {err}") from None
    if range_s <= 0:
        raise LogQLError("parse error : the range of a metric query must be positive")
    return MetricQuery(function, parse_logql(log_text), range_s, aggregation, grouping, without)
