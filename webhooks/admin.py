from django.contrib import admin, messages

from webhooks import endpoints
from webhooks.events import endpoints_changed
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ["url", "tenant", "is_active", "created_at"]
    list_filter = ["is_active", "tenant"]
    search_fields = ["url", "description"]
    # The secret is shown once, by the API; the admin never shows it.
    exclude = ["secret"]

    def save_model(self, request, obj, form, change):
        if not change:
            obj.secret = endpoints.secret_new()
        super().save_model(request, obj, form, change)
        endpoints_changed()


class WebhookAttemptInline(admin.TabularInline):
    model = WebhookAttempt
    extra = 0
    can_delete = False
    fields = ["number", "started_at", "duration_ms", "outcome", "status_code", "error"]
    readonly_fields = ["number", "started_at", "duration_ms", "outcome", "status_code", "error"]

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = [
        "message_id",
        "event_type",
        "endpoint",
        "status",
        "attempt_count",
        "next_attempt_at",
        "created_at",
    ]
    list_filter = ["status", "event_type"]
    search_fields = ["message_id"]
    list_select_related = ["endpoint"]
    readonly_fields = [
        "endpoint",
        "event_type",
        "message_id",
        "subject_user_id",
        "status",
        "next_attempt_at",
        "failures",
        "attempt_count",
        "created_at",
        "body",
    ]
    inlines = [WebhookAttemptInline]
    actions = ["replay"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Replay: send again now (same webhook-id)")
    def replay(self, request, queryset):
        count = endpoints.deliveries_replay(delivery_ids=queryset.values_list("id", flat=True))
        self.message_user(request, f"{count} deliveries queued again.", messages.SUCCESS)
