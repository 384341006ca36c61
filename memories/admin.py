from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin

from memories import services
from memories.accounts.keys import api_key_create, api_key_revoke
from memories.accounts.tenants import default_tenant
from memories.errors import ServiceError
from memories.models import (
    ApiKey,
    ApiKeyScope,
    ConfigEntry,
    ConsolidationProposal,
    Memory,
    MemoryRevision,
    Persona,
    Project,
    RetentionRule,
    RevisionAction,
    Status,
    Tenant,
    Topic,
    User,
    WorkSession,
)
from memories.retention.rules import (
    retention_rule_check,
    retention_rule_delete,
    retention_rule_save,
)
from memories.selectors import memories_administered_by, persona_reach


@admin.register(User)
class MemoryUserAdmin(UserAdmin):
    # A class attribute of ModelAdmin, which the stubs leave out of ClassVar (see
    # django-stubs contrib/admin/options.pyi: `list_display` may be set per instance).
    list_display = [*UserAdmin.list_display, "external_id", "tenant"]  # type: ignore[misc]
    list_filter = [*UserAdmin.list_filter, "tenant"]
    search_fields = [*UserAdmin.search_fields, "external_id"]
    fieldsets = [*(UserAdmin.fieldsets or ()), ("Product", {"fields": ["external_id", "tenant"]})]


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]


class ApiKeyCreateForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(
        choices=ApiKeyScope.choices,
        widget=forms.CheckboxSelectMultiple,
        initial=[ApiKeyScope.READ, ApiKeyScope.WRITE],
        help_text="review: the /api/admin/ endpoints, users, persona-scope writes, as staff.",
    )

    class Meta:
        model = ApiKey
        fields = ["name", "tenant", "scopes"]
        help_texts = {"tenant": "The product it serves: it acts for that tenant's users only."}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["tenant"].initial = default_tenant()


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are made here and shown once, in the message after saving."""

    list_display = [
        "name",
        "prefix",
        "tenant",
        "scopes",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["revoked_at", "tenant"]
    search_fields = ["name", "prefix"]
    readonly_fields = [
        "name",
        "prefix",
        "tenant",
        "scopes",
        "account",
        "created_by",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    actions = ["revoke"]

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = ApiKeyCreateForm
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj is not None else []

    def get_fields(self, request, obj=None):
        return ["name", "tenant", "scopes"] if obj is None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        if change:
            return
        key, raw_key = api_key_create(
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            created_by=request.user,
            tenant=form.cleaned_data["tenant"],
        )
        # The admin goes on with `obj` (log entry, redirect): make it the key just created.
        obj.__dict__.update({k: v for k, v in key.__dict__.items() if k != "_state"})
        obj._state.adding = False
        self.message_user(
            request,
            f"API key {key.name!r}: {raw_key} — copy it now, it is not shown again.",
            messages.WARNING,
        )

    def has_delete_permission(self, request, obj=None):
        return False  # revoke instead: a deleted key's account would lose its revisions

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset):
        revoked = sum(api_key_revoke(key=key) for key in queryset)
        self.message_user(request, f"Revoked {revoked} key(s).", messages.SUCCESS)


class RevisionInline(admin.TabularInline):
    model = MemoryRevision
    fields = ("created_at", "action", "actor", "before", "after", "note")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ["-id"]

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    list_display = ["key", "value", "scope", "status", "source", "user", "importance", "created_at"]
    # Only the users and personas of the memories listed (a tenant-bound staff account's).
    list_filter = [
        "status",
        "scope",
        "source",
        "category",
        ("user", admin.RelatedOnlyFieldListFilter),
        ("persona", admin.RelatedOnlyFieldListFilter),
    ]
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
        "superseded_by",
        "valid_from",
        "valid_until",
        "expires_at",
        "retention_expires_at",
        "retention_rule",
        "access_count",
        "last_accessed_at",
        "created_at",
        "updated_at",
        "deleted_at",
        "source_topic",
        "source_work_session",
        "source_message_ids",
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
        # A tenant-bound staff account sees its tenant's users' and personas' memories only.
        return (
            super()
            .get_queryset(request)
            .filter(memories_administered_by(request.user), deleted_at__isnull=True)
        )

    def save_model(self, request, obj, form, change):
        # Edits go through the service so they are re-embedded and leave a revision.
        changes = {name: form.cleaned_data[name] for name in form.changed_data}
        original = Memory.objects.get(id=obj.id)
        services.memory_update(memory=original, actor=request.user, changes=changes)

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def _review(self, request, queryset, *, decision: str, verb: str) -> None:
        ids = list(queryset.filter(status=Status.PENDING_REVIEW).values_list("id", flat=True))
        count = len(services.memory_review(memory_ids=ids, actor=request.user, decision=decision))
        self.message_user(
            request, f"{verb} {count} {'memory' if count == 1 else 'memories'}.", messages.SUCCESS
        )

    @admin.action(description="Approve selected pending memories")
    def approve_selected(self, request, queryset):
        self._review(request, queryset, decision=RevisionAction.APPROVE, verb="Approved")

    @admin.action(description="Reject selected pending memories")
    def reject_selected(self, request, queryset):
        self._review(request, queryset, decision=RevisionAction.REJECT, verb="Rejected")

    @admin.action(description="Archive selected memories")
    def archive_selected(self, request, queryset):
        count = sum(
            services.memory_archive(memory_id=memory_id, actor=request.user)
            for memory_id in queryset.values_list("id", flat=True)
        )
        self.message_user(
            request, f"Archived {count} {'memory' if count == 1 else 'memories'}.", messages.SUCCESS
        )


@admin.register(ConsolidationProposal)
class ConsolidationProposalAdmin(admin.ModelAdmin):
    """Read-only: proposals are decided on /review/proposals or through the API."""

    list_display = ["created_at", "kind", "status", "user", "reason", "decided_by", "decided_at"]
    list_filter = ["status", "kind"]
    list_select_related = ["user", "decided_by"]
    search_fields = ["user__username", "reason"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Persona)
class PersonaAdmin(admin.ModelAdmin):
    """A tenant-bound staff account lists, changes and creates its own tenant's personas; a
    local login every tenant's, and picks the tenant of a new one (chosen already when the
    installation has one tenant)."""

    list_display = ["name", "tenant", "memory_enabled", "created_at"]
    list_filter = ["tenant", "memory_enabled"]
    list_select_related = ["tenant"]
    search_fields = ["name"]

    def get_queryset(self, request):
        return super().get_queryset(request).filter(persona_reach(request.user))

    def get_readonly_fields(self, request, obj=None):
        return ["tenant"] if obj is not None else []

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "tenant":
            user = request.user
            tenants = Tenant.objects.order_by("slug")
            if user.tenant_id is not None:
                tenants = tenants.filter(id=user.tenant_id)
            kwargs["queryset"] = tenants
            only = list(tenants[:2])
            kwargs["initial"] = only[0].id if len(only) == 1 else None
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class RetentionRuleForm(forms.ModelForm):
    class Meta:
        model = RetentionRule
        fields = ["tenant", "project", "scope", "category", "days"]

    def clean(self):
        cleaned = super().clean()
        if not self.errors:
            rule = RetentionRule(**{**cleaned, "id": self.instance.id})
            try:
                retention_rule_check(rule)
            except ServiceError as error:
                field = (error.field or "").removesuffix("_id") or None
                self.add_error(field, error.detail)
        return cleaned


@admin.register(RetentionRule)
class RetentionRuleAdmin(admin.ModelAdmin):
    """Saved and deleted through the service, so the tenant's current memories take the
    rules' time in the same transaction. A tenant-bound staff account sees and makes its own
    tenant's rules only."""

    form = RetentionRuleForm
    list_display = ["tenant", "project", "scope", "category", "days", "updated_at"]
    list_filter = ["tenant", "scope"]
    list_select_related = ["tenant", "project"]

    def get_queryset(self, request):
        rules = super().get_queryset(request)
        if request.user.tenant_id is not None:
            rules = rules.filter(tenant_id=request.user.tenant_id)
        return rules

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "tenant" and request.user.tenant_id is not None:
            kwargs["queryset"] = Tenant.objects.filter(id=request.user.tenant_id)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change):
        retention_rule_save(rule=obj)

    def delete_model(self, request, obj):
        retention_rule_delete(rule=obj)

    def delete_queryset(self, request, queryset):
        for rule in queryset:
            retention_rule_delete(rule=rule)


admin.site.register(Project)
admin.site.register(Topic)
admin.site.register(WorkSession)
admin.site.register(ConfigEntry)
