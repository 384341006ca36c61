"""Lift a login lockout (django-axes, config/login_throttle.py) for every serving process:
the failures are counted in database rows, which this deletes."""

from django.core.management.base import BaseCommand, CommandError

from config.login_throttle import login_unlock


class Command(BaseCommand):
    help = (
        "Let a locked-out login in again: clear the failed logins counted against a username "
        "(from every address), an address (for every username), or all of them."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--username",
            action="append",
            default=[],
            metavar="NAME",
            help="A username whose lockout to lift (repeat for several).",
        )
        parser.add_argument(
            "--address",
            action="append",
            default=[],
            metavar="IP",
            help="A client address whose lockout to lift (repeat for several).",
        )
        parser.add_argument(
            "--all", action="store_true", dest="everyone", help="Lift every lockout."
        )

    def handle(self, *args, username: list[str], address: list[str], everyone: bool, **options):
        if not (username or address or everyone):
            raise CommandError("Name what to unlock: --username NAME, --address IP, or --all.")
        deleted = login_unlock(usernames=username, addresses=address, everyone=everyone)
        who = "every login" if everyone else ", ".join([*username, *address])
        if deleted:
            self.stdout.write(f"Unlocked {who}: {deleted} failed-login record(s) cleared.")
        else:
            self.stdout.write(f"Nothing to clear for {who}: no failed logins are counted.")
