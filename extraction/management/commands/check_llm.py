"""Send the utility model (LLM_*) one small request as extraction sends them and print the
address, the model, its answer and the time taken. Raises CommandError (exit status 1) when no
LLM is configured, nothing answers at the address, or the model answers an error."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from extraction import llm

# A model that thinks aloud may answer at length: the first of it says enough.
ANSWER_SHOWN_CHARS = 500


class Command(BaseCommand):
    help = (
        "Check the utility model: send one small chat-completions request to LLM_BASE_URL for "
        "LLM_MODEL, as extraction does (LLM_TIMEOUT_SECONDS, no retries), and print the answer "
        "and the time it took. Exits 1 when no LLM is configured (the rule extractor runs), "
        "nothing answers, or the model answers an error."
    )

    def handle(self, *args, **options):
        if not llm.is_configured():
            # Not a success: whoever runs this expects a model, and a script that checks
            # before deploying must not pass while the rule extractor runs instead.
            raise CommandError(
                "No LLM is configured: LLM_BASE_URL and LLM_MODEL are not set, so extraction "
                "uses the rule extractor. Set both to use a model (docs/extraction.md, "
                "Setting up the model)."
            )
        self.stdout.write(f"address  {llm.address()}")
        self.stdout.write(f"model    {settings.LLM_MODEL}")
        try:
            answer = llm.check()
        except llm.ExtractionFailed as failure:
            raise CommandError(failure.reason) from None
        text = answer.text or "(empty)"
        if len(text) > ANSWER_SHOWN_CHARS:
            text = text[:ANSWER_SHOWN_CHARS] + "…"
        self.stdout.write(f"answer   {text}")
        self.stdout.write(f"time     {answer.seconds:.2f} s")
        self.stdout.write(self.style.SUCCESS("The LLM answers: extraction uses it."))
