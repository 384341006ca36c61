"""Create the first staff login of a fresh installation and print it."""

import secrets

from django.conf import settings
from django.core.management.base import BaseCommand

from memories.models import User

PASSWORD_FILE = settings.BASE_DIR / "var" / "first-admin-password.txt"


class Command(BaseCommand):
    help = "Create a staff superuser 'admin' with a random password, once, and print the login."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")

    def handle(self, *args, username: str, **options):
        user = User.objects.filter(username=username).first()
        if user is None:
            password = secrets.token_urlsafe(12)
            User.objects.create_superuser(username=username, password=password, email="")
            PASSWORD_FILE.write_text(password + "\n")
            PASSWORD_FILE.chmod(0o600)
        elif PASSWORD_FILE.exists():
            password = PASSWORD_FILE.read_text().strip()
        else:
            self.stdout.write(f"Staff login '{username}' exists; its password is not stored here.")
            return
        self.stdout.write(f"Staff login: username {username}  password {password}")
