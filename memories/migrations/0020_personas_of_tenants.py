"""Personas belong to a tenant. Existing ones go to the default tenant (created as 0015 does
when missing), so an installation serving one product changes nothing; their memories follow
the persona."""

import django.db.models.deletion
from django.db import migrations, models


def into_default_tenant(apps, schema_editor):
    Tenant = apps.get_model("memories", "Tenant")
    Persona = apps.get_model("memories", "Persona")
    if not Persona.objects.exists():
        return
    default, _ = Tenant.objects.get_or_create(slug="default", defaults={"name": "Default"})
    Persona.objects.update(tenant=default)


class Migration(migrations.Migration):
    dependencies = [("memories", "0019_covering_keyword_indexes")]

    operations = [
        migrations.AddField(
            model_name="persona",
            name="tenant",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="personas",
                to="memories.tenant",
            ),
        ),
        migrations.RunPython(into_default_tenant, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="persona",
            name="tenant",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="personas",
                to="memories.tenant",
            ),
        ),
    ]
