"""The Redis tier: every test here runs against a real ``redis-server`` (or a Redis Cluster) that a
fixture of ``tests/conftest.py`` starts on 127.0.0.1, one per test, with its own data folder."""
