"""What every benchmark shares: where results and docs go, the databases, and the machine,
commit and embedder a result was measured with."""

import json
import os
import platform
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
DOCS = ROOT / "docs" / "benchmarks.md"
SYNTHETIC_NOISE_FILE = RESULTS / "synthetic-noise.json"
DATABASES = ("sqlite", "postgresql")


def results_write(name: str, results: dict) -> Path:
    """Write a run's results to bench/results/<name>.json and say where."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results: {path.relative_to(ROOT)}")
    return path


def machine() -> dict:
    info = {
        "nproc": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memory_gib"] = round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return info


def git_commit() -> str:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return commit + ("+uncommitted changes" if dirty else "")
    except OSError:
        return "unknown"


def embedder_model_name() -> str:
    """The local model the workers will run, as the environment configures it, named as the
    embedder names itself (its model_name)."""
    runtime = os.environ.get("EMBEDDER_RUNTIME", "onnx-int8")
    model = os.environ.get("EMBEDDING_LOCAL_MODEL", "multilingual-e5-small")
    return model + ("-int8" if runtime == "onnx-int8" else "")


def embedder_description() -> str:
    runtime = os.environ.get("EMBEDDER_RUNTIME", "onnx-int8")
    model = os.environ.get("EMBEDDING_LOCAL_MODEL", "multilingual-e5-small")
    return f"{embedder_model_name()} (EMBEDDING_LOCAL_MODEL={model}, EMBEDDER_RUNTIME={runtime})"


def gc_between_requests() -> bool:
    """Whether the served processes collect garbage between requests (GC_BETWEEN_REQUESTS,
    passed on to gunicorn from this environment; true unless set otherwise)."""
    import environ

    value = os.environ.get("GC_BETWEEN_REQUESTS", "true").strip().lower()
    return value in environ.Env.BOOLEAN_TRUE_STRINGS


def read_synthetic_noises() -> dict:
    """The synthetic memories' noise per embedder, as `python -m bench calibrate` wrote it
    (bench/synthetic_noise.py)."""
    return json.loads(SYNTHETIC_NOISE_FILE.read_text()) if SYNTHETIC_NOISE_FILE.exists() else {}


def synthetic_noise_calibration() -> dict | None:
    """The calibration of the model the workers will run."""
    return read_synthetic_noises().get(embedder_model_name())


def settle(*, below: float = 0.8, longest: float = 180.0) -> None:
    """Wait (up to `longest` seconds) for the 1-minute load average to fall below `below`
    before timing: the previous database's concurrent clients, or the set-up's load, vacuum
    and checkpoint, leave it high for a while."""
    waited = 0.0
    while os.getloadavg()[0] >= below and waited < longest:
        time.sleep(5)
        waited += 5
    if waited:
        print(f"waited {waited:.0f} s for the machine to settle", flush=True)
