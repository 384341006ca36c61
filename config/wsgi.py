import os

from django.core.wsgi import get_wsgi_application

from config.unread_body import CloseWhenBodyUnread

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = CloseWhenBodyUnread(get_wsgi_application())
