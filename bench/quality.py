"""Recall quality on LOCOMO dev: the service's hybrid recall against pure BM25 (bm25s) and
pure vector search over the same turns. Runs inside a worker whose Django is already set up
on a fresh database (see bench.worker)."""

import re
import time
from dataclasses import asdict, replace

import bm25s
import numpy as np

from bench import locomo
from bench.metrics import summarise

TOP_K = 10
RRF_K = 60
RRF_DEPTH = 100
# What links a turn's memory to entities: nothing (a turn saved as such names none), or the
# rule extractor's reading of the turn's words (turn_mentions).
ENTITY_SOURCES = ("none", "rules")
_TURN_PREFIX = re.compile(r"^\[[^\]]*\] [^:]*: ")


def turn_mentions(text: str) -> list:
    """The entities the rule extractor reads in a turn (`[date] speaker: words`, the words
    alone): extraction.rules.entity_mentions of each clause, with the clause's rule candidates
    (an employer is read from one), each once. Extraction links a clause's mentions to the
    facts it reads there; a LOCOMO turn is one memory, so it takes those of every clause."""
    from extraction.rules import entity_mentions, extract_by_rules
    from extraction.statements import clauses
    from memories.entities.linking import Mention

    words = _TURN_PREFIX.sub("", text, count=1)
    found = [
        Mention(m.name, m.kind, m.relation)
        for clause in clauses(words)
        for m in entity_mentions(clause, extract_by_rules([clause]))
    ]
    return list(dict.fromkeys(found))


def _ingest(conversations, embedder, *, entities: str = "none"):
    """One fresh user per conversation; every turn a user-scope memory, key = dia_id, value =
    the turn text, embedded in batches and handed to memory_create (so no per-memory model
    call); with entities="rules", each memory is linked to its turn_mentions as a save with
    entities links them (entities_link). Returns users, id->dia_id maps and the timings."""
    from memories.models import Scope, Source, User
    from memories.services import memory_create

    if entities not in ENTITY_SOURCES:
        raise ValueError(f"entities: one of {ENTITY_SOURCES}, not {entities!r}")
    if entities != "none":  # not importable before issue 45
        from memories.entities.linking import entities_link

    memories = [Memory_(c, t) for c in conversations for t in c.turns]
    started = time.perf_counter()
    vectors = embedder.embed([m.embedding_text for m in memories])
    embed_seconds = time.perf_counter() - started

    started = time.perf_counter()
    users, keys, linked, entity_ids = {}, {}, 0, set()
    for conversation in conversations:
        users[conversation.sample_id] = User.objects.create_user(
            username=f"locomo-{conversation.sample_id}"
        )
    for memory, vector in zip(memories, vectors, strict=True):
        created = memory_create(
            actor=None,
            scope=Scope.USER,
            user=users[memory.sample_id],
            key=memory.turn.dia_id,
            value=memory.turn.text,
            source=Source.CONVERSATION,
            vector=vector,
        )
        keys[created.id] = memory.turn.dia_id
        if entities == "rules":
            made = entities_link(created, turn_mentions(memory.turn.text))
            linked += bool(made)
            entity_ids.update(entity.id for entity in made)
    write_seconds = time.perf_counter() - started
    n = len(memories)
    timing = {
        "memories": n,
        "embed_seconds": round(embed_seconds, 2),
        "write_seconds": round(write_seconds, 2),
        "embed_s_per_1000": round(embed_seconds / n * 1000, 2),
        "write_s_per_1000": round(write_seconds / n * 1000, 2),
        "total_s_per_1000": round((embed_seconds + write_seconds) / n * 1000, 2),
    }
    if entities != "none":
        timing["entities"] = {
            "source": entities,
            "memories_linked": linked,
            "entities": len(entity_ids),
        }
    return users, keys, timing


class Memory_:
    """A turn waiting to become a memory."""

    def __init__(self, conversation, turn):
        self.sample_id = conversation.sample_id
        self.turn = turn

    @property
    def embedding_text(self) -> str:
        # The same text Memory.embedding_text gives ("key: value"), so the vectors are the ones
        # the service would compute itself.
        return f"{self.turn.dia_id}: {self.turn.text}"


def _service_rankings(
    conversations, users, keys, *, record_access=True, weights=None, query_vectors=None
):
    """memory_recall for every question, in dataset order, in the scopes of the
    conversation's user (`users` by sample_id); a hit ranks as its `keys` entry ("" for a
    memory not in `keys`). Returns rankings, seconds and how many came back short."""
    from memories.recall.recall import memory_recall
    from memories.recall.scopes import recall_scopes

    rankings, seconds, short = [], [], 0
    i = 0
    for conversation in conversations:
        scopes = recall_scopes(user=users[conversation.sample_id])
        for question in conversation.questions:
            started = time.perf_counter()
            hits = memory_recall(
                query=question.text,
                scopes=scopes,
                top_k=TOP_K,
                record_access=record_access,
                weights=weights,
                query_vector=None if query_vectors is None else query_vectors[i],
            )
            seconds.append(time.perf_counter() - started)
            rankings.append([keys.get(hit.memory.id, "") for hit in hits])
            short += len(hits) < TOP_K
            i += 1
    return rankings, seconds, short


def _reset_access() -> None:
    from memories.models import Memory

    Memory.objects.update(access_count=0, last_accessed_at=None)


def _bm25_rankings(conversations, *, depth=TOP_K):
    rankings = []
    for conversation in conversations:
        ids = [t.dia_id for t in conversation.turns]
        tokenizer = bm25s.tokenization.Tokenizer(stopwords="en")
        corpus = tokenizer.tokenize([t.text for t in conversation.turns], show_progress=False)
        retriever = bm25s.BM25()
        retriever.index(corpus, show_progress=False)
        for question in conversation.questions:
            query = tokenizer.tokenize([question.text], update_vocab=False, show_progress=False)
            if not query[0]:
                rankings.append([])
                continue
            docs, scores = retriever.retrieve(
                query, k=min(depth, len(ids)), show_progress=False, n_threads=1
            )
            rankings.append([ids[d] for d, s in zip(docs[0], scores[0], strict=True) if s > 0])
    return rankings


def _dense_rankings(conversations, turn_vectors, query_vectors, *, depth=TOP_K):
    rankings, start, qi = [], 0, 0
    for conversation in conversations:
        n = len(conversation.turns)
        matrix = turn_vectors[start : start + n]
        start += n
        for _question in conversation.questions:
            order = np.argsort(-(matrix @ query_vectors[qi]), kind="stable")[:depth]
            rankings.append([conversation.turns[j].dia_id for j in order])
            qi += 1
    return rankings


def _store_rankings(conversations, users, keys, query_vectors):
    """Pure vector search through the service's own vector store (same vectors it recalls by)."""
    from memories.models import Status
    from memories.recall.scopes import recall_scopes
    from memories.recall.vector_store import get_vector_store

    store, rankings, qi = get_vector_store(), [], 0
    for conversation in conversations:
        partitions = [s.partition for s in recall_scopes(user=users[conversation.sample_id])]
        for _question in conversation.questions:
            hits = store.nearest(
                vector=query_vectors[qi].tolist(),
                partitions=partitions,
                k=TOP_K,
                status=Status.ACTIVE,
            )
            rankings.append([keys[h.memory_id] for h in hits])
            qi += 1
    return rankings


def _rrf(*rankings_lists):
    fused = []
    for rankings in zip(*rankings_lists, strict=True):
        score: dict[str, float] = {}
        for ranking in rankings:
            for rank, key in enumerate(ranking, start=1):
                score[key] = score.get(key, 0.0) + 1.0 / (RRF_K + rank)
        fused.append(sorted(score, key=lambda k: (-score[k], k))[:TOP_K])
    return fused


SWEEP_VECTOR_SHARE = (0.3, 0.4, 0.5, 0.6, 0.7)
SWEEP_FLOOR = (0.15, 0.2, 0.25)
SWEEP_CANDIDATES = (50, 100)


def run(
    *,
    data: str,
    quick: bool,
    sweep: str = "auto",
    sweep_only: bool = False,
    entities: str = "none",
) -> dict:
    """sweep: "always", "never" or "auto" (only when the service misses the target);
    entities: ENTITY_SOURCES, what links each turn's memory to entities at ingest."""
    from django.test import override_settings

    from memories.embeddings.embedders import get_embedder
    from memories.recall.scoring import Weights

    started_all = time.perf_counter()
    conversations = locomo.load(data, limit=1 if quick else None)
    questions = [q for c in conversations for q in c.questions]
    embedder = get_embedder()
    embedder.embed(["warm-up"])

    users, keys, ingest = _ingest(conversations, embedder, entities=entities)
    result: dict = {
        "conversations": [c.sample_id for c in conversations],
        "queries": len(questions),
        "memories": ingest["memories"],
        "ingest": ingest,
        "weights": asdict(Weights.from_settings()),
    }

    query_vectors = np.asarray(
        embedder.embed_queries([q.text for q in questions]), dtype=np.float32
    )

    if not sweep_only:
        rankings, seconds, short = _service_rankings(conversations, users, keys)
        methods = {
            "service": {
                **summarise(questions, rankings),
                "label": "service: memory_recall, default Weights, record_access on",
                "fewer_than_top_k": short,
                "query_seconds_mean": round(float(np.mean(seconds)), 4),
            }
        }
        turn_vectors = np.asarray(
            embedder.embed([t.text for c in conversations for t in c.turns]), dtype=np.float32
        )
        bm25 = _bm25_rankings(conversations)
        dense = _dense_rankings(conversations, turn_vectors, query_vectors)
        methods["bm25"] = {
            **summarise(questions, bm25),
            "label": "BM25 (bm25s, lucene, k1=1.5, b=0.75, English stop words) over the turn texts",
        }
        methods["dense"] = {
            **summarise(questions, dense),
            "label": f"dense cosine (numpy) over {embedder.model_name} vectors of the turns",
        }
        methods["dense_store"] = {
            **summarise(questions, _store_rankings(conversations, users, keys, query_vectors)),
            "label": "vector store nearest (the service's vectors of 'key: value'), k=10",
        }
        methods["rrf"] = {
            **summarise(
                questions,
                _rrf(
                    _bm25_rankings(conversations, depth=RRF_DEPTH),
                    _dense_rankings(conversations, turn_vectors, query_vectors, depth=RRF_DEPTH),
                ),
            ),
            "label": "reference: reciprocal-rank fusion (k=60) of BM25 and dense",
        }
        _reset_access()
        no_access, _, short = _service_rankings(
            conversations, users, keys, record_access=False, query_vectors=query_vectors
        )
        methods["service_no_access"] = {
            **summarise(questions, no_access),
            "label": "diagnostic: the service with record_access off",
            "fewer_than_top_k": short,
        }
        result["methods"] = methods
        best_baseline = max(
            methods[m]["overall"]["recall@10"] for m in ("bm25", "dense", "dense_store")
        )
        service = methods["service"]["overall"]["recall@10"]
        result["target"] = {
            "service_recall@10": service,
            "best_baseline_recall@10": best_baseline,
            "margin_points": round((service - best_baseline) * 100, 1),
            "met": service - best_baseline >= 0.03,
        }

    if sweep == "always" or (sweep == "auto" and not result["target"]["met"]):
        defaults = Weights.from_settings()
        rows = []
        for candidates in SWEEP_CANDIDATES:
            for vector_share in SWEEP_VECTOR_SHARE:
                for floor in SWEEP_FLOOR:
                    _reset_access()
                    weights = replace(defaults, vector_share=vector_share, similarity_floor=floor)
                    with override_settings(RECALL_CANDIDATES=candidates):
                        rankings, seconds, short = _service_rankings(
                            conversations,
                            users,
                            keys,
                            weights=weights,
                            query_vectors=query_vectors,
                        )
                    summary = summarise(questions, rankings)
                    rows.append(
                        {
                            "vector_share": vector_share,
                            "similarity_floor": floor,
                            "candidates": candidates,
                            **summary,
                            "fewer_than_top_k": short,
                            "query_seconds_mean": round(float(np.mean(seconds)), 4),
                        }
                    )
        best = max(
            rows,
            key=lambda r: (r["overall"]["recall@10"], r["overall"]["recall@5"]),
        )
        result["sweep"] = {"rows": rows, "best": best}

    result["seconds"] = round(time.perf_counter() - started_all, 1)
    return result
