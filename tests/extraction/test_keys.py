"""Keys that replace (issue 47, item 2): the prompt gives the model the key vocabulary and
the user's current keys; a proposal under a drifted key ("location" for "home") is proposed
as the current memory's replacement, by the model's own `replaces` or by meaning; measured
on tests/data/drifted_keys.json through the fake model server and the default embedder."""

import json
from pathlib import Path

from extraction import services
from extraction.parsing import parse_candidates
from memories.models import Memory, Status
from tests.conftest import client_for, make_user
from tests.extraction.helpers import answer, memory, new_topic, post

TABLE = json.loads((Path(__file__).parents[1] / "data" / "drifted_keys.json").read_text())


def propose(user, llm, current: list[str], proposed: dict):
    """Save the user's current memory, then extract a conversation whose model answer is
    `proposed`; the pending proposal (None: skipped as a duplicate) and the current
    memory's id."""
    client = client_for(user)
    saved = client.post(
        "/api/memories", {"key": current[0], "value": current[1]}, format="json"
    ).json()
    topic_id = new_topic(client)
    post(client, topic_id, "Some news about me.")
    llm.chat_answers.append(answer(proposed))
    run = services.extract_topic(topic_id=topic_id)
    assert run.status == "done", run.reason
    return Memory.objects.filter(user=user, status=Status.PENDING_REVIEW).first(), saved["id"]


def test_the_drifted_key_table_proposes_replacements(db, llm):
    replaced, taken_for_another = [], []
    for i, row in enumerate(TABLE["rows"]):
        proposal, current_id = propose(
            make_user(f"drift-{i}"), llm, row["current"], memory(*row["proposed"])
        )
        is_replacement = proposal is not None and str(proposal.supersedes_id) == current_id
        if row["replaces"]:
            replaced.append(is_replacement)
            if is_replacement:
                assert proposal.key == row["current"][0]  # the current key, kept
            else:
                print("not replaced:", row["current"], "->", row["proposed"])
        else:
            taken_for_another.append(is_replacement)
            if is_replacement:
                print("taken for the current one:", row["current"], "->", row["proposed"])

    assert sum(replaced) / len(replaced) >= 0.9, f"{sum(replaced)} of {len(replaced)}"
    assert sum(taken_for_another) <= 2, f"{sum(taken_for_another)} of {len(taken_for_another)}"


def test_the_models_replaces_names_the_current_key(db, llm):
    proposal, current_id = propose(
        make_user("named"),
        llm,
        ["home", "Lives in Lisbon"],
        memory("residence", "Lives in Madrid", replaces="home"),
    )

    assert (proposal.key, str(proposal.supersedes_id)) == ("home", current_id)


def test_a_new_fact_under_a_new_key_stays_new(db, llm):
    proposal, _ = propose(
        make_user("new"), llm, ["home", "Lives in Lisbon"], memory("instrument", "Plays cello")
    )

    assert (proposal.key, proposal.supersedes_id) == ("instrument", None)


def test_the_prompt_gives_the_vocabulary_and_the_current_keys(api, owner, llm):
    api.post("/api/memories", {"key": "home", "value": "Lives in Lisbon"}, format="json")
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Madrid.")
    llm.chat_answers.append(answer())

    services.extract_topic(topic_id=topic_id)

    user = llm.chat_requests()[-1]["messages"][1]["content"]
    assert "- home: Lives in Lisbon" in user
    assert "- job: the user's occupation" in user  # the default vocabulary


def test_replaces_that_is_not_a_string_is_ignored():
    [candidate] = parse_candidates(answer(memory("home", "Lives in Madrid", replaces=["home"])))

    assert candidate.replaces == ""
