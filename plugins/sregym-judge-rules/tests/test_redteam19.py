"""Red-team round 19, finding 4 (issue #34/#35): a false second cause the reader could not see. Texts written for these
tests; the problem's fault set geo's image to a tag that does not exist. Closed: a Markdown footnote's definition
(``[^1]: ...``), read as JSON-like tool output until now. Still open (SECURITY.md §26): a title heading, a blockquote (a
chat's quote of an earlier message reads the same: taking quotes as the writer's claims passed a vague chat answer), a
fix command with its reason, an "Evidence:" sentence, a code block's comment."""

from __future__ import annotations

PID = "hotel-wrong-image-geo"
H = ("geo's Deployment image in hotel-reservation was changed to sregym/hotel-reservation:v9.9.9-missing, a tag that "
     "does not exist, so its new pod is stuck in ImagePullBackOff and geo has no ready endpoint.")


def test_a_markdown_footnote_is_the_writers_prose(passes):
    assert passes(PID, H)
    second = H.replace("endpoint.", "endpoint.[^1]") + "\n\n[^1]: geo's memory limit was lowered to 12Mi, so geo is OOMKilled."
    assert not passes(PID, second)
    named = H.replace("endpoint.", "endpoint.[^tag]") + "\n\n[^tag]: the registry has no v9.9.9-missing tag for it."
    assert passes(PID, named), "a footnote about the fault's own change adds no cause"


def test_a_footnote_definition_is_not_tool_output():
    from sregym_judge_rules.reading import is_pasted_line

    assert not is_pasted_line("[^1]: geo's memory limit was lowered to 12Mi.")
    assert not is_pasted_line("[1] geo's readiness probe asks for the wrong path")
    assert is_pasted_line('["geo", "rate"]')
    assert is_pasted_line('[{"name": "geo"}]')
