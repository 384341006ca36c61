"""Settings chosen on data, with one conversation left out: LOCOMO dev recall of many recall
settings on one database, for the memory text with its session date (`[date] speaker:
text`, as bench.quality) and without it (`speaker: text`, the way the unseen conversations
were written). Every setting runs through memory_recall with access counting on (the counts
reset before each), as the quality run does.

    python -m bench tune --data ../shared/data/locomo-dev.json [--configs FILE]

(CONFIGS below are the settings tried; --configs gives others, a JSON list of the same form.)

Five folds: for each conversation, the setting with the best recall@10 on the other four is
chosen and its recall on the left-out one reported (`folds`), next to every setting's
all-in figures (`configs`)."""

import re
import time
from dataclasses import replace

import numpy as np

from bench import locomo
from bench.metrics import recall_at

TOP_K = 10
DATE_PREFIX = re.compile(r"^\[[^\]]*\] ")


def _variants(conversations):
    undated = [
        locomo.Conversation(
            c.sample_id,
            [locomo.Turn(t.dia_id, DATE_PREFIX.sub("", t.text)) for t in c.turns],
            c.questions,
        )
        for c in conversations
    ]
    return {"dated": conversations, "undated": undated}


def _ingest(name, conversations, embedder):
    from memories.models import Scope, Source, User
    from memories.services import memory_create

    users, keys = {}, {}
    for conversation in conversations:
        user = User.objects.create_user(username=f"{name}-{conversation.sample_id}")
        users[conversation.sample_id] = user
        texts = [f"{t.dia_id}: {t.text}" for t in conversation.turns]
        for turn, vector in zip(conversation.turns, embedder.embed(texts), strict=True):
            memory = memory_create(
                actor=None,
                scope=Scope.USER,
                user=user,
                key=turn.dia_id,
                value=turn.text,
                source=Source.CONVERSATION,
                vector=vector,
            )
            keys[memory.id] = turn.dia_id
    return users, keys


def _feedback_query(query, scopes, vector, weights, docs: int, terms: int) -> str:
    """Pseudo-relevance feedback for the keyword half: the query plus the `terms` words of
    its first `docs` hits that weigh most (occurrences in those hits × idf in the caller's
    memories), leaving out the query's own words."""
    from memories.recall.postings import collection_of
    from memories.recall.recall import memory_recall
    from memories.recall.words import _WORD, _fold, index_terms, query_terms

    first = memory_recall(
        query=query,
        scopes=scopes,
        top_k=docs,
        record_access=False,
        weights=weights,
        query_vector=vector,
    )
    held: dict[str, float] = {}
    surface: dict[str, str] = {}
    for hit in first:
        text = hit.memory.value
        for word in _WORD.findall(_fold(text)):
            for term in query_terms(word):
                surface.setdefault(term, word)
        for term, n in index_terms(text).items():
            held[term] = held.get(term, 0.0) + n
    own = set(query_terms(query))
    candidates = [t for t in held if t not in own and t in surface and not t.isdigit()]
    if not candidates:
        return query
    _, collection = collection_of([scope.partition for scope in scopes], candidates)
    ranked = sorted(candidates, key=lambda t: (-held[t] * collection.idf(t), t))
    return query + " " + " ".join(surface[t] for t in ranked[:terms])


def _evaluate(config, conversations, users, keys, query_vectors):
    """recall@5 and @10 per question (dataset order), and the category of each."""
    from memories.models import Memory
    from memories.recall import bm25
    from memories.recall.scoring import Weights

    Memory.objects.update(access_count=0, last_accessed_at=None)
    weights = replace(Weights.from_settings(), **config.get("weights", {}))
    # BM25's k1 and b are constants of the module; a config may try others.
    saved = {name: getattr(bm25, name) for name in config.get("bm25", {})}
    for name, value in config.get("bm25", {}).items():
        setattr(bm25, name, value)
    try:
        return _recall_each(config, conversations, users, keys, query_vectors, weights)
    finally:
        for name, value in saved.items():
            setattr(bm25, name, value)


def _recall_each(config, conversations, users, keys, query_vectors, weights):
    from django.test import override_settings

    from memories.recall.recall import memory_recall
    from memories.recall.scopes import recall_scopes

    per_question = []
    i = 0
    with override_settings(**config.get("settings", {})):
        for conversation in conversations:
            scopes = recall_scopes(user=users[conversation.sample_id])
            for question in conversation.questions:
                text = question.text
                if config.get("feedback"):
                    text = _feedback_query(
                        text, scopes, query_vectors[i], weights, **config["feedback"]
                    )
                hits = memory_recall(
                    query=text,
                    scopes=scopes,
                    top_k=TOP_K,
                    weights=weights,
                    query_vector=query_vectors[i],
                )
                ranked = [keys.get(hit.memory.id, "") for hit in hits]
                per_question.append(
                    {
                        "conversation": conversation.sample_id,
                        "category": question.category,
                        "r5": recall_at(ranked, question.evidence, 5),
                        "r10": recall_at(ranked, question.evidence, TOP_K),
                    }
                )
                i += 1
    return per_question


def _summary(rows):
    def mean(key, subset):
        return round(float(np.mean([r[key] for r in subset])), 4) if subset else None

    by_conversation = {}
    for r in rows:
        by_conversation.setdefault(r["conversation"], []).append(r)
    by_category = {}
    for r in rows:
        by_category.setdefault(locomo.CATEGORIES[r["category"]], []).append(r)
    return {
        "recall@5": mean("r5", rows),
        "recall@10": mean("r10", rows),
        "by_conversation": {c: [mean("r5", s), mean("r10", s)] for c, s in by_conversation.items()},
        "by_category": {c: [mean("r5", s), mean("r10", s)] for c, s in by_category.items()},
    }


def _folds(results, conversations):
    """Leave one conversation out: choose on the other four (mean recall@10 over their
    questions), report the chosen setting on the left-out one."""
    folds = []
    for left_out in (c.sample_id for c in conversations):

        def train_score(name, left_out=left_out):
            rows = [r for r in results[name]["rows"] if r["conversation"] != left_out]
            return (np.mean([r["r10"] for r in rows]), np.mean([r["r5"] for r in rows]))

        chosen = max(results, key=train_score)
        test = [r for r in results[chosen]["rows"] if r["conversation"] == left_out]
        folds.append(
            {
                "left_out": left_out,
                "chosen": chosen,
                "questions": len(test),
                "recall@5": round(float(np.mean([r["r5"] for r in test])), 4),
                "recall@10": round(float(np.mean([r["r10"] for r in test])), 4),
            }
        )
    n = sum(f["questions"] for f in folds)
    pooled = {
        key: round(sum(f[key] * f["questions"] for f in folds) / n, 4)
        for key in ("recall@5", "recall@10")
    }
    return {"folds": folds, "pooled": pooled}


# Each: a name, Weights overrides ("weights"), Django settings overrides ("settings") and
# pseudo-relevance feedback ("feedback": first `docs` hits, `terms` words added).
CONFIGS: list[dict] = [
    {"name": "default"},
    {"name": "no keyword row budget", "settings": {"RECALL_KEYWORD_ROW_BUDGET": 10**9}},
    {"name": "candidates 100", "settings": {"RECALL_CANDIDATES": 100}},
    {"name": "vector_share 0.5", "weights": {"vector_share": 0.5}},
    {"name": "vector_share 0.7", "weights": {"vector_share": 0.7}},
    {"name": "similarity_floor 0.15", "weights": {"similarity_floor": 0.15}},
    {"name": "similarity_floor 0.25", "weights": {"similarity_floor": 0.25}},
    {"name": "near-best rule off", "weights": {"near_best_floor": 1.0}},
    {"name": "keyword_floor 0.5", "weights": {"keyword_floor": 0.5}},
    {"name": "BM25 b 0.5", "bm25": {"B": 0.5}},
    {"name": "BM25 k1 1.5", "bm25": {"K1": 1.5}},
    {"name": "frequency 0.05", "weights": {"frequency": 0.05}},
    {"name": "frequency 0", "weights": {"frequency": 0.0}},
    {"name": "frequency 0.05, BM25 b 0.5", "weights": {"frequency": 0.05}, "bm25": {"B": 0.5}},
    {"name": "feedback 3 hits, 5 words", "feedback": {"docs": 3, "terms": 5}},
    {"name": "feedback 5 hits, 8 words", "feedback": {"docs": 5, "terms": 8}},
]


def run(*, data: str, configs: list[dict] | None = None, quick: bool = False) -> dict:
    """Every config on both memory texts (Django is set up by the worker)."""
    from django.db import connection

    from memories.embeddings.embedders import get_embedder

    started = time.perf_counter()
    configs = CONFIGS if configs is None else configs
    conversations = locomo.load(data, limit=2 if quick else None)
    embedder = get_embedder()
    questions = [q.text for c in conversations for q in c.questions]
    query_vectors = [list(map(float, v)) for v in embedder.embed_queries(questions)]
    out: dict = {"variants": {}}
    for variant, convs in _variants(conversations).items():
        users, keys = _ingest(variant, convs, embedder)
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        results = {}
        for config in configs:
            rows = _evaluate(config, convs, users, keys, query_vectors)
            results[config["name"]] = {"config": config, "rows": rows, **_summary(rows)}
            print(
                f"tune {connection.vendor} {variant} {config['name']}: "
                f"{_cell(results[config['name']])}",
                flush=True,
            )
        out["variants"][variant] = {
            "configs": {
                name: {k: v for k, v in r.items() if k != "rows"} for name, r in results.items()
            },
            "five_fold": _folds(results, convs),
        }
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def _cell(block: dict) -> str:
    return f"{block['recall@5']:.3f} / {block['recall@10']:.3f}"
