from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError

from memories.errors import InvalidInput
from webhooks import endpoints
from webhooks.events import endpoints_changed
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint


class WebhookEndpointForm(forms.ModelForm):
    """The API's checks: an http(s) URL on a public address (unless WEBHOOK_ALLOW_PRIVATE),
    known event names."""

    class Meta:
        model = WebhookEndpoint
        fields = ["tenant", "url", "description", "events", "is_active"]

    def clean_url(self):
        try:
            return endpoints.url_validate(self.cleaned_data["url"])
        except InvalidInput as error:
            raise ValidationError(error.detail) from None

    def clean_events(self):
        events = self.cleaned_data["events"]
        try:
            return endpoints.events_validate(events if isinstance(events, list) else [events])
        except InvalidInput as error:
            raise ValidationError(error.detail) from None


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    form = WebhookEndpointForm
    list_display = ["url", "tenant", "is_active", "created_at"]
    list_filter = ["is_active", "tenant"]
    search_fields = ["url", "description"]
    # The secret is shown once, by the API; the admin never shows it (the form leaves it out).

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
