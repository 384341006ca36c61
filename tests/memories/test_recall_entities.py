"""Recall uses the links (issue 45, item 3): a query that names an entity (name, alias,
relation, in English or another language) or a group of relations ("family", "kids", "pets")
brings that entity's memories in, relevant on that evidence, with an `entity` score part; a
query that names none ranks as before."""

import pytest

from memories.models import Entity
from memories.recall.entities import GROUP_EVIDENCE, matched_entities, query_about_others

CONTEXT = "/api/memories/context"
SEARCH = "/api/memories/search"


def save(api, key, value, entities=()):
    body = {"key": key, "value": value, "entities": list(entities)}
    response = api.post("/api/memories", body, format="json")
    assert response.status_code == 201, response.content[:500]
    return response.json()


@pytest.fixture
def family(api):
    """A user with a wife, a son, two dogs, an employer, and facts about none of them."""
    wife = {"name": "Sofia", "kind": "person", "relation": "wife"}
    son = {"name": "Leo", "kind": "person", "relation": "son"}
    pip = {"name": "Pip", "kind": "pet", "relation": "dog"}
    olive = {"name": "Olive", "kind": "pet", "relation": "dog"}
    acme = {"name": "Acme", "kind": "organisation", "relation": "employer"}
    return {
        "wife": save(api, "wife's hobby", "Sofia loves sailing", [wife]),
        "son": save(api, "son's school", "Leo is in third grade", [son]),
        "dogs": save(api, "dogs", "Pip and Olive are beagles", [pip, olive]),
        "job": save(api, "employer", "Works at Acme", [acme]),
        "diet": save(api, "diet", "Is vegetarian"),
        "stack": save(api, "backend stack", "Prefers Go with Gin"),
    }


def keys_of(response) -> list[str]:
    assert response.status_code == 200, response.content[:500]
    return [memory["key"] for memory in response.json()["memories"]]


def test_a_family_request_brings_the_partner_the_son_and_the_dogs(api, family):
    hint = keys_of(
        api.post(CONTEXT, {"query": "What should we do this weekend as a family?"}, format="json")
    )

    assert {"wife's hobby", "son's school", "dogs"} <= set(hint[:5])
    assert "employer" not in hint and "backend stack" not in hint


@pytest.mark.parametrize(
    "query, key",
    [
        ("Any ideas for a present for my wife?", "wife's hobby"),
        ("what does Sofia like?", "wife's hobby"),
        ("sofía", "wife's hobby"),
        ("¿Qué le gusta a mi esposa?", "wife's hobby"),
        ("Comment va mon fils à l'école ?", "son's school"),
        ("user pets", "dogs"),
        ("kids", "son's school"),
    ],
)
def test_an_entity_named_any_way_brings_its_memories_first(api, family, query, key):
    response = api.get(SEARCH, {"q": query})

    assert response.status_code == 200, response.content[:500]
    results = response.json()["data"]
    assert results and results[0]["key"] == key, [r["key"] for r in results]
    parts = results[0]["score_parts"]
    assert parts["entity"] > 0
    assert sum(parts.values()) == pytest.approx(results[0]["score"])


def test_a_query_that_names_no_entity_has_no_entity_part(api, family):
    response = api.get(SEARCH, {"q": "am I vegetarian?"})

    results = response.json()["data"]
    assert results[0]["key"] == "diet"
    assert all(result["score_parts"]["entity"] == 0 for result in results)


def test_an_unrelated_question_still_gets_nothing(api, family):
    assert (
        keys_of(api.post(CONTEXT, {"query": "What is the capital of Kenya?"}, format="json")) == []
    )


def test_another_users_entities_bring_nothing(api, other_api, family):
    save(other_api, "diet", "Is vegan")

    response = other_api.get(SEARCH, {"q": "what does Sofia like?"})

    results = response.json()["data"]
    assert "wife's hobby" not in [r["key"] for r in results]
    assert all(result["score_parts"]["entity"] == 0 for result in results)


def test_matching_reads_names_relations_groups_and_other_languages(db):
    rows = [
        ("a", "person", "wife", ["sofia", "my wife"]),
        ("b", "pet", "dog", ["pip"]),
        ("c", "organisation", "employer", ["acme corp"]),
    ]

    assert matched_entities("Sofia's birthday", rows) == {"a": 1.0}
    assert matched_entities("gifts for my wife", rows) == {"a": 1.0}
    assert matched_entities("la familia", rows) == {"a": GROUP_EVIDENCE, "b": GROUP_EVIDENCE}
    assert matched_entities("haustiere", rows) == {"b": GROUP_EVIDENCE}
    assert matched_entities("news from ACME Corp", rows) == {"c": 1.0}
    assert matched_entities("acme", rows) == {}  # a part of a name is not the name
    assert matched_entities("let's chat about cats", rows) == {}
    assert not Entity.objects.exists()


def test_a_relation_word_counts_for_the_users_relation_only(db):
    rows = [
        ("wife", "person", "wife", ["sofia"]),
        ("dog", "pet", "dog", ["pip"]),
        ("niece", "person", "niece", ["ella"]),
        ("girlfriend", "person", "girlfriend", ["sanne"]),
        ("grandmother", "person", "grandmother", ["rosa"]),
    ]

    def named(query, **kwargs):
        return sorted(matched_entities(query, rows, **kwargs))

    # The user's: the first person, a model's "user", a terse phrase, a definite article.
    assert named("What does my wife like?") == ["wife"]
    assert named("What does the user's wife do?") == ["wife"]
    assert named("user spouse") == ["wife"]
    assert named("dogs") == ["dog"]  # a plural names the relation too
    assert named("Does the user have any nieces or nephews?") == ["niece"]
    assert named("Como estão os cachorros?") == ["dog"]
    assert named("Come sta la nonna?") == ["grandmother"]
    assert named("Wat kan ik mijn vriendin geven?") == ["girlfriend"]
    assert named("gift ideas for my partner") == ["girlfriend", "wife"]
    assert named("J'ai besoin d'idées pour ma femme") == ["wife"]
    assert named("うちの犬は元気？") == ["dog"]
    assert named("What should we do this weekend as a family?") == sorted(
        ["wife", "dog", "niece", "girlfriend", "grandmother"]
    )
    # Another's, or nobody's: no relation named.
    assert named("Who was the wife of Henry VIII?") == []
    assert named("Chi era la moglie di Enrico VIII?") == []
    assert named("How many legs does a dog have?") == []
    assert named("What is a family in biology taxonomy?") == []
    assert named("The user asks what a family is in biological classification.") == []
    # The question classifier's word that the question is about the user counts too.
    assert named("Any ideas for an anniversary present?") == []
    assert named("Any ideas for an anniversary present?", about_user=True) == ["girlfriend", "wife"]
    # A name is a name, whoever asks.
    assert named("Is Sofia free on Friday?") == ["wife"]
    # Another's possessive makes the relation theirs, even in a question about the user.
    assert named("Who was Napoleon's brother?", about_user=True) == []
    assert named("Who was Henry VIII's first wife?", about_user=True) == []
    assert named("What should I give my niece's girlfriend?") == ["niece"]
    assert named("Quem foi o marido da rainha D. Maria II?", about_user=True) == []


@pytest.mark.parametrize(
    "query, left",
    [
        # A king's name (a regnal number) is nobody the user knows: left out too.
        ("Who was the wife of Henry VIII?", "who was the of viii"),
        ("Who was Napoleon's brother?", "who was napoleon's"),
        ("Who was Henry VIII's first wife?", "who was viii's first"),
        ("Chi era la moglie di Enrico VIII?", "chi era la di viii"),
        ("Wer war der Ehemann von Marie Curie?", "wer war der von marie curie"),
        ("How many legs does a dog have?", "how many legs does a have"),
    ],
)
def test_a_question_about_someone_elses_relations_is_read_without_them(query, left):
    assert query_about_others(query) == left


@pytest.mark.parametrize(
    "query",
    [
        "What does my wife like?",  # the first person
        "What does the user's wife do?",  # the model's "user"
        "does the user have a dog?",  # "user" just before the article
        "dogs",  # terse: a search box's
        "What should we do this weekend as a family?",
        "What does my wife's brother do?",  # the user's wife's
        "Is Sofia free on Friday?",  # no relation word at all
    ],
)
def test_a_question_about_the_users_relations_is_read_whole(query):
    assert query_about_others(query) is None


def test_an_indefinite_article_is_anyones_unless_the_question_is_the_users():
    # The classifier's word decides: "Plan a family dinner" is the user's family.
    assert query_about_others("How many legs does a dog have?") is not None
    assert query_about_others("Plan a family dinner for the weekend", about_user=True) is None
    # Another's possessive or "of" is another's whatever the classifier says.
    assert query_about_others("Who was Napoleon's brother?", about_user=True) is not None


def test_a_question_about_a_strangers_relations_gets_nothing(api, family):
    save(api, "brother", "Brother Tom lives in Leeds", [{"name": "Tom", "relation": "brother"}])
    save(api, "dog walks", "Walks the dogs every morning")

    for query in (
        "Who was the wife of Henry VIII?",
        "Who was Napoleon's brother?",
        "Who was Henry VIII's first wife?",
        "Chi era la moglie di Enrico VIII?",
        "How many legs does a dog have?",
    ):
        assert keys_of(api.post(CONTEXT, {"query": query}, format="json")) == [], query
        assert api.get(SEARCH, {"q": query}).json()["data"] == [], query


def test_a_question_about_someone_the_memories_know_is_read_whole(api, family):
    """ "Sofia's brother" is the wife's brother: the question is read whole, so a memory of
    him that names neither Sofia nor a brother comes by its meaning. So is a question about
    someone a memory names ("Napoleon", in one of the user's reading): that memory first."""
    save(api, "brother-in-law", "Brother-in-law Marco works as a chef in Lyon")
    save(api, "reading", "Reading a biography of Napoleon")

    sofia = keys_of(api.post(CONTEXT, {"query": "What does Sofia's brother do?"}, format="json"))
    napoleon = keys_of(api.post(CONTEXT, {"query": "Who was Napoleon's brother?"}, format="json"))

    assert {"wife's hobby", "brother-in-law"} <= set(sofia), sofia
    assert napoleon[:1] == ["reading"], napoleon


def test_everyday_words_of_another_language_name_no_relation(db):
    rows = [
        ("cat", "pet", "cat", ["misu"]),
        ("kid", "person", "kid", ["leo"]),
        ("boss", "person", "boss", ["ana"]),
        ("colleague", "person", "colleague", ["rui"]),
    ]

    for query in (
        "Can we chat about my day?",  # French "chat" is a cat
        "What kind of music do I like?",  # German "Kind" is a child
        "I want to train as a chef",  # French "chef" is a boss
        "Which team do I support?",
    ):
        assert matched_entities(query, rows) == {}, query


@pytest.mark.parametrize(
    "query",
    [
        "rabbit hole meaning",  # a word's meaning, however terse
        "what is a half-brother?",
        "The user asks what a family is in biological classification.",
        "brother bear movie",  # a work's title
        "modern family cast",
    ],
)
def test_a_question_about_a_word_or_a_work_names_nobodys_relation(query):
    rows = [("f", "person", "brother", ["tom"]), ("r", "pet", "rabbit", ["bun"])]

    assert matched_entities(query, rows) == {}
    assert matched_entities(query, rows, about_user=True) == {}


def test_a_word_or_a_work_in_the_first_person_is_still_the_users():
    rows = [("f", "person", "brother", ["tom"])]

    assert matched_entities("my brother's favourite movie", rows) == {"f": 1.0}
    assert matched_entities("user brother movies", rows) == {"f": 1.0}


@pytest.mark.parametrize(
    "query, named",
    [
        ("Quem foi a esposa de Dom Pedro I?", {}),  # a king, not the brother Pedro
        ("When did Pedro II die?", {}),
        ("King Pedro's wedding", {}),
        ("What does Pedro do?", {"p": 1.0}),
        ("Tell Pedro I love his cooking", {"p": 1.0}),  # "I", the pronoun
    ],
)
def test_a_name_with_a_regnal_number_or_a_royal_title_is_someone_of_history(query, named):
    rows = [("p", "person", "brother", ["pedro"])]

    assert matched_entities(query, rows) == named


def test_a_definition_or_a_kings_wife_gets_nothing(api, family):
    save(
        api, "brother", "Brother Pedro lives in Recife", [{"name": "Pedro", "relation": "brother"}]
    )
    save(api, "rabbit", "Rabbit Bun lives in the garden", [{"name": "Bun", "relation": "rabbit"}])

    for query in ("rabbit hole meaning", "Quem foi a esposa de Dom Pedro I?"):
        assert keys_of(api.post(CONTEXT, {"query": query}, format="json")) == [], query
    assert keys_of(api.post(CONTEXT, {"query": "what does Pedro do?"}, format="json"))[:1] == [
        "brother"
    ]
