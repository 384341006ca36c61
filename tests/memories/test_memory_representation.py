"""MemorySerializer answers from fields built once per class: its output must stay what
DRF's generic ModelSerializer walk gives for the same memory, field for field."""

import datetime as dt
import json

import pytest
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIRequestFactory

from memories.accounts.tenants import default_tenant
from memories.api.portability import MemoryExportSerializer
from memories.models import Memory, Persona, Scope, Status, Topic
from memories.representations import MemorySerializer
from tests.conftest import end_user


def generic(serializer) -> dict:
    return serializers.ModelSerializer.to_representation(serializer, serializer.instance)


def as_json(data: dict) -> dict:
    return json.loads(JSONRenderer().render(data))


@pytest.fixture
def request_of(owner):
    request = APIRequestFactory().get("/api/memories")
    request.user = end_user(owner, "ext-owner")
    return request


def memories_of_every_shape(owner) -> list[Memory]:
    user = end_user(owner, "ext-owner")
    other = end_user(owner.__class__.objects.create(username="someone"), "ext-someone")
    tutor = Persona.objects.create(tenant=default_tenant(), name="Tutor")
    topic = Topic.objects.create(user=user)
    plain = Memory.objects.create(user=user, key="city", value="Lisbon")
    old = Memory.objects.create(
        user=user,
        key="drink",
        value="tea",
        category="taste",
        status=Status.ARCHIVED,
        valid_until=dt.datetime(2026, 3, 1, 12, 30, 15, 123456, tzinfo=dt.UTC),
        access_count=7,
        last_accessed_at=dt.datetime(2026, 2, 1, tzinfo=dt.UTC),
        source_message_ids=[3, 5],
        source_topic=topic,
        importance=0.25,
        confidence=0.75,
    )
    new = Memory.objects.create(user=user, key="drink", value="coffee", supersedes=old)
    Memory.objects.filter(id=old.id).update(superseded_by=new)
    session = Memory.objects.create(
        user=user, scope=Scope.SESSION, topic=topic, key="plan", value="packing"
    )
    shared = Memory.objects.create(
        scope=Scope.PERSONA,
        persona=tutor,
        key="tone",
        value="kind",
        deleted_at=dt.datetime.now(dt.UTC),
    )
    theirs = Memory.objects.create(
        scope=Scope.PERSONA_USER, persona=tutor, user=other, key="level", value="B1"
    )
    ids = [plain.id, old.id, new.id, session.id, shared.id, theirs.id]
    return [Memory.objects.get(id=memory_id) for memory_id in ids]


@pytest.mark.parametrize("serializer_class", [MemorySerializer, MemoryExportSerializer])
def test_the_answer_is_what_drf_makes_of_every_field(db, owner, request_of, serializer_class):
    memories = memories_of_every_shape(owner)
    for memory in memories:
        serializer = serializer_class(memory, context={"request": request_of})
        fast = serializer.data
        assert list(fast) == serializer_class.Meta.fields
        assert as_json(fast) == as_json(generic(serializer))
    # The checks above compare real values: both shapes of the optional fields occur.
    answers = [
        MemorySerializer(memory, context={"request": request_of}).data for memory in memories
    ]
    assert {answer["external_user_id"] for answer in answers} == {"ext-owner", "ext-someone", None}
    assert any(answer["superseded_by_id"] for answer in answers)
    assert any(answer["valid_until"] for answer in answers)


def test_many_memories_use_the_same_fields(db, owner, request_of):
    memories = memories_of_every_shape(owner)
    data = MemorySerializer(memories, many=True, context={"request": request_of}).data
    assert [item["id"] for item in data] == [str(memory.id) for memory in memories]
    assert data[1]["source_message_ids"] == [3, 5]
    assert data[1]["valid_until"] == "2026-03-01T12:30:15.123456Z"


def test_fields_are_built_once_per_class_not_per_response(db, owner, request_of, monkeypatch):
    memories = memories_of_every_shape(owner)
    assert MemorySerializer(memories[0], context={"request": request_of}).data  # built now
    built = []
    original = MemorySerializer.get_fields
    monkeypatch.setattr(
        MemorySerializer, "get_fields", lambda self: built.append(self) or original(self)
    )
    for _ in range(3):
        data = MemorySerializer(memories, many=True, context={"request": request_of}).data
        assert len(data) == len(memories)
    assert built == []
