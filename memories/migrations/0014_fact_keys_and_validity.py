"""One row per fact and facts that know their time: the normalised key writes look a fact up
by, the memory that superseded a replaced one, and each memory's validity (valid_from: its
creation; valid_until: when its archive revision archived it, for memories that were current
before, not for rejected proposals). The supersedes reverse accessor is renamed."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

import memories.models

BATCH = 2000


def fill(apps, schema_editor):
    from memories.models.memory import normalise

    Memory = apps.get_model("memories", "Memory")
    MemoryRevision = apps.get_model("memories", "MemoryRevision")
    archived_at = dict(
        MemoryRevision.objects.filter(action="archive")
        .order_by("memory_id", "id")
        .values_list("memory_id", "created_at")
    )
    superseded_by = dict(
        Memory.objects.filter(supersedes__isnull=False)
        .exclude(status="pending_review")
        .order_by("created_at")
        .values_list("supersedes_id", "id")
    )
    changed = []
    fields = ["key_normalised", "valid_from", "valid_until", "superseded_by"]
    for memory in Memory.objects.order_by("id").iterator(chunk_size=BATCH):
        memory.key_normalised = normalise(memory.key)
        memory.valid_from = memory.created_at
        if memory.status == "archived" and memory.id in archived_at:
            memory.valid_until = archived_at[memory.id]
            memory.superseded_by_id = superseded_by.get(memory.id)
        changed.append(memory)
        if len(changed) == BATCH:
            Memory.objects.bulk_update(changed, fields)
            changed = []
    if changed:
        Memory.objects.bulk_update(changed, fields)


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0013_vector_change_log"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="memory",
            name="supersedes",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="replacements",
                to="memories.memory",
            ),
        ),
        migrations.AddField(
            model_name="memory",
            name="superseded_by",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="memories.memory",
            ),
        ),
        migrations.AddField(
            model_name="memory",
            name="key_normalised",
            field=memories.models.NormalisedKeyField(default="", editable=False, max_length=200),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="memory",
            name="valid_from",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.AddField(
            model_name="memory",
            name="valid_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["user", "key_normalised"], name="memory_user_key"),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["persona", "key_normalised"], name="memory_persona_key"),
        ),
    ]
