"""Attacks on the webhook target filter: every spelling of an inside address is refused, a URL that cannot be read
is a 422 (it was a 500 for any logged-in user), and the sender connects to the address it checked, so a name that
answers a public address to the check and 127.0.0.1 to the connection (DNS rebinding) reaches nothing inside.

The resolver is faked (socket.getaddrinfo, for the test's own names only); the receiving servers are real."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.errors import Invalid
from app.main import create_app
from app.webhooks.sender import WebhookSender
from app.webhooks.service import new_secret
from app.webhooks.targets import check_target
from tests.conftest import BOTH_DATABASES
from tests.ops.receiver import Receiver, running_receiver

INSIDE = [
    "http://127.0.0.1:9/hook",
    "http://localhost/hook",
    "http://10.1.2.3/hook",
    "http://192.168.0.10/hook",
    "http://172.16.0.1/hook",
    "http://100.64.0.1/hook",  # carrier-grade NAT
    "http://169.254.169.254/latest/meta-data",  # the cloud metadata service
    "http://0.0.0.0/hook",
    "http://224.0.0.1/hook",  # multicast
    "http://239.255.255.250:1900/",  # multicast (SSDP)
    "http://240.0.0.1/hook",  # reserved
    "http://255.255.255.255/hook",
    "http://192.0.0.8/hook",  # IETF protocol assignments
    "http://192.88.99.1/hook",  # 6to4 relay anycast
    "http://2130706433/hook",  # 127.0.0.1 in decimal
    "http://0x7f.1/hook",  # 127.0.0.1 in hex, two parts
    "http://0x7f000001/hook",
    "http://127.1/hook",
    "http://0177.0.0.1/hook",  # octal: httpx refuses to read it
    "http://[::1]/hook",
    "http://[::]/hook",
    "http://[fe80::1]/hook",
    "http://[fec0::1]/hook",  # site-local
    "http://[fd00::1]/hook",  # unique local
    "http://[ff02::1]/hook",  # multicast
    "http://[64:ff9b::7f00:1]/hook",  # NAT64 of 127.0.0.1
    "http://[64:ff9b::a9fe:a9fe]/hook",  # NAT64 of the metadata service
    "http://[64:ff9b::808:808]/hook",  # NAT64 of a public address: refused too, the prefix is not for us
    "http://[64:ff9b:1::a00:1]/hook",  # local-use NAT64
    "http://[2002:7f00:1::]/hook",  # 6to4 of 127.0.0.1
    "http://[2002:808:808::1]/hook",  # 6to4 of a public address
    "http://[::127.0.0.1]/hook",  # IPv4-compatible
    "http://[::ffff:127.0.0.1]/hook",  # IPv4-mapped
    "http://[::ffff:7f00:1]/hook",
    "http://[::ffff:10.0.0.1]/hook",
    "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook",  # Teredo
]
UNREADABLE = [
    "http://example.com:99999/hook",
    "http://example.com:-1/hook",
    "http://example.com:0/hook",
    "http://example.com:http/hook",
    "http://[::1/hook",
    "http://[::1]x/hook",
    "http://[not-an-address]/hook",
    "ftp://example.com/hook",
    "http:///hook",
    "http://user:pw@example.com/hook",
]


@pytest.mark.parametrize("url", INSIDE)
def test_an_inside_address_is_refused_however_it_is_spelled(url: str) -> None:
    with pytest.raises(Invalid) as refused:
        check_target(url, allow_private=False)
    assert refused.value.field == "url"


@pytest.mark.parametrize("url", ["http://[::1]:8080/hook", "http://127.0.0.1:8080/hook"])
def test_private_targets_are_allowed_when_the_setting_says_so(url: str) -> None:
    assert check_target(url, allow_private=True).addresses


@pytest.fixture
def strict_client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings.model_copy(update={"webhook_allow_private": False, "workers": 0}))) as c:
        yield c


# SQLite only, here and below: the URL is refused before anything is stored, the same on either backend.
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize(
    "url", [*UNREADABLE, "http://[64:ff9b::7f00:1]/", "http://[2002:7f00:1::]/", "http://[::127.0.0.1]/",
            "http://224.0.0.1/", "http://2130706433/", "http://0x7f.1/"],
)  # fmt: skip
def test_registration_answers_422_in_the_error_shape(strict_client: TestClient, accounts, url: str) -> None:  # type: ignore[no-untyped-def]
    headers = accounts["alice"].headers
    resp = strict_client.post("/api/v1/webhooks", json={"url": url, "events": ["submission.graded"]}, headers=headers)
    assert resp.status_code == 422, resp.text
    body = resp.json()
    assert set(body) == {"detail", "request_id"} and body["request_id"]
    assert [(d["loc"], d["type"]) for d in body["detail"]] == [(["body", "url"], "invalid")]
    assert strict_client.get("/api/v1/webhooks", headers=headers).json() == []


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("url", ["http://example.com:99999/", "http://[::1/"])
def test_a_bad_url_is_a_422_with_private_targets_allowed_too(client: TestClient, accounts, url: str) -> None:  # type: ignore[no-untyped-def]
    resp = client.post("/api/v1/webhooks", json={"url": url, "events": ["submission.graded"]},
                       headers=accounts["alice"].headers)  # fmt: skip
    assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["body", "url"], resp.text


# --- the address connected to is the address checked ------------------------------------------------------------

PUBLIC = "93.184.215.14"  # a global address: the check lets it through (nothing answers it from the test machine)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as state:
        yield state


def fake_resolver(monkeypatch: pytest.MonkeyPatch, name: str, answers: list[str]) -> list[str]:
    """getaddrinfo answering ``answers`` in turn (the last repeats) for ``name``; every other name as the system
    does. Returns the log of lookups of ``name``."""
    real: Callable[..., Any] = socket.getaddrinfo
    asked: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != name:
            return real(host, port, *args, **kwargs)
        answer = answers[min(len(asked), len(answers) - 1)]
        asked.append(answer)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answer, int(port)))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


def send_once(settings: Settings, sessions, url: str, receiver: Receiver) -> tuple[int | None, str | None]:  # type: ignore[no-untyped-def]
    """One attempt of the real sender (its own client and checks), signed with the receiver's secret."""
    receiver.secret = new_secret()
    sender = WebhookSender(settings, sessions)
    try:
        status, error, _, _ = sender._send(url, receiver.secret, "msg_target", '{"type":"webhook.ping"}')
    finally:
        sender._http.close()
    return status, error


@pytest.mark.parametrize("database_url", BOTH_DATABASES, indirect=True)
def test_dns_rebinding_does_not_reach_a_server_on_loopback(  # type: ignore[no-untyped-def]
    settings: Settings, sessions, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name answers a public address to the check, then 127.0.0.1, where a real server listens on the URL's
    port: the POST goes to the public address (and fails there), never to 127.0.0.1."""
    port = int(receiver.url.rsplit(":", 1)[1].split("/")[0])
    asked = fake_resolver(monkeypatch, "rebind.test", [PUBLIC, "127.0.0.1"])
    strict = settings.model_copy(update={"webhook_allow_private": False, "webhook_timeout_s": 1.0})
    status, error = send_once(strict, sessions, f"http://rebind.test:{port}/hook", receiver)
    assert receiver.received == []
    assert status is None and error is not None
    assert asked == [PUBLIC]  # resolved once, for the check; the connection did not ask again


@pytest.mark.parametrize("database_url", BOTH_DATABASES, indirect=True)
def test_the_checked_address_is_used_with_the_urls_own_host_header(  # type: ignore[no-untyped-def]
    settings: Settings, sessions, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other half: the POST reaches the server at the checked address, and says the URL's host. A second
    lookup would answer an address where nothing listens."""
    port = int(receiver.url.rsplit(":", 1)[1].split("/")[0])
    asked = fake_resolver(monkeypatch, "hook.test", ["127.0.0.1", "10.255.255.1"])
    allowed = settings.model_copy(update={"webhook_allow_private": True, "webhook_timeout_s": 5.0})
    status, error = send_once(allowed, sessions, f"http://hook.test:{port}/hook", receiver)
    assert (status, error) == (200, None)
    assert [(r["headers"]["host"], r["verified"]) for r in receiver.received] == [(f"hook.test:{port}", True)]
    assert asked == ["127.0.0.1"]


def _tls_files(tmp_path: Path, name: str) -> tuple[Path, Path, Path]:
    """A CA and a certificate it signed for ``name`` (no IP in it): (ca.pem, cert.pem, key.pem)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.now(UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(1).not_valid_before(now - timedelta(days=1)).not_valid_after(now + timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))  # fmt: skip
    leaf = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(2)
            .not_valid_before(now - timedelta(days=1)).not_valid_after(now + timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .sign(ca_key, hashes.SHA256()))  # fmt: skip
    paths = tmp_path / "ca.pem", tmp_path / "cert.pem", tmp_path / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))  # fmt: skip
    return paths


@pytest.mark.parametrize("database_url", BOTH_DATABASES, indirect=True)
@pytest.mark.parametrize(("certified", "delivered"), [("hook.test", True), ("other.test", False)])
def test_https_names_the_url_host_for_sni_and_the_certificate(  # type: ignore[no-untyped-def]
    settings: Settings, sessions, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, certified: str, delivered: bool,
) -> None:  # fmt: skip
    """A real TLS server on 127.0.0.1 with a certificate for a name only: the connection goes to the checked
    address, and TLS sends and verifies the URL's name (a certificate for another name is refused)."""
    ca, cert, key = _tls_files(tmp_path, certified)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    seen_sni: list[str | None] = []
    server_context.sni_callback = lambda sock, name, ctx: seen_sni.append(name)
    with running_receiver(ssl_context=server_context) as tls_receiver:
        tls_port = int(tls_receiver.url.rsplit(":", 1)[1].split("/")[0])
        fake_resolver(monkeypatch, "hook.test", ["127.0.0.1"])
        allowed = settings.model_copy(update={"webhook_allow_private": True, "webhook_timeout_s": 5.0})
        sender = WebhookSender(allowed, sessions)
        # The sender's own client, trusting the test CA instead of the public ones.
        sender._http.close()
        sender._http = httpx.Client(timeout=5.0, follow_redirects=False, trust_env=False,
                                    limits=httpx.Limits(max_keepalive_connections=0),
                                    verify=ssl.create_default_context(cafile=str(ca)))  # fmt: skip
        tls_receiver.secret = new_secret()
        try:
            status, error, _, _ = sender._send(
                f"https://hook.test:{tls_port}/hook", tls_receiver.secret, "msg_tls", "{}"
            )
        finally:
            sender._http.close()
        assert seen_sni == ["hook.test"]
        if delivered:
            assert (status, error) == (200, None)
            assert [r["headers"]["host"] for r in tls_receiver.received] == [f"hook.test:{tls_port}"]
        else:
            assert status is None and error is not None and "CERTIFICATE_VERIFY_FAILED" in error, error
            assert tls_receiver.received == []
