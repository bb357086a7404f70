"""The report's leaderboard: agents with their models × suites (one per results directory), each cell
the success rate, successes/attempts and the 95% Wilson interval, plus an overall column; rows
ranked by overall success rate, then by attempts.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from sregym_core.results import AttemptRecord, ResultsWriter
from sregym_core.results.report import write_report
from sregym_core.results.report.model import attempts_of, load_sets, standings

HOSTILE_MODEL = "<script>document.body.dataset.pwned='model'</script><img src=x onerror=alert(1)>"


def _write(directory: Path, entries: list[tuple[str, str | None, list[bool | None]]]) -> Path:
    """Records for (agent, model, outcomes): True success, False failure, None not deployed.

    Each entrant gets its own problems: a directory keeps one record per (problem, agent, attempt).
    """
    writer = ResultsWriter(directory)
    for entrant, (agent, model, outcomes) in enumerate(entries):
        for number, outcome in enumerate(outcomes, 1):
            writer.append(AttemptRecord(
                run_id="r", problem_id=f"p{entrant}-{number}", agent=agent, attempt=1, model=model,
                diagnosis_passed=None if outcome is None else True,
                mitigation_passed=None if outcome is None else outcome, deploy_failed=outcome is None))
    return directory


class _Table(HTMLParser):
    """The text of every cell of the leaderboard table, row by row (header row first), and the tags seen."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.tags: set[str] = set()
        self.caption = ""
        self._in_caption = False
        self._cell: list[str] | None = None
        section = page.split('<section id="leaderboard">', 1)[1].split("</section>", 1)[0]
        self.feed(section.split("</table>", 1)[0])

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "caption":
            self._in_caption = True

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "caption":
            self._in_caption = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        elif self._in_caption:
            self.caption += data


def _report(tmp_path: Path, suites: dict[str, list[tuple[str, str | None, list[bool | None]]]]) -> str:
    dirs = [_write(tmp_path / name, entries) for name, entries in suites.items()]
    return write_report(dirs, tmp_path / "out" / "report.html").read_text()


# two models × two suites; both models end at 75% overall, model-b with twice the attempts
TWO_BY_TWO = {
    "suite-one": [("react", "model-a", [True, True, False]), ("react", "model-b", [True, True, True, True])],
    "suite-two": [("react", "model-a", [True]), ("react", "model-b", [True, False, True, False])],
}


def test_cells_show_rate_counts_and_wilson_interval_per_model_and_suite(tmp_path):
    board = _Table(_report(tmp_path, TWO_BY_TWO))
    header, *rows = board.rows
    assert header == ["agent (model)", "suite-one", "suite-two", "overall"]
    assert rows == [
        ["1. react (model-b)", "100% 4/4 [51\u2013100%]", "50% 2/4 [15\u201385%]", "75% 6/8 [41\u201393%]"],
        ["2. react (model-a)", "67% 2/3 [21\u201394%]", "100% 1/1 [21\u2013100%]", "75% 3/4 [30\u201395%]"],
    ]
    assert "95% Wilson interval" in board.caption


def test_ranked_by_overall_rate_before_attempts(tmp_path):
    suites = {
        "suite-one": [("react", "model-a", [True, True, False]), ("react", "model-b", [True, True, True, True]),
                      ("react", "model-c", [True])],  # 1/1: the best rate wins over more attempts
        "suite-two": [("react", "model-a", [True]), ("react", "model-b", [True, False, True, False]),
                      ("plain", None, [False, False])],
    }
    rows = _Table(_report(tmp_path, suites)).rows[1:]
    assert [r[0] for r in rows] == ["1. react (model-c)", "2. react (model-b)", "3. react (model-a)", "4. plain"]
    assert rows[0][2] == "-" and rows[3][1] == "-"  # no attempt in that suite
    assert rows[3][3] == "0% 0/2 [0\u201366%]"


def test_equal_rate_and_attempts_share_a_rank_and_undeployed_attempts_do_not_count(tmp_path):
    sets = load_sets([_write(tmp_path / "s1", [("b-agent", "m", [True, False, None]), ("a-agent", "m", [False, True])]),
                      _write(tmp_path / "s2", [("c-agent", "m", [False])])])
    table = standings(attempts_of(sets), ["s1", "s2"])
    assert [(s.rank, s.entrant) for s in table] == [(1, "a-agent (m)"), (1, "b-agent (m)"), (3, "c-agent (m)")]
    b = table[1]
    assert (b.overall.success, b.overall.n, b.overall.deploy_failures) == (1, 2, 1)
    assert b.cells[1] is None and (table[2].cells[0], table[2].cells[1].n) == (None, 1)
    page = write_report([tmp_path / "s1", tmp_path / "s2"], tmp_path / "report.html").read_text()
    rows = _Table(page).rows[1:]
    assert rows[1] == ["1. b-agent (m)", "50% 1/2 [9\u201391%] +1 not deployed", "-", "50% 1/2 [9\u201391%] +1 not deployed"]


def test_labels_match_the_rest_of_the_report(tmp_path):
    page = _report(tmp_path, TWO_BY_TWO)
    overview = page.split('id="overview"', 1)[1].split("</section>", 1)[0]
    # the overview lists the same "agent (model)" entrants in the leaderboard's order
    assert overview.index("react (model-b)") < overview.index("react (model-a)")


def test_hostile_model_and_suite_names_are_text(tmp_path):
    suites = {"<b onclick=x>suite": [("react", HOSTILE_MODEL, [True, False])], "plain": [("react", "model-a", [False])]}
    page = _report(tmp_path, suites)
    board = _Table(page)
    assert board.rows[0][1] == "<b onclick=x>suite"  # the directory name, shown as text
    assert board.rows[1][0] == f"1. react ({HOSTILE_MODEL})"
    assert board.tags <= {"h2", "p", "code", "div", "table", "caption", "thead", "tbody", "tr", "th", "td", "span"}, board.tags
    section = page.split('<section id="leaderboard">', 1)[1].split("</section>", 1)[0]
    assert "<script" not in section and "<img" not in section and "<b " not in section
    assert "react (&lt;script&gt;document.body.dataset.pwned=&#x27;model&#x27;&lt;/script&gt;&lt;img src=x" in section
