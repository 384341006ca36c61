from django.urls import path

from review import views

app_name = "review"
urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("queue", views.queue, name="queue"),
    path("queue/bulk", views.bulk, name="bulk"),
    path("memories/<uuid:memory_id>/edit", views.edit, name="edit"),
]
