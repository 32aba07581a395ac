from rest_framework.permissions import SAFE_METHODS, BasePermission

from ..selectors import user_is_host


class IsHostOrReadOnly(BasePermission):
    message = "Only the challenge's hosts can change it."

    def has_object_permission(self, request, view, obj):
        return request.method in SAFE_METHODS or user_is_host(user=request.user, challenge=obj)
