from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin

from memories import services
from memories.models import (
    ConfigEntry,
    Memory,
    MemoryRevision,
    Persona,
    Project,
    Status,
    Topic,
    User,
    WorkSession,
)

admin.site.register(User, UserAdmin)


class RevisionInline(admin.TabularInline):
    model = MemoryRevision
    fields = ["created_at", "action", "actor", "before", "after", "note"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ["-id"]

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    list_display = ["key", "value", "scope", "status", "source", "user", "importance", "created_at"]
    list_filter = ["status", "scope", "source", "category", "user", "persona"]
    search_fields = ["key", "value", "user__username"]
    list_select_related = ["user"]
    readonly_fields = [
        "id",
        "scope",
        "user",
        "persona",
        "project",
        "topic",
        "source",
        "status",
        "supersedes",
        "access_count",
        "last_accessed_at",
        "created_at",
        "updated_at",
        "deleted_at",
    ]
    fields = [
        *readonly_fields[:7],
        "key",
        "value",
        "category",
        "importance",
        "confidence",
        *readonly_fields[7:],
    ]
    inlines = [RevisionInline]
    actions = ["approve_selected", "reject_selected", "archive_selected"]

    def get_queryset(self, request):
        return super().get_queryset(request).filter(deleted_at__isnull=True)

    def save_model(self, request, obj, form, change):
        # Edits go through the service so they are re-embedded and leave a revision.
        changes = {name: form.cleaned_data[name] for name in form.changed_data}
        original = Memory.objects.get(id=obj.id)
        services.memory_update(memory=original, actor=request.user, changes=changes)

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Approve selected pending memories")
    def approve_selected(self, request, queryset):
        ids = list(queryset.filter(status=Status.PENDING_REVIEW).values_list("id", flat=True))
        count = services.memory_bulk_approve(memory_ids=ids, actor=request.user)
        self.message_user(
            request, f"Approved {count} {'memory' if count == 1 else 'memories'}.", messages.SUCCESS
        )

    @admin.action(description="Reject selected pending memories")
    def reject_selected(self, request, queryset):
        ids = list(queryset.filter(status=Status.PENDING_REVIEW).values_list("id", flat=True))
        count = services.memory_bulk_reject(memory_ids=ids, actor=request.user)
        self.message_user(
            request, f"Rejected {count} {'memory' if count == 1 else 'memories'}.", messages.SUCCESS
        )

    @admin.action(description="Archive selected memories")
    def archive_selected(self, request, queryset):
        count = sum(
            services.memory_archive(memory_id=memory_id, actor=request.user)
            for memory_id in queryset.values_list("id", flat=True)
        )
        self.message_user(
            request, f"Archived {count} {'memory' if count == 1 else 'memories'}.", messages.SUCCESS
        )


admin.site.register(Persona)
admin.site.register(Project)
admin.site.register(Topic)
admin.site.register(WorkSession)
admin.site.register(ConfigEntry)
