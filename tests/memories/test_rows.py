"""memories.rows: instances read from hand-written statements equal what the ORM reads."""

from django.db import connection
from django.forms.models import model_to_dict

from memories.models import ApiKey, Memory, Tenant
from memories.rows import columns, reader
from tests.conftest import new_key
from tests.memories.helpers import make_memory


def read_back(model, pk):
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns(model, 'x')} FROM {quote(model._meta.db_table)} x "
            f"WHERE x.{quote(model._meta.pk.column)} = %s",
            [model._meta.pk.get_db_prep_value(pk, connection)],
        )
        return reader(model).read(cursor.fetchone())


def fields_of(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


def test_rows_read_by_hand_are_the_instances_the_orm_reads(owner):
    memory = make_memory(owner, key="drink", value="Flat white")
    Memory.objects.filter(id=memory.id).update(source_message_ids=[4, 9], access_count=3)
    new_key("read", "review")
    key = ApiKey.objects.get()

    for model, pk in ((Memory, memory.id), (ApiKey, key.id), (Tenant, key.tenant_id)):
        by_hand, by_orm = read_back(model, pk), model.objects.get(pk=pk)
        assert fields_of(by_hand) == fields_of(by_orm)
        assert not by_hand._state.adding  # a saved row: save() updates it
    assert read_back(Memory, memory.id).source_message_ids == [4, 9]
    assert read_back(ApiKey, key.id).scopes == ["read", "review"]
    assert model_to_dict(read_back(Tenant, key.tenant_id)) == model_to_dict(key.tenant)
