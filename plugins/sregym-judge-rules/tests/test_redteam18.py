"""Red-team round 18, finding 5 (issue #34/#35): a false second cause the reader could not see, in the writer's own
diff of what changed or in a sentence in another language. Texts written for these tests; the problem's fault set
geo's image to a tag that does not exist."""

from __future__ import annotations

PID = "hotel-wrong-image-geo"
H = ("geo's Deployment image in hotel-reservation was changed to sregym/hotel-reservation:v9.9.9-missing, a tag that "
     "does not exist, so its new pod is stuck in ImagePullBackOff and geo has no ready endpoint.")


def _diff(*lines: str) -> str:
    return "\n\nWhat changed in geo's Deployment since the deploy:\n```diff\n" + "\n".join(lines) + "\n```"


def test_a_diff_of_the_writers_own_states_each_change_it_shows(passes):
    assert passes(PID, H)
    image = ("-        image: sregym/hotel-reservation:1.0", "+        image: sregym/hotel-reservation:v9.9.9-missing")
    assert passes(PID, H + _diff(*image)), "the fault's own change, shown"
    # a pasted kubectl diff also shows the object's bookkeeping: not a change of its configuration
    assert passes(PID, H + _diff("-  generation: 4", "+  generation: 5", *image))
    assert not passes(PID, H + _diff(*image, "-            memory: 256Mi", "+            memory: 12Mi"))
    assert not passes(PID, H + _diff("-  replicas: 1", "+  replicas: 0", *image))


def test_a_claim_in_another_language_is_not_cleared(passes):
    assert not passes(PID, H + " Außerdem wurde das Speicherlimit von geo auf 12Mi gesenkt, daher wird geo OOMKilled.")
    assert not passes(PID, H + " De plus, la limite mémoire de geo a été abaissée à 12Mi, donc geo est OOMKilled.")
    assert not passes(PID, H + " Además, el límite de memoria de geo fue reducido a 12Mi, por eso geo está OOMKilled.")
    # a word or a greeting of another language is not a claim
    assert passes(PID, H + " Danke, Sascha.")
    assert passes(PID, "Root cause (la cause): " + H)


def test_language_is_read_by_function_words():
    from sregym_judge_rules import secondcause

    assert secondcause.foreign("Außerdem wurde das Speicherlimit von geo auf 12Mi gesenkt.")
    assert not secondcause.foreign("The image of geo was changed and the pod is not ready.")
    assert not secondcause.foreign("geo's image tag does not exist, so the kubelet cannot pull it.")
    assert secondcause.foreign_claims(["Das ist nicht gut und wir sind müde."]) == []  # names nothing
