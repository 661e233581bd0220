"""Settings fail closed: without DEBUG=1 (production, the default) and without SECRET_KEY, Django
and the web server refuse to start, saying what to set; collecting static files (a build step)
needs no secret."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.stack import ROOT

MESSAGE = "SECRET_KEY is not set and DEBUG is off"
SETUP = "import django; django.setup(); from django.conf import settings; print('started', settings.DEBUG)"


def env_without_secret(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG", "REQUIRE_SECRET_KEY")}
    return {**env, "DJANGO_SETTINGS_MODULE": "web.settings", **extra}


def python(argv: list[str], env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("debug", [{}, {"DEBUG": "0"}, {"DEBUG": "false"}])
def test_production_without_a_secret_key_refuses_to_start(debug):
    done = python(["-c", SETUP], env_without_secret(**debug))
    assert done.returncode != 0
    assert "started" not in done.stdout
    assert MESSAGE in done.stderr
    assert "ImproperlyConfigured" in done.stderr


def test_the_web_server_refuses_to_start_without_a_secret_key():
    done = python(["-m", "web.server", "-e", "tcp:port=0:interface=127.0.0.1", "web.asgi:application"],
                  env_without_secret(DEBUG="0"), timeout=60)
    assert done.returncode != 0
    assert MESSAGE in done.stderr


@pytest.mark.parametrize("command", [["migrate", "--check"], ["shell", "-c", "print(1)"]])
def test_management_commands_refuse_too(command):
    done = python(["manage.py", *command], env_without_secret(DEBUG="0"))
    assert done.returncode != 0
    assert MESSAGE in done.stderr


def test_collecting_static_files_needs_no_secret():
    """A build step (scripts/lib.sh build_frontend, a container build) collects static files
    before any secret exists."""
    done = python(["manage.py", "collectstatic", "--noinput", "--dry-run", "-v0"], env_without_secret(DEBUG="0"))
    assert done.returncode == 0, done.stderr
    assert MESSAGE not in done.stderr


@pytest.mark.parametrize("env", [{"DEBUG": "1"}, {"DEBUG": "0", "SECRET_KEY": "k" * 50},
                                 {"DEBUG": "0", "REQUIRE_SECRET_KEY": "0"}])
def test_development_or_a_key_starts(env):
    done = python(["-c", SETUP], env_without_secret(**env))
    assert done.returncode == 0, done.stderr
    assert "started" in done.stdout


def test_a_development_machine_may_ask_for_the_key_too():
    done = python(["-c", SETUP], env_without_secret(DEBUG="1", REQUIRE_SECRET_KEY="1"))
    assert done.returncode != 0
    assert "SECRET_KEY is not set" in done.stderr


def test_the_key_in_use_is_the_one_given():
    done = python(["-c", "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"],
                  env_without_secret(DEBUG="0", SECRET_KEY="given-" + "k" * 40))
    assert done.stdout.strip() == "given-" + "k" * 40


# Production behind TLS ----------------------------------------------------------------------------

DEPLOYED = {"DEBUG": "0", "SECRET_KEY": "a-long-random-production-key-" + "Zq8" * 12,
            "ALLOWED_HOSTS": "play.example.org", "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend"}
SECURITY = ("import django; django.setup(); from django.conf import settings as s; "
            "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS, "
            "getattr(s, 'SECURE_PROXY_SSL_HEADER', None), s.SECURE_SSL_REDIRECT)")


def test_a_deployment_passes_djangos_deploy_check():
    done = python(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], env_without_secret(**DEPLOYED))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout, done.stdout + done.stderr
    assert "WARNING" not in done.stderr


def test_behind_a_tls_proxy_cookies_are_secure_and_the_proxy_says_https():
    done = python(["-c", SECURITY], env_without_secret(**DEPLOYED, TRUSTED_PROXIES="1"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "31536000", "('HTTP_X_FORWARDED_PROTO',", "'https')", "False"]


def test_without_trusted_proxies_no_header_says_https():
    """A client could send X-Forwarded-Proto itself."""
    done = python(["-c", SECURITY], env_without_secret(**DEPLOYED))
    assert "None" in done.stdout.split()


def test_redirecting_to_https_is_asked_for():
    done = python(["-c", SECURITY], env_without_secret(**DEPLOYED, SECURE_SSL_REDIRECT="1"))
    assert done.stdout.split()[-1] == "True"


@pytest.mark.parametrize("env", [{"DEBUG": "1"}, {"DEBUG": "0", "SECRET_KEY": "k" * 50}])
def test_this_machine_over_plain_http_keeps_plain_cookies(env):
    """Development (DEBUG=1), and a production build tried on 127.0.0.1 (the test suite), are http."""
    done = python(["-c", SECURITY], env_without_secret(**env))
    assert done.stdout.split()[:2] == ["False", "False"]
