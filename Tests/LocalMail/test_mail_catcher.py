"""The mail catcher with a real stack, and on the wire."""

import email
import email.policy
import re
import smtplib
import socket
import uuid

LINE = re.compile(r"^mail to (?P<to>.+?): (?P<subject>.*?)(?: \[code (?P<code>\d{8})\])? \((?P<file>[^)]+\.eml)\)$")


def printed(catcher):
    line = catcher.next_line()
    found = LINE.match(line)
    assert found, line
    return found


def test_the_printed_codes_verify_the_address_and_recover_the_account(stack, module_catcher):
    address = f"local-{uuid.uuid4().hex[:10]}@example.com"
    created = stack.request("POST", "/v1/accounts/password",
                            {"email": address, "password": "local mail password", "displayName": "Ada"})
    assert created.status == 201, created.body
    token = stack.request("POST", "/v1/sessions/password",
                          {"email": address, "password": "local mail password"}).json()["accessToken"]

    verification = printed(module_catcher)
    assert verification["to"] == address
    assert "Local Mail" in verification["subject"] and verification["code"]
    verified = stack.request("POST", "/v1/account/email/verify", {"code": verification["code"]}, token=token)
    assert verified.status == 204, verified.body

    assert stack.request("POST", "/v1/recovery", {"email": address}).status == 202
    recovery = printed(module_catcher)
    assert recovery["to"] == address and "recovery code" in recovery["subject"]
    assert recovery["code"] and recovery["code"] != verification["code"]
    finished = stack.request("POST", "/v1/recovery/finish", {"email": address, "code": recovery["code"]})
    assert finished.status == 200, finished.body
    assert finished.json()["authenticationMethod"] == "recovery"

    # Each message is kept whole as the .eml file the line names.
    for line in (verification, recovery):
        message = email.message_from_bytes(
            open(line["file"], "rb").read(), policy=email.policy.default)
        assert str(message["To"]) == address and str(message["Subject"]) == line["subject"]
        assert message["From"].addresses[0].addr_spec == "no-reply@localhost"
        assert line["code"] in message.get_body(("plain",)).get_content()


def test_messages_are_kept_byte_for_byte_with_dots_unstuffed(catcher):
    body = "Line one\r\n.starts with a dot\r\n..two dots\r\n    12345678\r\n"
    message = f"From: a@localhost\r\nTo: b@localhost\r\nSubject: dots\r\n\r\n{body}"
    with smtplib.SMTP("127.0.0.1", catcher.port, timeout=10) as client:
        client.sendmail("a@localhost", ["b@localhost", "c@localhost"], message)
        # A second message on the same connection, after a reset.
        client.rset()
        client.sendmail("a@localhost", ["d@localhost"], "Subject: second\r\n\r\nno code here\r\n")
    first, second = printed(catcher), printed(catcher)
    assert (first["to"], first["subject"], first["code"]) == ("b@localhost, c@localhost", "dots", "12345678")
    assert open(first["file"], "rb").read() == message.encode()
    assert (second["to"], second["subject"], second["code"]) == ("d@localhost", "second", None)
    assert len(list(catcher.directory.glob("*.eml"))) == 2


def test_out_of_order_commands_are_refused_and_keep_nothing(catcher):
    with socket.create_connection(("127.0.0.1", catcher.port), timeout=10) as connection:
        reader = connection.makefile("rb")
        assert reader.readline().startswith(b"220")

        def send(command):
            connection.sendall(command + b"\r\n")
            return reader.readline()

        assert send(b"RCPT TO:<b@localhost>").startswith(b"503")
        assert send(b"DATA").startswith(b"503")
        assert send(b"VRFY b@localhost").startswith(b"502")
        assert send(b"X" * 5000).startswith(b"")  # a line over the limit ends the session
    assert list(catcher.directory.glob("*.eml")) == []
    # The catcher still serves after that.
    with smtplib.SMTP("127.0.0.1", catcher.port, timeout=10) as client:
        client.sendmail("a@localhost", ["b@localhost"], "Subject: after\r\n\r\nok\r\n")
    assert printed(catcher)["subject"] == "after"


def test_sigterm_stops_it_at_once(catcher):
    assert catcher.stop() == 0
