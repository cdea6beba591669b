"""compose.yaml end to end, in order on one project: up and healthy, a passkey sign-up and sign-in through the
gateway, the verification and recovery mail read from the mail catcher, `up` again after a stop in the middle of
starting (the data kept), and `down`."""

from __future__ import annotations

import email
import email.policy
import re
import subprocess
import time
import uuid

from conftest import PODMAN, Compose
from openssl_authenticator import Authenticator

STATE = {}


def test_up_starts_every_service_in_order_and_healthy(compose: Compose):
    seconds = compose.up()
    for service, spec in compose.services.items():
        if "healthcheck" in spec:
            assert compose.healthy(service), service
    for one_shot in ("setup", "migrate"):
        assert compose.state(one_shot)["ExitCode"] == 0
    status, ready = compose.request("GET", "/readyz")
    assert status == 200 and ready["status"] == "ready", ready
    # Only the gateway is published, on loopback.
    ports = subprocess.run(PODMAN + ["port", compose.container("gateway")], capture_output=True, text=True).stdout
    assert ports.strip() == f"8080/tcp -> 127.0.0.1:{compose.gateway_port}", ports
    assert subprocess.run(PODMAN + ["port", compose.container("postgres")], capture_output=True,
                          text=True).stdout.strip() == ""
    print(f"compose stack up and healthy in {seconds:.1f} s")


def test_the_token_key_and_certificates_reach_only_their_services(compose: Compose):
    mounts = {}
    for service in compose.services:
        result = subprocess.run(PODMAN + ["inspect", "--format", "{{range .Mounts}}{{.Destination}} {{end}}",
                                          compose.container(service)], capture_output=True, text=True, check=True)
        mounts[service] = set(result.stdout.split())
    assert {s for s, m in mounts.items() if "/etc/passkey/token-kek" in m} == {
        "session-service", "verification-service"}
    assert {s for s, m in mounts.items() if "/etc/passkey/grpc" in m} == {
        "gateway", "challenge-service", "verification-service", "session-service"}
    assert {s for s, m in mounts.items() if "/state/grpc-ca" in m} == {"setup"}
    key = (compose.volume_path("token-kek") / "key").read_text()
    assert re.fullmatch(r"[0-9a-f]{64}\n?", key), "the token KEK is not 32 bytes as 64 hex digits"


def test_passkey_sign_up_and_sign_in_through_the_gateway(compose: Compose, tmp_path_factory):
    authenticator = Authenticator(tmp_path_factory.mktemp("passkeys"))
    address = f"compose-{uuid.uuid4().hex[:12]}@example.com"
    status, start = compose.request("POST", "/v1/passkeys/account-registrations",
                                    {"email": address, "displayName": "Grace"})
    assert status == 200, start
    assert start["relyingPartyID"] == "localhost"
    body = dict(authenticator.registration(start, compose.origin), registrationID=start["registrationID"])
    status, created = compose.request("POST", "/v1/passkeys/account-registrations/finish", body)
    assert status == 201, created

    status, begun = compose.request("POST", "/v1/passkeys/authentications", {})
    assert status == 200, begun
    status, session = compose.request("POST", "/v1/passkeys/authentications/finish",
                                      authenticator.assertion(begun, compose.origin))
    assert status == 200, session
    status, checked = compose.request("GET", "/v1/session", token=session["accessToken"])
    assert status == 200, checked
    STATE.update(address=address, authenticator=authenticator, token=session["accessToken"],
                 account=checked["accountID"])


def mail_to(compose: Compose, address: str, count: int, timeout: float = 60) -> list[tuple[str, str]]:
    """The (code, file in the volume) of every message to ADDRESS the catcher printed, once there are COUNT."""
    pattern = re.compile(r"mail to %s: .*\[code (\d{8})\] \((\S+\.eml)\)" % re.escape(address))
    deadline = time.monotonic() + timeout
    while True:
        found = pattern.findall(compose.logs("mail-catcher"))
        if len(found) >= count:
            return found
        assert time.monotonic() < deadline, (
            f"{len(found)} of {count} messages to {address} within {timeout} s:\n{compose.logs('mail-catcher')}"
            f"\n{compose.logs('session-service')[-3000:]}")
        time.sleep(0.5)


def test_verification_and_recovery_mail_are_read_from_the_catcher(compose: Compose):
    address, token = STATE["address"], STATE["token"]
    # A new account is sent a verification code.
    [(code, path)] = mail_to(compose, address, 1)
    kept = compose.volume_path("mail") / path.removeprefix("/var/mail/passkey/")
    message = email.message_from_bytes(kept.read_bytes(), policy=email.policy.default)
    assert message["To"] == address and code in message.get_body(("plain",)).get_content()
    status, verified = compose.request("POST", "/v1/account/email/verify", {"code": code}, token=token)
    assert status == 204, verified

    # Verified, the address can recover the account: the code comes by mail and gives a recovery session.
    status, _ = compose.request("POST", "/v1/recovery", {"email": address})
    assert status == 202
    recovery_code = mail_to(compose, address, 2)[-1][0]
    status, recovered = compose.request("POST", "/v1/recovery/finish", {"email": address, "code": recovery_code})
    assert status == 200, recovered
    assert recovered["authenticationMethod"] == "recovery" and recovered["accountID"] == STATE["account"]


def test_up_again_after_a_stop_in_the_middle_of_starting(compose: Compose):
    compose.run("stop", "-t", "10")
    # `up` interrupted once Postgres runs again (setup ran, the migrations not yet), and everything stopped.
    starting = compose.start_up()
    deadline = time.monotonic() + 120
    while not compose.state("postgres").get("Running"):
        assert starting.poll() is None and time.monotonic() < deadline, starting.communicate()[0]
        time.sleep(0.2)
    starting.terminate()
    starting.wait(30)
    compose.run("stop", "-t", "10")
    seconds = compose.up()
    print(f"compose stack up again in {seconds:.1f} s")
    # The same database, token key and certificates: the passkey made before signs in.
    status, begun = compose.request("POST", "/v1/passkeys/authentications", {})
    assert status == 200, begun
    status, session = compose.request("POST", "/v1/passkeys/authentications/finish",
                                      STATE["authenticator"].assertion(begun, compose.origin))
    assert status == 200, session
    status, checked = compose.request("GET", "/v1/session", token=session["accessToken"])
    assert status == 200 and checked["accountID"] == STATE["account"], checked


def test_down_removes_the_containers_and_volumes(compose: Compose):
    compose.down()
    left = subprocess.run(PODMAN + ["ps", "-a", "--filter", f"label=com.docker.compose.project={compose.project}",
                                    "--format", "{{.Names}}"], capture_output=True, text=True).stdout.split()
    assert left == []
    volumes = subprocess.run(PODMAN + ["volume", "ls", "--format", "{{.Name}}"], capture_output=True,
                             text=True).stdout.split()
    assert [v for v in volumes if v.startswith(compose.project + "_")] == []
