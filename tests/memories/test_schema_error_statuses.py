"""The error responses the OpenAPI schema lists (ErrorsAutoSchema.error_statuses) for views
whose permissions are composed (IsAuthenticated | IsAdminUser): such an entry is an operand
holder, not a class, and used to make the schema generation raise TypeError in issubclass."""

from django.urls import path
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny, IsAdminUser, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView


class ComposedPermissionsView(APIView):
    permission_classes = [IsAuthenticated | IsAdminUser]

    @extend_schema(responses={200: None})
    def get(self, request):
        return Response({})


class OpenView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(responses={200: None})
    def get(self, request):
        return Response({})


def test_composed_permissions_answer_401_and_403_and_allow_any_does_not():
    generator = SchemaGenerator(
        patterns=[
            path("composed", ComposedPermissionsView.as_view()),
            path("open", OpenView.as_view()),
        ]
    )
    schema = generator.get_schema(request=None, public=True)
    composed = schema["paths"]["/composed"]["get"]["responses"]
    assert {"401", "403"} <= set(composed)
    assert not {"401", "403"} & set(schema["paths"]["/open"]["get"]["responses"])
