"""The recall playground of a user's page: a message (and optionally a topic, project,
persona and moment) in, exactly what the context call would give the model out: the hint,
then every memory recall considered with its score parts as a stacked bar, the gate's
decision and the reason in words, and how the query was read. The API's own explanation
(memories.recall.hint.memory_hint_explained, serialised as POST /api/memories/context
with explain=true answers it), so the page and the API cannot disagree. It counts as no
access to the memories and as no context call in the usage figures."""

from datetime import UTC, datetime

from django import forms
from django.conf import settings
from django.utils import timezone

from memories.api.serializers import ExplanationSerializer, RecallResultSerializer
from memories.models import Persona, Project, Topic, User
from memories.recall.hint import memory_hint_explained
from memories.recall.scopes import recall_scopes
from memories.selectors import personas_of

# The order of the bar's parts, and the names the page shows.
PARTS = [
    ("relevance", "relevance"),
    ("entity", "entity"),
    ("importance", "importance"),
    ("recency", "recency"),
    ("frequency", "popularity"),
    ("scope_bonus", "scope"),
]
MESSAGE_MAX_LENGTH = 4000
# The form's fields are named recall-message, recall-topic …: the user page's own filters
# (topic, project) share the query string.
PREFIX = "recall"


class RecallPlaygroundForm(forms.Form):
    message = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=MESSAGE_MAX_LENGTH,
        help_text="What the user wrote, as a product would send it.",
    )
    topic = forms.ModelChoiceField(queryset=Topic.objects.none(), required=False)
    project = forms.ModelChoiceField(queryset=Project.objects.none(), required=False)
    persona = forms.ModelChoiceField(queryset=Persona.objects.none(), required=False)
    as_of = forms.DateTimeField(
        required=False,
        input_formats=["%Y-%m-%dT%H:%M"],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        label="As of",
        help_text="UTC; empty for now.",
    )

    def __init__(self, *args, user: User, **kwargs):
        super().__init__(*args, **kwargs)
        # Only the user's own topics and projects, and the personas the user reaches.
        choices = {
            "topic": Topic.objects.filter(user=user).order_by("-created_at"),
            "project": Project.objects.filter(owner=user).order_by("name"),
            "persona": personas_of(user).order_by("name"),
        }
        for name, queryset in choices.items():
            field = self.fields[name]
            assert isinstance(field, forms.ModelChoiceField)
            field.queryset = queryset

    def clean_as_of(self) -> datetime | None:
        moment = self.cleaned_data.get("as_of")
        if moment is not None and timezone.is_naive(moment):
            moment = timezone.make_aware(moment, UTC)
        return moment


def bars(parts: dict[str, float] | None, scale: float) -> list[dict]:
    """The score's parts as the segments of one bar: name, value, and where it starts and
    how wide it is as a share of `scale` (the largest score on the page), in percent."""
    if not parts or scale <= 0:
        return []
    segments, start = [], 0.0
    for part, label in PARTS:
        if parts[part] <= 0:
            continue
        width = 100.0 * parts[part] / scale
        segments.append(
            {"part": part, "label": label, "value": parts[part], "x": start, "width": width}
        )
        start += width
    return segments


def playground(request, user: User) -> dict:
    """The template context of the playground for `user`: the form, and once a message was
    sent, the hint and the explanation."""
    if f"{PREFIX}-message" not in request.GET:
        return {"playground_form": RecallPlaygroundForm(user=user, prefix=PREFIX)}
    form = RecallPlaygroundForm(request.GET, user=user, prefix=PREFIX)
    if not form.is_valid():
        return {"playground_form": form}
    data = form.cleaned_data
    as_of = data.get("as_of")
    hint, used, explanation = memory_hint_explained(
        query=data["message"],
        scopes=recall_scopes(
            user=user, topic=data["topic"], project=data["project"], persona=data["persona"]
        ),
        top_k=settings.RECALL_HINT_TOP_K,
        budget=settings.MEMORY_HINT_BUDGET_CHARS,
        as_of=as_of,
    )
    context = {"request": request}
    explained = ExplanationSerializer(explanation, context=context).data
    scale = max((c["score"] or 0.0 for c in explained["candidates"]), default=0.0)
    candidates = [{**c, "bars": bars(c["score_parts"], scale)} for c in explained["candidates"]]
    return {
        "playground_form": form,
        "playground": {
            "hint": hint,
            "memories": RecallResultSerializer(used, many=True, context=context).data,
            "query": explained["query"],
            "candidates": candidates,
            "parts": PARTS,
        },
    }
