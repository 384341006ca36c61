from django.db import migrations

import memories.models.memory

BATCH = 1000


def guess_languages(apps, schema_editor):
    """The language of every memory written before the field, as a save would guess it."""
    from memories.models.languages import language_of

    Memory = apps.get_model("memories", "Memory")
    batch = []
    for memory in Memory.objects.only("id", "value").iterator(chunk_size=BATCH):
        language = language_of(memory.value)
        if language:
            memory.language = language
            batch.append(memory)
        if len(batch) >= BATCH:
            Memory.objects.bulk_update(batch, ["language"])
            batch = []
    if batch:
        Memory.objects.bulk_update(batch, ["language"])


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0026_retention"),
    ]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="language",
            field=memories.models.memory.LanguageField(
                blank=True, editable=False, max_length=8, null=True
            ),
        ),
        migrations.RunPython(guess_languages, migrations.RunPython.noop, elidable=True),
    ]
