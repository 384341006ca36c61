"""The keyword index tables follow every write: only active, live memories are in them, and
the counts always equal what the postings say (so BM25 reads true statistics)."""

from collections import Counter, defaultdict

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories import services
from memories.models import KeywordPartition, KeywordPosting, KeywordTerm, Memory
from memories.recall import bm25
from memories.recall.postings import collection_of
from memories.recall.words import index_terms, query_terms
from tests.memories.helpers import make_memory, make_pending


def indexed() -> dict[str, set]:
    """{partition: {memory ids}} as the postings say."""
    by_partition = defaultdict(set)
    for memory_id, partition in KeywordPosting.objects.values_list(
        "memory_id", "partition__partition"
    ):
        by_partition[partition].add(memory_id)
    return dict(by_partition)


def assert_counts_match_postings() -> None:
    postings = list(
        KeywordPosting.objects.values_list("memory_id", "partition_id", "term", "length")
    )
    memories, words, terms = defaultdict(set), defaultdict(dict), Counter()
    for memory_id, partition_id, term, length in postings:
        memories[partition_id].add(memory_id)
        words[partition_id][memory_id] = length
        terms[(partition_id, term)] += 1
    partitions = {row.id: (row.memories, row.words) for row in KeywordPartition.objects.all()}
    assert partitions == {
        partition_id: (len(ids), sum(words[partition_id].values()))
        for partition_id, ids in memories.items()
    }
    assert {
        (row.partition_id, row.term): row.memories for row in KeywordTerm.objects.all()
    } == dict(terms)


def test_an_active_memory_is_indexed_by_its_stemmed_words_without_stop_words(owner):
    memory = make_memory(owner, key="hobby", value="Plays the cello in an orchestra, cellos")

    held = dict(KeywordPosting.objects.filter(memory=memory).values_list("term", "occurrences"))

    assert held == {"hobbi": 1, "play": 1, "cello": 2, "orchestra": 1}
    assert_counts_match_postings()


def test_only_active_memories_are_indexed_and_approval_adds_them(owner, staff):
    pending = make_pending(owner, key="city", value="Lives in Lisbon")
    assert indexed() == {}

    services.memory_review(
        memory_ids=[pending.id], actor=staff, decision="approve", require_pending=True
    )

    assert indexed() == {f"user:{owner.id}": {pending.id}}
    assert_counts_match_postings()


def test_archive_delete_and_restore_take_memories_out_and_back(owner):
    kept = make_memory(owner, key="pet", value="Has a cat named Miso")
    archived = make_memory(owner, key="car", value="Drives an old blue Volvo")
    deleted = make_memory(owner, key="cat food", value="Miso eats only salmon")

    services.memory_archive(memory_id=archived.id, actor=owner)
    services.memory_delete(memory=deleted, actor=owner)
    assert indexed() == {f"user:{owner.id}": {kept.id}}
    # Words only the archived and deleted memories held are gone from the counts.
    assert not KeywordTerm.objects.filter(term__in=["volvo", "salmon"]).exists()
    assert_counts_match_postings()

    services.memory_restore(memory_id=deleted.id, actor=owner)

    assert indexed() == {f"user:{owner.id}": {kept.id, deleted.id}}
    assert_counts_match_postings()


def test_an_edit_of_the_text_replaces_the_words(owner):
    memory = make_memory(owner, key="drink", value="Drinks green tea")

    services.memory_update(memory=memory, actor=owner, changes={"value": "Drinks black coffee"})

    terms = set(KeywordPosting.objects.filter(memory=memory).values_list("term", flat=True))
    assert terms == {"drink", "black", "coffe"}
    assert not KeywordTerm.objects.filter(term="tea").exists()
    assert_counts_match_postings()


def test_the_last_memory_of_a_partition_takes_its_totals_with_it(owner):
    memory = make_memory(owner, key="pet", value="Has a cat named Miso")

    services.memory_delete(memory=memory, actor=owner)

    assert not KeywordPartition.objects.exists()
    assert not KeywordTerm.objects.exists()
    assert Memory.objects.filter(id=memory.id).exists()  # soft-deleted


def test_a_search_reads_its_partitions_and_their_word_counts_in_one_statement(owner, other):
    make_memory(owner, key="pet", value="Has a cat named Miso")
    make_memory(owner, key="pet food", value="The cat eats fish")
    make_memory(other, key="pet", value="Has a cat and a dog")
    mine = KeywordPosting.objects.filter(memory__user=owner).values_list(
        "partition__partition", flat=True
    )
    partition = mine.first()
    terms = query_terms("cat dog fish unheard")

    with CaptureQueriesContext(connection) as queries:
        ids, collection = collection_of([partition, "no such partition"], terms)
    assert len(queries) == 1
    assert ids == [KeywordPartition.objects.get(partition=partition).id]
    assert collection.memories == 2
    # The other user's dog is not counted; a word nobody holds has no count.
    assert collection.term_memories == {"cat": 2, "fish": 1}
    assert collection_of([partition], [])[1].term_memories == {}


def test_query_words_are_folded_and_stemmed_as_memory_words_are():
    assert query_terms("Who's my CAFÉ-owning friend's café?") == ["cafe", "own", "friend"]
    assert index_terms("café cafés") == Counter({"cafe": 2})
    assert query_terms("what is it") == []


def test_the_word_a_query_names_the_user_by_carries_no_weight_beside_other_words():
    # A model's tool call ("user pets") and a backend's question ("where does the user
    # live?"): the memories are about the user whether or not they say so.
    assert query_terms("user pets") == ["pet"]
    assert query_terms("Where does the user live?") == ["live"]
    assert query_terms("users") == ["user"]


COLLECTION = bm25.Collection(memories=100, words=500, term_memories={"tea": 2, "drink": 40})


def test_a_rarer_word_weighs_more_and_no_weight_is_negative():
    assert COLLECTION.idf("tea") > COLLECTION.idf("drink") > 0
    assert COLLECTION.idf("unseen") > COLLECTION.idf("tea")
    assert bm25.Collection(10, 50, {"all": 10}).idf("all") > 0


def test_evidence_is_the_share_of_the_query_word_weight_matched():
    postings = {"a": {"tea": (1, 5)}, "b": {"tea": (1, 5), "drink": (1, 5)}}

    hits = bm25.rank(terms=["tea", "drink"], postings=postings, collection=COLLECTION, k=10)

    assert [hit.memory_id for hit in hits] == ["b", "a"]
    assert hits[0].evidence == pytest.approx(1.0)
    assert hits[1].evidence == pytest.approx(
        COLLECTION.idf("tea") / (COLLECTION.idf("tea") + COLLECTION.idf("drink"))
    )


def test_a_longer_memory_scores_lower_for_the_same_match():
    postings = {"short": {"tea": (1, 3)}, "long": {"tea": (1, 30)}}

    hits = bm25.rank(terms=["tea"], postings=postings, collection=COLLECTION, k=10)

    assert [hit.memory_id for hit in hits] == ["short", "long"]


def test_the_budget_keeps_the_rarest_words_whose_memories_fit():
    collection = bm25.Collection(
        memories=1000, words=5000, term_memories={"coffe": 500, "roast": 50, "espresso": 3}
    )

    assert bm25.terms_within_budget(["coffe", "roast", "espresso"], collection, 100) == [
        "roast",
        "espresso",
    ]
    assert bm25.terms_within_budget(["coffe"], collection, 100) == []
    # A caller within the budget looks every word up; words nobody holds are never looked up.
    small = bm25.Collection(memories=50, words=200, term_memories={"coffe": 40})
    assert bm25.terms_within_budget(["coffe", "zanzibar"], small, 100) == ["coffe"]


def test_memories_of_equal_score_rank_by_id_whatever_the_id_type():
    """Ties go by id in UUID order, whether the database returned UUIDs (PostgreSQL) or hex
    strings (SQLite): the two stores rank alike."""
    import uuid

    ids = [uuid.UUID(int=n) for n in (7, 300, 2**100, 5, 2**127 + 1, 42)]
    postings = {memory_id: {"porto": (1, 4)} for memory_id in ids}
    collection = bm25.Collection(memories=20, words=80, term_memories={"porto": 6})
    by_uuid = bm25.rank(terms=["porto"], postings=postings, collection=collection, k=4)
    assert [hit.memory_id for hit in by_uuid] == sorted(ids)[:4]
    as_hex = {memory_id.hex: held for memory_id, held in postings.items()}
    by_hex = bm25.rank(terms=["porto"], postings=as_hex, collection=collection, k=4)
    assert [hit.memory_id for hit in by_hex] == [memory_id.hex for memory_id in sorted(ids)[:4]]
    assert [hit.score for hit in by_hex] == [hit.score for hit in by_uuid]
