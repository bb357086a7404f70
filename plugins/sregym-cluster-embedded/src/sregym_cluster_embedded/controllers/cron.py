"""A small cron parser: the five standard fields, names, steps, ranges, lists and the @ macros."""

from __future__ import annotations

from datetime import datetime, timedelta

MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
          "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
MONTHS = {m: i + 1 for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
DAYS = {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}
FIELDS = [("minute", 0, 59, {}), ("hour", 0, 23, {}), ("day of month", 1, 31, {}), ("month", 1, 12, MONTHS),
          ("day of week", 0, 6, DAYS)]


class CronError(ValueError):
    pass


class Schedule:
    def __init__(self, minutes: set[int], hours: set[int], days: set[int], months: set[int], weekdays: set[int],
                 day_any: bool, weekday_any: bool, every: timedelta | None = None) -> None:
        self.minutes, self.hours, self.days, self.months, self.weekdays = minutes, hours, days, months, weekdays
        self.day_any, self.weekday_any, self.every = day_any, weekday_any, every

    def matches(self, at: datetime) -> bool:
        if at.minute not in self.minutes or at.hour not in self.hours or at.month not in self.months:
            return False
        dom = at.day in self.days
        dow = (at.isoweekday() % 7) in self.weekdays
        if self.day_any or self.weekday_any:  # cron: either field restricted alone, or both must be "*"
            return dom and dow
        return dom or dow

    def next_after(self, after: datetime) -> datetime:
        """The first matching minute strictly after `after` (searches up to ~5 years)."""
        if self.every is not None:
            return after + self.every
        at = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
        for _ in range(60 * 24 * 366 * 5):
            if at.month not in self.months:
                month = at.month + 1
                at = at.replace(year=at.year + (month > 12), month=(month - 1) % 12 + 1, day=1, hour=0, minute=0)
                continue
            if not self._day_ok(at):
                at = (at + timedelta(days=1)).replace(hour=0, minute=0)
                continue
            if at.hour not in self.hours:
                at = (at + timedelta(hours=1)).replace(minute=0)
                continue
            if at.minute not in self.minutes:
                at += timedelta(minutes=1)
                continue
            return at
        raise CronError("schedule never fires")

    def _day_ok(self, at: datetime) -> bool:
        dom = at.day in self.days
        dow = (at.isoweekday() % 7) in self.weekdays
        if self.day_any or self.weekday_any:
            return dom and dow
        return dom or dow

    def last_before(self, start: datetime, end: datetime) -> tuple[datetime | None, int]:
        """The latest fire time in (start, end] and how many fire times were in that window (capped at 101)."""
        last, count, at = None, 0, start
        while count <= 100:
            at = self.next_after(at)
            if at > end:
                break
            last, count = at, count + 1
        return last, count


def _value(text: str, lo: int, hi: int, names: dict[str, int], field: str) -> int:
    text = text.lower()
    if text in names:
        return names[text]
    try:
        value = int(text)
    except ValueError:
        raise CronError(f"failed to parse int from {text}: invalid syntax in {field}") from None
    if field == "day of week" and value == 7:
        value = 0
    if not lo <= value <= hi:
        raise CronError(f"{field} value {value} out of range [{lo}, {hi}]")
    return value


def _field(text: str, lo: int, hi: int, names: dict[str, int], field: str) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        step = 1
        stepped = "/" in part
        if stepped:
            part, step_text = part.split("/", 1)
            try:
                step = int(step_text)
            except ValueError:
                raise CronError(f"bad step {step_text!r} in {field}") from None
            if step <= 0:
                raise CronError(f"step must be positive in {field}")
        if part in ("*", "?"):
            start, stop = lo, hi
        elif "-" in part:
            a, b = part.split("-", 1)
            start, stop = _value(a, lo, hi + (field == "day of week"), names, field), _value(b, lo, hi + (field == "day of week"), names, field)
            if field == "day of week" and b.strip() == "7":
                stop = 7
        else:
            start = _value(part, lo, hi + (field == "day of week"), names, field)
            stop = hi if stepped else start
        if start > stop:
            raise CronError(f"beginning of range ({start}) beyond end of range ({stop}) in {field}")
        out.update(v % 7 if field == "day of week" else v for v in range(start, stop + 1, step))
    return out


def parse(expr: str) -> Schedule:
    text = (expr or "").strip()
    if text.startswith("TZ=") or text.startswith("CRON_TZ="):
        raise CronError("CRON_TZ or TZ used in schedule is not supported, please use the spec.timeZone field")
    if text.startswith("@every "):
        seconds = _duration(text[len("@every "):])
        return Schedule(set(), set(), set(), set(), set(), True, True, every=timedelta(seconds=seconds))
    text = MACROS.get(text.lower(), text)
    parts = text.split()
    if len(parts) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(parts)}: {expr}")
    minutes, hours, days, months, weekdays = (
        _field(p, lo, hi, names, name) for p, (name, lo, hi, names) in zip(parts, FIELDS, strict=True))
    return Schedule(minutes, hours, days, months, weekdays,
                    day_any=parts[2] in ("*", "?"), weekday_any=parts[4] in ("*", "?"))


def _duration(text: str) -> float:
    total, num = 0.0, ""
    units = {"h": 3600, "m": 60, "s": 1}
    for ch in text.strip():
        if ch.isdigit() or ch == ".":
            num += ch
        elif ch in units and num:
            total += float(num) * units[ch]
            num = ""
        else:
            raise CronError(f"bad duration {text!r}")
    if num or total <= 0:
        raise CronError(f"bad duration {text!r}")
    return total
