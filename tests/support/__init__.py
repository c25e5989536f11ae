"""Helpers the tests share: flows, loopback model servers and worker processes (not tests).

Test files import them as `from support.flows import ...`; `tests/` is on `sys.path` through
`tests/conftest.py`. A worker script here is started as its own process by the test that needs
it, by path.
"""
