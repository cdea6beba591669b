"""Webhook signing secrets at rest: webhook_endpoints keeps each one sealed under the key ring (docs/security.md),
bound to its endpoint, never as the receiver's `whsec_` secret; deliveries still verify with the secret shown at
registration. An endpoint stored in clear before secrets were sealed (migration 0018) is sealed by session-service as
it starts, and its deliveries keep verifying with the same secret."""

import base64
import os
import uuid

import pytest

from test_admin_api import Admin, make_token
from test_webhooks import WEBHOOK_ENVIRONMENT, Receiver, new_account, register, sign_in, wait_for

from passkey_stack import Stack, free_port  # noqa: E402  (on the path test_admin_api sets)
from secret_key_ring import key_id, open_box, ring_keys


@pytest.fixture(scope="module")
def stack():
    admin_port = free_port()
    the_stack = Stack("webhooksecrets", environment={"ADMIN_LISTEN": f"127.0.0.1:{admin_port}",
                                                     **WEBHOOK_ENVIRONMENT}).start()
    the_stack.admin = Admin(admin_port)
    the_stack.token = make_token(the_stack, "read,write")
    yield the_stack
    the_stack.stop()


def stored_secret(stack, webhook_id):
    [(secret, key)] = stack.sql(f"SELECT encode(secret, 'hex'), coalesce(secret_key_id, '') FROM webhook_endpoints "
                                f"WHERE id = '{webhook_id}'")
    return bytes.fromhex(secret), key


def test_a_secret_is_kept_sealed_and_one_kept_in_clear_before_is_sealed_as_session_service_starts(stack):
    [ring_key] = ring_keys(stack.key_encryption_key)
    receiver = Receiver().start()
    created = register(stack, receiver.url, ["audit.sign_in.succeeded"])
    secret = base64.b64decode(created["secret"].removeprefix("whsec_"))
    box, key = stored_secret(stack, created["webhookID"])
    assert secret not in box and len(box) == 12 + 32 + 16 and key == key_id(ring_key)
    assert open_box(ring_key, "webhook-secret", box, created["webhookID"].encode()) == secret
    account_id, address = new_account(stack)
    wait_for(lambda: any(e["data"]["accountId"] == account_id for e in receiver.events(created["secret"])), 10,
             lambda: "no verified delivery")

    # An endpoint registered before secrets were sealed: its secret in clear.
    old_receiver = Receiver().start()
    old_id = str(uuid.uuid4())
    old_secret = os.urandom(32)
    stack.sql(f"""INSERT INTO webhook_endpoints (id, url, event_types, secret, created_by)
                  VALUES ('{old_id}', '{old_receiver.url}', '{{audit.sign_in.succeeded}}', '\\x{old_secret.hex()}',
                          'admin:before')""")
    stack.kill("session-service")
    stack.restart("session-service")
    wait_for(lambda: stored_secret(stack, old_id)[1] == key_id(ring_key), 15, lambda: "not sealed at start")
    box, _ = stored_secret(stack, old_id)
    assert old_secret not in box and open_box(ring_key, "webhook-secret", box, old_id.encode()) == old_secret
    assert "webhooks.secrets_sealed" in stack.log_text()
    # Its receiver still verifies every delivery with the secret it was given.
    sign_in(stack, address)
    old_text = "whsec_" + base64.b64encode(old_secret).decode()
    wait_for(lambda: any(e["data"]["accountId"] == account_id for e in old_receiver.events(old_text)), 15,
             lambda: "no delivery to the old endpoint verified with its secret")
    receiver.stop()
    old_receiver.stop()
