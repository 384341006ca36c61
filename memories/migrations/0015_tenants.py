"""Tenants: every API key belongs to one, and end users are unique per tenant by external id.
Existing keys, their accounts and end users go to the default tenant, so an installation
serving one product changes nothing."""

import uuid

import django.db.models.deletion
from django.db import migrations, models


def into_default_tenant(apps, schema_editor):
    Tenant = apps.get_model("memories", "Tenant")
    ApiKey = apps.get_model("memories", "ApiKey")
    User = apps.get_model("memories", "User")
    default, _ = Tenant.objects.get_or_create(slug="default", defaults={"name": "Default"})
    ApiKey.objects.update(tenant=default)
    User.objects.filter(external_id__isnull=False).update(tenant=default)
    User.objects.filter(api_key__isnull=False).update(tenant=default)


class Migration(migrations.Migration):
    dependencies = [("memories", "0014_fact_keys_and_validity")]

    operations = [
        migrations.CreateModel(
            name="Tenant",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("slug", models.SlugField(unique=True)),
                ("name", models.CharField(blank=True, default="", max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.AddField(
            model_name="apikey",
            name="tenant",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="api_keys",
                to="memories.tenant",
            ),
        ),
        migrations.AddField(
            model_name="user",
            name="tenant",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="users",
                to="memories.tenant",
            ),
        ),
        migrations.RunPython(into_default_tenant, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="apikey",
            name="tenant",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="api_keys",
                to="memories.tenant",
            ),
        ),
        migrations.AlterField(
            model_name="user",
            name="external_id",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.AddConstraint(
            model_name="user",
            constraint=models.UniqueConstraint(
                condition=models.Q(external_id__isnull=False),
                fields=("tenant", "external_id"),
                name="user_external_id_per_tenant",
            ),
        ),
    ]
