"""The LogQL subset agents use: a stream selector and chained line filters.

    {namespace="hotel", app=~"geo.*"} |= "error" != "healthz" |~ "timeout|refused"

Errors read like Loki's (``parse error at line 1, col N: ...``) because agents and tools that
know Loki recognise them.
"""

from __future__ import annotations

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
class LogQuery:
    """A parsed log query: stream matchers plus line filters applied in order."""

    matchers: tuple[LabelMatcher, ...]
    filters: tuple[LineFilter, ...] = ()

    def selects(self, labels: Mapping[str, str]) -> bool:
        return all(m.matches(labels) for m in self.matchers)

    def keep(self, line: str) -> bool:
        return all(f.keep(line) for f in self.filters)

    def line_predicate(self) -> Callable[[str], bool] | None:
        """A fast callable equivalent to :meth:`keep` (None when there are no filters)."""
        checks: list[Callable[[str], bool]] = []
        for f in self.filters:
            if f.op == "|=":
                checks.append(lambda line, p=f.pattern: p in line)
            elif f.op == "!=":
                checks.append(lambda line, p=f.pattern: p not in line)
            elif f.op == "|~":
                checks.append(lambda line, search=f._regex.search: search(line) is not None)
            else:
                checks.append(lambda line, search=f._regex.search: search(line) is None)
        if not checks:
            return None
        if len(checks) == 1:
            return checks[0]
        return lambda line: all(check(line) for check in checks)


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
    filters: list[LineFilter] = []
    while not scanner.at_end():
        op = scanner.peek_op(FILTER_OPS)
        if op is None:
            if scanner.text.startswith("|", scanner.pos):
                raise scanner.fail("unsupported pipeline stage: only line filters |= != |~ !~ are supported here")
            raise scanner.fail(f"syntax error: unexpected {scanner._describe_next()}, expecting |= or != or |~ or !~")
        scanner.pos += len(op)
        pattern = scanner.string()
        try:
            filters.append(LineFilter.build(op, pattern))
        except re.error as err:
            raise LogQLError(f"error parsing regexp: {err} in line filter {op} {pattern!r}") from None
    return LogQuery(tuple(matchers), tuple(filters))
