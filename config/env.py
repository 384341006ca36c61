"""Reading the environment for config/settings*.py: typed and strict.

django-environ reads `DEBUG=maybe` as false and lets `RECALL_WEIGHT_RELEVANCE=1.5x` fail with a
bare ValueError deep in a traceback. Here every typed variable is checked when settings load,
and a wrong one stops start-up with one line naming the variable and the value expected:

    ImproperlyConfigured: RECALL_WEIGHT_RELEVANCE='1.5x': expected a number

An empty value counts as unset (compose files often pass `NAME=` through)."""

import ipaddress
import math
import re
import sys
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

NOTSET = environ.Env.NOTSET

TRUE_WORDS = {"true", "1", "yes", "on"}
FALSE_WORDS = {"false", "0", "no", "off"}
# DRF's throttle rates: a count per second, minute, hour or day.
RATE = re.compile(r"^\d+/(s|sec|second|m|min|minute|h|hour|d|day)$")


class ConfigurationError(ImproperlyConfigured):
    """A setting read from the environment has a value it cannot take."""


def _print_configuration_error(kind, value, traceback, *, previous=sys.excepthook):
    """A process that dies of a ConfigurationError (manage.py, gunicorn's master, celery)
    prints its one line, not a traceback through Django's settings machinery."""
    if issubclass(kind, ConfigurationError):
        print(f"ImproperlyConfigured: {value}", file=sys.stderr)
    else:
        previous(kind, value, traceback)


sys.excepthook = _print_configuration_error


class Env(environ.Env):
    """environ.Env whose bool, int, float, URL and rate readers refuse malformed values."""

    def _raw(self, var: str) -> str | None:
        raw = self.ENVIRON.get(var)
        return None if raw is None or not raw.strip() else raw.strip()

    def _typed(self, var: str, default, parse, expected: str):
        raw = self._raw(var)
        if raw is None:
            if default is NOTSET:
                raise ConfigurationError(f"{var} is not set: expected {expected}")
            return default
        try:
            return parse(raw)
        except ValueError:
            raise ConfigurationError(f"{var}={raw!r}: expected {expected}") from None

    def bool(self, var: str, default=NOTSET) -> bool:
        def parse(raw: str) -> bool:
            word = raw.lower()
            if word in TRUE_WORDS:
                return True
            if word in FALSE_WORDS:
                return False
            raise ValueError(raw)

        return self._typed(var, default, parse, "true or false (or 1/0, yes/no, on/off)")

    def int(self, var: str, default=NOTSET, *, minimum: int | None = None) -> int:
        def parse(raw: str) -> int:
            value = int(raw)
            if minimum is not None and value < minimum:
                raise ValueError(raw)
            return value

        expected = "a whole number" + (f" of at least {minimum}" if minimum is not None else "")
        return self._typed(var, default, parse, expected)

    def float(self, var: str, default=NOTSET) -> float:
        def parse(raw: str) -> float:
            value = float(raw)
            if not math.isfinite(value):
                raise ValueError(raw)
            return value

        return self._typed(var, default, parse, "a number")

    def rate(self, var: str, default=NOTSET) -> str:
        def parse(raw: str) -> str:
            if not RATE.match(raw):
                raise ValueError(raw)
            return raw

        return self._typed(var, default, parse, "a rate such as 30/minute (per s, m, h or d)")

    def choice(self, var: str, choices: tuple[str, ...], default=NOTSET) -> str:
        def parse(raw: str) -> str:
            if raw not in choices:
                raise ValueError(raw)
            return raw

        return self._typed(var, default, parse, "one of " + ", ".join(choices))

    def networks(self, var: str, default=NOTSET) -> list[str]:
        """Comma-separated IP networks (10.0.0.0/8) or addresses (127.0.0.1)."""

        def parse(raw: str) -> list[str]:
            networks = [item.strip() for item in raw.split(",") if item.strip()]
            for network in networks:
                ipaddress.ip_network(network, strict=False)
            return networks

        return self._typed(
            var, default, parse, "IP networks or addresses such as 10.0.0.0/8,127.0.0.1"
        )

    def http_url(self, var: str, default=NOTSET, *, example: str) -> str:
        """An http:// or https:// URL with a host, such as a provider's base URL."""
        raw = self._raw(var)
        if raw is None:
            if default is NOTSET:
                raise ConfigurationError(
                    f"{var} is not set: expected an http(s) URL such as {example}"
                )
            return default
        try:
            parts = urlsplit(raw)
            valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        except ValueError:  # a malformed IPv6 host: http://[::1
            valid = False
        if valid:
            return raw
        # A URL may carry a user and password before an @: then it is not echoed.
        shown = f"={raw!r}" if "@" not in raw else " (not shown: it holds an @)"
        raise ConfigurationError(f"{var}{shown}: expected an http(s) URL such as {example}")

    def db_url(self, var: str = "DATABASE_URL", default=NOTSET, engine=None) -> dict:
        # The URL may hold a password: name the scheme, never echo the value.
        url = self._raw(var) or default
        scheme = urlsplit(str(url)).scheme
        if scheme not in self.DB_SCHEMES:
            raise ConfigurationError(
                f"{var} has the scheme {scheme!r}: expected a database URL such as "
                "sqlite:////path/to/memory.sqlite3 or postgres://user:password@host:5432/name"
            )
        return self.db_url_config(url, engine=engine)

    db = db_url

    def cache_url(self, var: str = "CACHE_URL", default=NOTSET, backend=None) -> dict:
        url = self._raw(var) or default
        scheme = urlsplit(str(url)).scheme
        if scheme not in self.CACHE_SCHEMES:
            raise ConfigurationError(
                f"{var} has the scheme {scheme!r}: expected a cache URL such as "
                "redis://127.0.0.1:6379/1 or locmemcache://"
            )
        config = self.cache_url_config(url, backend=backend)
        # django-environ lower-cases the query options of Django's own Redis backend, the
        # base ones (KEY_PREFIX, TIMEOUT, ...) too, which Django then ignores.
        for key in list(config):
            if key.upper() in self._CACHE_BASE_OPTIONS and key != key.upper():
                config[key.upper()] = config.pop(key)
        return config

    cache = cache_url
