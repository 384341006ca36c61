"""What every settings module starts from: the checkout's root and the one Env they all read
the environment through (config/env.py), with .env loaded, plus DEBUG, which several read."""

from pathlib import Path

from config.env import Env

BASE_DIR = Path(__file__).resolve().parent.parent

# The environment wins over .env; a malformed typed value stops start-up (config/env.py).
env = Env()
if (BASE_DIR / ".env").exists():
    env.read_env(BASE_DIR / ".env")

DEBUG = env.bool("DEBUG", default=False)
