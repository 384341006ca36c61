from django.db import migrations

DEFAULTS = {"memory_extraction_enabled": True}


def seed(apps, schema_editor):
    ConfigEntry = apps.get_model("memories", "ConfigEntry")
    for key, value in DEFAULTS.items():
        ConfigEntry.objects.get_or_create(key=key, defaults={"value": value})


class Migration(migrations.Migration):
    dependencies = [("memories", "0002_vector_store")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
