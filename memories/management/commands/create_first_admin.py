"""Create the first staff login of a fresh installation and print it."""

import hashlib
import secrets
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connection

from memories.models import User


def password_file() -> Path:
    """var/first-admin-password-<hash>.txt, one per database: the same checkout may serve
    SQLite one day and PostgreSQL the next, and each has its own admin and password."""
    database = connection.settings_dict
    identity = "|".join(
        str(database.get(part) or "") for part in ("ENGINE", "NAME", "HOST", "PORT")
    )
    digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
    return settings.BASE_DIR / "var" / f"first-admin-password-{digest}.txt"


# Where versions before the per-database files kept the password, whichever database wrote
# it last. Still read, but like the new file only printed if it is this database's password.
LEGACY_PASSWORD_FILE = Path("var") / "first-admin-password.txt"


class Command(BaseCommand):
    help = "Create a staff superuser 'admin' with a random password, once, and print the login."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")

    def handle(self, *args, username: str, **options):
        user = User.objects.filter(username=username).first()
        if user is None:
            password = secrets.token_urlsafe(12)
            User.objects.create_superuser(username=username, password=password, email="")
            path = password_file()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(password + "\n")
            path.chmod(0o600)
        else:
            stored = self._stored_password(user)
            if stored is None:
                self.stdout.write(
                    f"Staff login '{username}' exists; its password is not stored here."
                )
                return
            password = stored
        self.stdout.write(f"Staff login: username {username}  password {password}")

    def _stored_password(self, user: User) -> str | None:
        """The kept password if it still opens this database's login (not another
        database's, nor one the admin has since changed)."""
        for path in (password_file(), settings.BASE_DIR / LEGACY_PASSWORD_FILE):
            if path.exists():
                password = path.read_text().strip()
                if user.check_password(password):
                    return password
        return None
