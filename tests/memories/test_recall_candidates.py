"""The candidate step of recall: the one-statement path of PostgreSQL against the
step-by-step path, the exact fallback of the HNSW search, and the access UPDATE
that hands back the stored rows."""

import pytest
from django.db import connection, transaction
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from memories.embeddings.embedders import embed_one
from memories.models import CarrierIds, Memory, Scope, Status
from memories.recall import candidates, keyword
from memories.recall.access import memory_record_access
from memories.recall.postings import collection_of, postings_add, postings_of
from memories.recall.scopes import recall_scopes, scopes_sql
from memories.recall.vector_store import get_vector_store, partition_of
from memories.recall.vector_store.partition_indexes import (
    partition_index_name,
    partition_indexes_sync,
)
from memories.recall.words import query_terms
from tests.conftest import make_user
from tests.memories.helpers import bulk_memories, make_memory


def test_the_sql_of_the_scopes_selects_what_their_orm_condition_selects(owner, world):
    scopes = recall_scopes(
        user=owner, topic=world["topic"], project=world["project"], persona=world["persona"]
    )
    sql, params = scopes_sql(scopes)

    by_sql = set(Memory.objects.extra(where=[sql], params=params).values_list("key", flat=True))
    condition = scopes[0].condition
    for scope in scopes[1:]:
        condition |= scope.condition
    by_orm = set(Memory.objects.filter(condition).values_list("key", flat=True))

    assert by_sql == by_orm
    assert by_sql == {"user", "project", "session", "persona", "persona_user", "pending"}


def test_record_access_hands_back_the_stored_rows(owner):
    memory = make_memory(owner, key="pet", value="I have a golden retriever named Max")

    memory_record_access(memory_ids=[memory.id])
    [returned] = memory_record_access(memory_ids=[memory.id])

    memory.refresh_from_db()
    assert isinstance(returned, Memory)
    assert returned.id == memory.id
    assert returned.access_count == memory.access_count == 2
    assert returned.last_accessed_at == memory.last_accessed_at
    assert returned.value == memory.value
    assert memory_record_access(memory_ids=[]) == []


@pytest.fixture
def postgresql(db):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only")


def test_one_statement_finds_the_same_candidates_as_step_by_step(postgresql, owner, world):
    make_memory(owner, key="drink", value="Drinks a flat white with oat milk")
    make_memory(owner, key="sport", value="Plays padel on Tuesdays")
    scopes = recall_scopes(
        user=owner, topic=world["topic"], project=world["project"], persona=world["persona"]
    )
    query = "which coffee roast in the morning"
    vector = embed_one(query)

    # Keyword hits and neighbours; neighbours alone (no word but stop words).
    for k, text in [(2, query), (50, query), (50, "what is it")]:
        hits = keyword.get_keyword_index().search(text=text, scopes=scopes, k=k)
        arguments = {
            "vector": vector,
            "scopes": scopes,
            "k": k,
            "keyword": {h.memory_id: h for h in hits},
        }
        fused_rows, fused_similarities = candidates._in_one_statement(**arguments)
        rows, similarities = candidates._step_by_step(**arguments)

        stepwise = {row[0]: (list(row), s) for row, s in zip(rows, similarities, strict=True)}
        assert {row[0] for row in fused_rows} == set(stepwise)
        for row, similarity in zip(fused_rows, fused_similarities, strict=True):
            twin_row, twin_similarity = stepwise[row[0]]
            assert similarity == pytest.approx(twin_similarity, abs=1e-5)
            assert row[:4] == twin_row[:4] and row[6] == twin_row[6]
            assert abs((row[4] - twin_row[4]).total_seconds()) < 1e-3
    found = candidates.find_candidates(
        vector=vector,
        scopes=scopes,
        k=50,
        keyword=candidates.keyword_hits(query=query, scopes=scopes, k=50),
    )
    keys = set(
        Memory.objects.filter(id__in=[c.memory_id for c in found]).values_list("key", flat=True)
    )
    assert keys == {"user", "project", "session", "persona", "persona_user", "drink", "sport"}


def test_a_word_most_memories_hold_does_not_make_the_keyword_half_rank_them_all(owner):
    for i in range(60):
        make_memory(owner, key=f"note {i}", value=f"Coffee tasting note number {i}")
    with_both = make_memory(owner, key="order", value="A double espresso, coffee at nine")
    rare_only = make_memory(owner, key="machine", value="Bought an espresso machine")
    scopes = [CarrierIds(Scope.USER, user_id=owner.id)]
    index = keyword.get_keyword_index()

    with override_settings(RECALL_KEYWORD_ROW_BUDGET=10):
        bounded = index.search(text="coffee espresso", scopes=scopes, k=50)
    with override_settings(RECALL_KEYWORD_ROW_BUDGET=1000):
        unbounded = index.search(text="coffee espresso", scopes=scopes, k=50)

    # Found by the rare word alone, and scored by both words as when every word is looked up.
    assert {hit.memory_id for hit in bounded} == {with_both.id, rare_only.id}
    assert len(unbounded) == 50
    assert unbounded[:2] == bounded


def indexed_notes(owner, maintenance: str) -> list[Memory]:
    """3,000 memories that all hold the same common words, in the keyword index, with the
    postings table's statistics (and with VACUUM its visibility map) brought up to date."""
    memories = Memory.objects.bulk_create(
        Memory(user=owner, key=f"note {i}", value=f"coffee tasting morning note {i}")
        for i in range(3000)
    )
    postings_add((memory, partition_of(memory)) for memory in memories)
    with connection.cursor() as cursor:
        cursor.execute(f"{maintenance} memories_keywordposting")
    return memories


def test_common_words_are_looked_up_per_memory_not_by_scanning_their_postings(
    postgresql, owner
):
    # Every memory holds the common words, so their postings are many; the lookup is asked
    # about a few memories and must read those memories' postings alone.
    memories = indexed_notes(owner, "ANALYZE")
    terms = query_terms("coffee morning")
    partition_ids, _ = collection_of([partition_of(memories[0])], terms)
    wanted = [memory.id for memory in memories[:150]]

    with CaptureQueriesContext(connection) as queries:
        found = postings_of(partition_ids=partition_ids, terms=terms, memory_ids=wanted)
    [query] = queries.captured_queries
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + query["sql"])
        plan = "\n".join(row[0] for row in cursor.fetchall())

    assert "keyword_posting_memory" in plan, plan
    assert "keyword_posting_term" not in plan, plan
    assert set(found) == set(wanted)
    assert all(set(held) == set(terms) for held in found.values())


def test_keyword_lookups_read_the_index_pages_alone(transactional_db, owner):
    # The postings indexes carry the columns a search reads: neither lookup visits the
    # table (once VACUUM has marked its pages all-visible, as autovacuum does).
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only (SQLite's indexes have no INCLUDE)")
    memories = indexed_notes(owner, "VACUUM ANALYZE")
    terms = query_terms("tasting morning")
    partition_ids, _ = collection_of([partition_of(memories[0])], terms)

    with CaptureQueriesContext(connection) as queries:
        by_term = postings_of(partition_ids=partition_ids, terms=terms)
        by_memory = postings_of(
            partition_ids=partition_ids, terms=terms, memory_ids=[m.id for m in memories[:150]]
        )
    assert len(by_term) == 3000 and len(by_memory) == 150
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")  # a small table: the index is the point
        try:
            for query, index in zip(
                queries.captured_queries,
                ["keyword_posting_term", "keyword_posting_memory"],
                strict=True,
            ):
                cursor.execute("EXPLAIN (ANALYZE, COSTS OFF) " + query["sql"])
                plan = "\n".join(row[0] for row in cursor.fetchall())
                assert f"Index Only Scan using {index}" in plan, plan
                assert "Heap Fetches: 0" in plan, plan
        finally:
            cursor.execute("RESET enable_seqscan")


def test_nearest_is_exact_when_the_index_comes_back_short(postgresql, owner):
    store = get_vector_store()
    archived = bulk_memories(owner, 40, status=Status.ARCHIVED)
    active = bulk_memories(owner, 5, status=Status.ACTIVE)
    for i, memory in enumerate(archived):
        store.save(memory=memory, vector=_direction(0.01 * i), model="test")
    for i, memory in enumerate(active):
        store.save(memory=memory, vector=_direction(1.0 + 0.1 * i), model="test")
    partition = partition_of(active[0])
    partition_indexes_sync(min_memories=10)  # the partition's own graph
    with connection.cursor() as cursor:
        # A walk of the graph that looks at the 10 nearest vectors (all archived) and stops.
        cursor.execute("SET hnsw.ef_search = 10")
        cursor.execute("SET hnsw.iterative_scan = off")
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("SET enable_bitmapscan = off")
        cursor.execute("SET enable_sort = off")
        try:
            sql, params = store.nearest_sql(
                vector=_direction(0.0), partitions=[partition], k=3, status=Status.ACTIVE
            )
            cursor.execute("EXPLAIN " + sql, params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
            nearest = store.nearest(
                vector=_direction(0.0), partitions=[partition], k=3, status=Status.ACTIVE
            )
        finally:
            cursor.execute("RESET ALL")

    assert partition_index_name(partition, 384) in plan, plan
    assert [n.memory_id for n in nearest] == [m.id for m in active[:3]]


def _direction(angle: float) -> list[float]:
    """A unit vector in the plane of the first two axes, `angle` radians from the first."""
    import math

    return [math.cos(angle), math.sin(angle)] + [0.0] * 382


def test_access_updates_are_hot_updates_that_leave_the_indexes_alone(postgresql, owner):
    memories = bulk_memories(owner, 400)  # packed pages, as a table of older memories
    spread = [memory.id for memory in memories[::40]]  # one memory on each of ten pages

    def updates() -> tuple[int, int]:
        # Counted from before the access write: on PostgreSQL 15+ these include the counts of
        # earlier transactions of this connection not yet flushed (at most once a second).
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_stat_get_xact_tuples_updated('memories_memory'::regclass), "
                "pg_stat_get_xact_tuples_hot_updated('memories_memory'::regclass)"
            )
            return cursor.fetchone()

    updated_before, hot_before = updates()
    memory_record_access(memory_ids=spread)
    updated, hot = updates()

    assert updated - updated_before == hot - hot_before == len(spread)


def test_new_memories_go_straight_into_the_keyword_index_not_a_pending_list(postgresql, owner):
    make_memory(owner, key="pet", value="I have a golden retriever named Max")
    bulk_memories(owner, 50)

    with connection.cursor() as cursor:
        # The number of pending-list pages it merged: the pages every search would read.
        cursor.execute("SELECT gin_clean_pending_list('memory_search_vector_gin'::regclass)")
        pending_pages = cursor.fetchone()[0]
        cursor.execute(
            "SELECT reloptions FROM pg_class WHERE oid = 'memory_search_vector_gin'::regclass"
        )
        options = cursor.fetchone()[0]
    assert pending_pages == 0
    assert options == ["fastupdate=off"]


@pytest.mark.django_db(transaction=True)
def test_the_asynchronous_commit_of_access_updates_stays_inside_their_own_transaction():
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only")
    user = make_user("async")
    memory = make_memory(user, key="pet", value="I have a golden retriever named Max")

    [alone] = memory_record_access(memory_ids=[memory.id])
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        after_alone = cursor.fetchone()[0]
        with transaction.atomic():
            [inside] = memory_record_access(memory_ids=[memory.id])
            cursor.execute("SHOW synchronous_commit")
            inside_transaction = cursor.fetchone()[0]

    memory.refresh_from_db()
    assert (alone.access_count, inside.access_count, memory.access_count) == (1, 2, 2)
    assert after_alone == inside_transaction == "on"


def test_postgresql_connections_search_without_jit_and_with_iterative_hnsw_scans(postgresql):
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        jit = cursor.fetchone()[0]
        cursor.execute("SHOW hnsw.iterative_scan")
        iterative_scan = cursor.fetchone()[0]

    assert (jit, iterative_scan) == ("off", "relaxed_order")
