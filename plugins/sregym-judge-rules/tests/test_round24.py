"""The judge's twenty-fourth round (issue #35; red-team round 19, finding 4): a second cause the writer states where
the prose reading did not look. A block quote, a Markdown heading and a comment in code are read as the writer's own
sentences for what they add (another mechanism stated as a change, or why), never for the fault's own mechanism; a
describe block's keys said in a line of prose ("Limits: memory: 12Mi (lowered from 256Mi)") and a fix command's
option ("--limits=memory=256Mi") name their field. Correct answers that quote a colleague's question or guess, paste a
log line in a quote, title their sections or comment their commands keep passing. Each reading is tested on texts
written for these tests (never the blind sets' own items, which stay measurement material)."""

from __future__ import annotations

from sregym_judge_rules import reading

PID = "hotel-wrong-image-geo"
H = ("geo's Deployment image in hotel-reservation was changed to sregym/hotel-reservation:v9.9.9-missing, a tag that "
     "does not exist, so its new pod is stuck in ImagePullBackOff and geo has no ready endpoint.")


def test_the_fault_alone_passes(passes):
    assert passes(PID, H)


def test_a_second_cause_in_a_title_heading(passes):
    assert not passes(PID, "# geo: a missing image tag and a memory limit lowered to 12Mi\n\n" + H)
    assert not passes(PID, "## geo's missing tag, and rate's memory limit was lowered to 12Mi\n\n" + H)
    # a title or section heading that restates the fault, or only labels the section, adds nothing
    assert passes(PID, "## Root cause: geo's image points at a tag that does not exist\n\n" + H)
    assert passes(PID, "# Incident summary\n\n" + H)
    assert passes(PID, "## What happened\n\n" + H + "\n\n## Fix\n\nPut the published tag back.")


def test_a_second_cause_in_a_block_quote(passes):
    assert not passes(PID, H + "\n\n> geo's memory limit was also lowered to 12Mi, so geo is OOMKilled.")
    assert not passes(PID, H + "\n\n> also rate's database password was rotated")
    # a colleague's question, a guess or a log line in a quote is not the writer's claim
    assert passes(PID, "geo is down after the deploy\n> did someone lower its memory limit?\nno. " + H)
    assert passes(PID, "> maybe its memory limit was lowered?\n\n" + H)
    assert passes(PID, H + '\n\n> Failed to pull image "sregym/hotel-reservation:v9.9.9-missing": rpc error: manifest '
                           'unknown')


def test_a_second_cause_given_as_the_reason_of_a_fix_command(passes):
    assert not passes(PID, H + "\n\nFix: `kubectl set image deploy/geo hotel-reserv-geo=sregym/hotel-reservation:1.0 && "
                               "kubectl set resources deploy/geo --limits=memory=256Mi` (the limit had been lowered to "
                               "12Mi).")
    assert passes(PID, H + "\n\nFix: `kubectl set image deploy/geo hotel-reserv-geo=sregym/hotel-reservation:1.0` (the "
                           "tag had been changed to one that was never published).")


def test_a_second_cause_in_an_evidence_line(passes):
    assert not passes(PID, H + "\n\nEvidence: `kubectl describe pod` shows Last State: Terminated, Reason: OOMKilled, "
                               "and Limits: memory: 12Mi (lowered from 256Mi).")
    # what describe shows, with no change said of it, is evidence
    assert passes(PID, H + "\n\nEvidence: `kubectl describe pod` shows Image: sregym/hotel-reservation:v9.9.9-missing, "
                           "Reason: ErrImagePull, and Limits: memory: 256Mi.")


def test_a_second_cause_in_a_comment_in_code(passes):
    yaml = ("\n\n```\n$ kubectl get deploy geo -o yaml\n        resources:\n          limits:\n"
            "            memory: 12Mi   # lowered from 256Mi: this is why it is OOMKilled\n```")
    assert not passes(PID, H + yaml)
    shell = ("\n\n```\nkubectl set image deploy/geo hotel-reserv-geo=sregym/hotel-reservation:1.0\n"
             "kubectl set resources deploy/geo --limits=memory=256Mi   # because its memory limit was lowered to 12Mi\n```")
    assert not passes(PID, H + shell)
    # a comment on the fault's own change, or one that says what a command does, adds nothing
    own = ("\n\n```\n$ kubectl get deploy geo -o yaml\n        image: sregym/hotel-reservation:v9.9.9-missing   # changed "
           "from 1.0, this is why the pull fails\n        resources:\n          limits:\n            memory: 256Mi\n```")
    assert passes(PID, H + own)
    steps = ("\n\n```\n# put the published tag back, then wait for the rollout\n"
             "kubectl set image deploy/geo hotel-reserv-geo=sregym/hotel-reservation:1.0\n"
             "kubectl rollout status deploy/geo   # waits until the new pod is Ready\n```")
    assert passes(PID, H + steps)


def test_the_claims_outside_the_prose():
    claims = reading.hidden_claims
    # a quote's text, a heading's, a comment with the YAML keys it annotates or the command it follows
    assert claims("x.\n\n> geo's memory limit was lowered to 12Mi.") == ["geo's memory limit was lowered to 12Mi."]
    assert claims("# geo: a missing tag and a memory limit lowered to 12Mi\n\nx.") == [
        "geo: a missing tag and a memory limit lowered to 12Mi."]
    assert claims("```\nresources:\n  limits:\n    memory: 12Mi  # lowered from 256Mi, this is why\n```") == [
        "resources limits memory: 12Mi, lowered from 256Mi, this is why."]
    assert claims("```\nkubectl rollout restart deploy/rate  # because rate's pool is exhausted\n```") == [
        "because rate's pool is exhausted (in `kubectl rollout restart deploy/rate`)."]
    # what claims nothing: a question, a label, a log line, a thread's message (read as prose already), a whole quote
    assert claims("> anything in events?\nyes: x.") == []
    assert claims("## Root cause\n\nx.") == []
    assert claims("x.\n> 2026-12-01T10:00:00Z ERROR pull failed because manifest unknown") == []
    assert claims("> dana: the memory limit was lowered\nx.") == []
    assert claims("> geo's memory limit was lowered to 12Mi.\n> so geo is OOMKilled.") == []


def test_the_apps_ingress_by_a_newcomers_name_for_it(passes):
    # "the website's entry rule", "the entrance rule": the app's Ingress by a word of its concept, shared as the word
    # "ingress" is: it localizes the fault only with what was changed in it
    pid = "hotel-ingress-class-mismatch-frontend"
    assert passes(pid, "The website's entry rule asks for an ingress class called nginx-internal that no controller in "
                       "the cluster runs, so nothing routes outside traffic to the site.")
    assert passes("train-ticket-ingress-misrouted-path-ts-ui-dashboard",
                  "The entrance rule for the site sends every traveller to an internal service instead of the public "
                  "dashboard, so every visit fails.")
    # the object said to be broken, or another of its fields, says which object, not what was changed in it
    assert not passes(pid, "The website's entry rule is broken, so no visitor gets through.")
    assert not passes(pid, "The website's entry rule points at the wrong backend port, so no visitor gets through.")


def test_a_workload_told_to_run_on_a_machine_its_data_disk_is_not_on(passes):
    # "told to run on one machine" is a node selector, its "data disk" its persistent volume, which "lives on" one
    # machine, and "a different machine" is outside it: the pin against the volume's node affinity, in plain words
    pid = "hotel-pv-node-affinity-postgres-reservation"
    assert passes(pid, "The reservation database (postgres-reservation) was told to run on one particular machine, but its "
                       "data disk is attached only to a different machine, so it can never start.")
    assert passes(pid, "postgres-reservation is pinned to a node other than the one its data disk lives on, so it cannot "
                       "be scheduled anywhere.")
    # the disk itself, or the machine, blamed for something else is another fault
    assert not passes(pid, "postgres-reservation's data disk is full, so it cannot start.")
    assert not passes(pid, "postgres-reservation's data disk was deleted, so it cannot start.")
    assert not passes(pid, "postgres-reservation was told to run on a machine that is out of memory, so it cannot start.")
    assert not passes(pid, "postgres-reservation runs on a different machine than usual, so it is slow.")


def test_every_database_of_the_app_named_at_once(passes):
    # a correlated fault in every datastore of the app: "all six of the app's databases" names each of them
    pid = "hotel-correlated-incompatible-upgrade"
    assert passes(pid, "All six of the app's databases were upgraded to PostgreSQL 18 at once, a major version that "
                       "cannot open the data files the old version 15 wrote, so none of them starts.")
    # where the fault is, without what was done, or another change, or one database only, is not the fault
    assert not passes(pid, "All six of the app's databases are down, so every page fails.")
    assert not passes(pid, "All six of the app's databases had their passwords rotated, so every login fails.")
    assert not passes(pid, "postgres-geo was upgraded to PostgreSQL 18, which cannot read its version 15 data, so it does "
                           "not start.")
    # one datastore's fault is never named by "all databases"
    assert not passes("hotel-pv-node-affinity-postgres-reservation",
                      "All of the app's databases were pinned to a node other than the one their data disks live on, "
                      "so they cannot start.")


def test_its_database_in_a_sentence_naming_the_owner(passes):
    # "the geo service ... its database" is geo's database, as "geo's database" is: the faulty datastore named
    pid = "hotel-db-revoke-geo"
    assert passes(pid, "The geo service could still log in to its database, but someone took away its permission to "
                       "read and write the tables, so every lookup was refused.")
    assert passes("social-db-revoke-post-storage-postgres",
                  "The post storage service can still sign in to its database, but someone took away its right to read "
                  "and write the tables, so every save is refused with 'permission denied'.")
    # another service's database, or the owner's own fault, is not the faulty datastore's
    assert not passes(pid, "The rate service could still log in to its database, but someone took away its permission to "
                           "read and write the tables, so every lookup was refused.")
    assert not passes(pid, "The geo service could still log in to its database, but its memory limit was lowered to 12Mi, "
                           "so every lookup fails.")
    assert not passes(pid, "The geo service cannot reach its database because a network policy blocks it, so every "
                           "lookup fails.")
