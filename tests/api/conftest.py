"""The API tests' served app and tenant: the fixtures of ``tests/test_server.py``, which
every module here uses (each module gets its own server, as the fixture is module-scoped)."""

from tests.test_server import app_server, base_url, tenant

__all__ = ["app_server", "base_url", "tenant"]
