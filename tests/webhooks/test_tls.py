"""An https target: the attempt connects to the address the guard checked, yet TLS keeps the
URL's host name (SNI, and the certificate is verified against it, not skipped)."""

import socket
import ssl
import subprocess
import threading

import pytest

from webhooks.models import WebhookAttempt

pytestmark = pytest.mark.usefixtures("no_embedder")


@pytest.fixture
def tls_server(tmp_path):
    """A TLS listener on 127.0.0.1 with a self-signed certificate for localhost; it notes the
    server name each client asks for."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    names: list[str | None] = []
    context.sni_callback = lambda connection, name, ctx: names.append(name)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        connection, _ = listener.accept()
        try:
            with context.wrap_socket(connection, server_side=True):
                pass
        except (ssl.SSLError, OSError):
            pass  # the client refuses our certificate: expected

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], names
    listener.close()
    thread.join(5)


def test_an_https_attempt_sends_the_host_name_and_verifies_the_certificate(
    staff_api, alice, tls_server, django_capture_on_commit_callbacks
):
    port, names = tls_server
    created = staff_api.post(
        "/api/webhooks",
        {"url": f"https://localhost:{port}/hooks", "events": ["memory.created"]},
        format="json",
    )
    assert created.status_code == 201, created.json()
    with django_capture_on_commit_callbacks(execute=True):
        alice.post("/api/memories", {"key": "home", "value": "Porto"}, format="json")

    [attempt] = WebhookAttempt.objects.all()
    assert names == ["localhost"]  # SNI: the host name, though it connected to an address
    assert attempt.outcome == "error" and "CERTIFICATE_VERIFY_FAILED" in attempt.error
