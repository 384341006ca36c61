from django.urls import path

from review import users, views

app_name = "review"
urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("queue", views.queue, name="queue"),
    path("queue/bulk", views.bulk, name="bulk"),
    path("memories/<uuid:memory_id>/decide", views.decide, name="decide"),
    path("memories/<uuid:memory_id>/edit", views.edit, name="edit"),
    path("conversations/<str:kind>/<uuid:source_id>", views.conversation, name="conversation"),
    path("proposals", views.proposals, name="proposals"),
    path("entities", views.entities, name="entities"),
    path("entities/<uuid:entity_id>/edit", views.entity_edit, name="entity-edit"),
    path("entities/<uuid:entity_id>/merge", views.entity_merge, name="entity-merge"),
    path("proposals/<uuid:proposal_id>/decide", views.proposal_decide, name="proposal-decide"),
    path("extraction-settings", views.extraction_settings, name="extraction-settings"),
    path("users", users.users, name="users"),
    path("users/<uuid:user_id>", users.user, name="user"),
    path("users/<uuid:user_id>/export", users.user_export, name="user-export"),
    path("users/<uuid:user_id>/erase", users.user_erase_view, name="user-erase"),
]
