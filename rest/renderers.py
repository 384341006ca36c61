"""DRF's JSON renderer, timed as the request's `render` stage (ops.timing): turning the
serialised data into the bytes of the answer."""

from rest_framework import renderers

from ops import timing


class JSONRenderer(renderers.JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        with timing.stage("render"):
            try:
                return super().render(data, accepted_media_type, renderer_context)
            except UnicodeEncodeError:
                # A string with no UTF-8 form (a lone surrogate from a client's escape, echoed
                # in an error) is still valid JSON written as \u escapes.
                return _ASCII.render(data, accepted_media_type, renderer_context)


class _AsciiJSONRenderer(renderers.JSONRenderer):
    ensure_ascii = True


_ASCII = _AsciiJSONRenderer()
