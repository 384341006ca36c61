from django.contrib import admin

from extraction.models import ExtractionRun, ExtractionState


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
