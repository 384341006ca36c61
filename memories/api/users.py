"""End users (review scope or staff) and the caller's own account: GET/POST /api/users,
GET/DELETE /api/users/{id}, GET /api/users/{id}/profile, GET /api/me, GET /api/me/profile,
POST /api/me/erase."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAdminUser, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.accounts import users as end_users
from memories.accounts.keys import validate_external_id
from memories.errors import InvalidInput
from memories.models import ApiKeyScope, User
from memories.profiles.contents import profile_contents
from memories.representations import ProfileSerializer, UserSerializer
from rest.fields import StrictInputMixin
from rest.inputs import caller, parse_uuid, validated
from rest.permissions import KeyHasScope


class UserCreateSerializer(StrictInputMixin, serializers.Serializer):
    external_id = serializers.CharField(max_length=255, trim_whitespace=False)


class MeSerializer(serializers.ModelSerializer):
    class Meta:
        model = User
        fields = ["id", "username", "external_id", "is_staff"]
        read_only_fields = fields


class EraseSerializer(StrictInputMixin, serializers.Serializer):
    confirm = serializers.CharField(max_length=255, trim_whitespace=False)


def validate_external_id_param(raw: str) -> str:
    """The ?external_id= filter: printable text, as X-User-Id (a NUL would reach the
    database, which refuses it). Raises InvalidInput naming external_id."""
    try:
        return validate_external_id(raw)
    except InvalidInput:
        raise InvalidInput(
            "external_id must be 1 to 255 printable characters.", field="external_id"
        ) from None


class UserViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Users of the service, for a product backend's review key or staff."""

    permission_classes = [IsAuthenticated, KeyHasScope, IsAdminUser]
    serializer_class = UserSerializer
    key_scope = ApiKeyScope.REVIEW
    key_acts_as_itself = True
    lookup_value_regex = "[^/]+"
    list_query_params = ("external_id",)

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the OpenAPI schema has no caller
            return User.objects.none()
        queryset = end_users.users_with_counts(actor=self.request.user)
        external_id = self.request.query_params.get("external_id")
        if external_id is not None:
            queryset = queryset.filter(external_id=validate_external_id_param(external_id))
        return queryset

    def get_object(self):
        return end_users.user_get(
            user_id=parse_uuid(self.kwargs["pk"], what="user"), actor=self.request.user
        )

    @extend_schema(request=UserCreateSerializer, responses={201: UserSerializer})
    def create(self, request):
        data = validated(UserCreateSerializer, request)
        # A key's end users are of its tenant; a local staff login's, of the default tenant.
        user = end_users.external_user_create(
            external_id=data["external_id"], tenant=request.user.tenant
        )
        return Response(
            UserSerializer(end_users.user_get(user_id=user.id, actor=request.user)).data,
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(responses=ProfileSerializer)
    @action(detail=True, methods=["get"])
    def profile(self, request, pk=None):
        """The user's profile, as GET /api/me/profile gives it to them."""
        user = self.get_object()
        contents = profile_contents(user)
        return Response(ProfileSerializer(contents, context={"request": request}).data)

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        # A user whose erasure was stopped half-way is hidden from GET, but DELETE finds
        # them and finishes it (204), so a client that retries a failed DELETE is done.
        user = end_users.erasable_user_get(
            user_id=parse_uuid(self.kwargs["pk"], what="user"), actor=request.user
        )
        end_users.user_erase(user=user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeView(APIView):
    """Who the request acts as."""

    @extend_schema(responses=MeSerializer)
    def get(self, request):
        return Response(MeSerializer(request.user).data)


class MeProfileView(APIView):
    """Who the caller is: their pinned memories, current memories by category, entities by
    relation, and the summary written from them in the background."""

    @extend_schema(responses=ProfileSerializer)
    def get(self, request):
        contents = profile_contents(caller(request))
        return Response(ProfileSerializer(contents, context={"request": request}).data)


class MeEraseView(APIView):
    """Erase the caller and all their data for good."""

    @extend_schema(request=EraseSerializer, responses={204: None})
    def post(self, request):
        data = validated(EraseSerializer, request)
        end_users.self_erase(user=request.user, confirm=data["confirm"])
        return Response(status=status.HTTP_204_NO_CONTENT)
