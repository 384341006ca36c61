from django import forms
from django.contrib import admin

from extraction.models import ExtractionRun, ExtractionSettings, ExtractionState


@admin.register(ExtractionRun)
class ExtractionRunAdmin(admin.ModelAdmin):
    list_display = [
        "created_at",
        "source_kind",
        "source_id",
        "status",
        "extractor",
        "created",
        "merged",
        "skipped",
        "reason",
    ]
    list_filter = ["status", "source_kind", "extractor"]
    search_fields = ["source_id", "task_id", "reason"]

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False


@admin.register(ExtractionState)
class ExtractionStateAdmin(admin.ModelAdmin):
    list_display = [
        "topic",
        "work_session",
        "last_message_id",
        "last_extracted_at",
        "claimed_until",
    ]


class ExtractionSettingsForm(forms.ModelForm):
    """The API's checks on the admin's JSON fields, so both accept the same settings."""

    class Meta:
        model = ExtractionSettings
        fields = ["tenant", "project", "instructions", "categories", "keys", "language", "exclude"]

    def clean(self):
        cleaned = super().clean()
        from extraction.settings_api import ExtractionSettingsSerializer

        names = ["instructions", "categories", "keys", "language", "exclude"]
        serializer = ExtractionSettingsSerializer(
            data={name: cleaned.get(name) for name in names if cleaned.get(name) is not None}
        )
        if not serializer.is_valid():
            for name, errors in serializer.errors.items():
                self.add_error(name if name in names else None, str(errors))
        else:
            cleaned.update(serializer.validated_data)
        project = cleaned.get("project")
        tenant = cleaned.get("tenant")
        if project is not None and tenant is not None and project.owner.tenant_id != tenant.id:
            self.add_error("project", "This project belongs to another tenant's user.")
        return cleaned


@admin.register(ExtractionSettings)
class ExtractionSettingsAdmin(admin.ModelAdmin):
    form = ExtractionSettingsForm
    list_display = ["tenant", "project", "language", "updated_at"]
    list_filter = ["tenant"]
