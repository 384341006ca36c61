"""DRF's JSON renderer, timed as the request's `render` stage (ops.timing): turning the
serialised data into the bytes of the answer."""

from rest_framework import renderers

from ops import timing


class JSONRenderer(renderers.JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        with timing.stage("render"):
            return super().render(data, accepted_media_type, renderer_context)
