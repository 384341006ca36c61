"""How an extraction run reads over the API: the runs endpoints, the extract endpoints' answer
and a messages post's `extraction` (through the trigger hook) show it the same way. A failed
run's message is `error`; `reason` is only ever why something was skipped or not triggered."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from extraction.models import ExtractionRun, RunStatus, SourceKind

NOT_TRIGGERED = "not_triggered"


class RunSourceSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=SourceKind.choices, source="source_kind")
    id = serializers.UUIDField(source="source_id")


class ExtractionRunSerializer(serializers.ModelSerializer):
    # A declared field, not Field.source: the serializer metaclass moves it into the fields.
    source = RunSourceSerializer(source="*", read_only=True)  # type: ignore[assignment]
    memory_ids = serializers.ListField(child=serializers.UUIDField(), read_only=True)
    error = serializers.SerializerMethodField(help_text="Why a failed run failed; else null.")
    reason = serializers.SerializerMethodField(help_text="Why a skipped run skipped; else null.")

    class Meta:
        model = ExtractionRun
        fields = [
            "task_id",
            "status",
            "source",
            "created",
            "merged",
            "skipped",
            "memory_ids",
            "error",
            "reason",
            "started_at",
            "finished_at",
            "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_error(self, run: ExtractionRun) -> str | None:
        return run_error(run)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_reason(self, run: ExtractionRun) -> str | None:
        return run_skip_reason(run)


def run_error(run: ExtractionRun) -> str | None:
    # One column holds both messages; the status says which one it is.
    return run.reason if run.status == RunStatus.FAILED else None


def run_skip_reason(run: ExtractionRun) -> str | None:
    return run.reason if run.status == RunStatus.SKIPPED else None


def not_triggered(reason: str) -> dict:
    """A messages post's `extraction` when it started nothing (memories.api.carrier_views
    answers the same shape when no hook answered)."""
    return {"status": NOT_TRIGGERED, "reason": reason}
