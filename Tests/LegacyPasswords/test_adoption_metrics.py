"""The adoption metrics move as accounts change: the passkey_accounts gauges (from the counts migration 0008 keeps),
sign-ins by method, registrations by mode, and Automatic Passkey Upgrade attempts and successes."""

from conftest import PASSWORD

GAUGE = 'passkey_accounts{sign_in_method="%s"}'


def gauges(client, password_only, both, passkey_only):
    """Waits for the session-service gauges to read these counts (they are refreshed every 15 s)."""
    expected = {"password_only": password_only, "both": both, "passkey_only": passkey_only}
    for method, value in expected.items():
        client.wait_for_sample("session-service", GAUGE % method, value)
    return {method: client.sample("session-service", GAUGE % method) for method in expected}


def counts_in_database(client):
    rows = client.sql(
        """
        SELECT count(*) FILTER (WHERE has_password AND passkeys = 0), count(*) FILTER (WHERE has_password AND passkeys > 0),
               count(*) FILTER (WHERE NOT has_password AND passkeys > 0)
        FROM (SELECT EXISTS (SELECT 1 FROM password_credentials p WHERE p.account_id = a.id) AS has_password,
                     (SELECT count(*) FROM passkey_credentials k WHERE k.account_id = a.id) AS passkeys
              FROM accounts a) s
        """)
    return {"password_only": float(rows[0][0]), "both": float(rows[0][1]), "passkey_only": float(rows[0][2])}


def test_the_gauges_and_counters_follow_the_move_to_passkeys(client):
    start = counts_in_database(client)
    assert gauges(client, start["password_only"], start["both"], start["passkey_only"]) == start

    password_sign_ins = client.sample("session-service", 'passkey_sign_ins_total{method="password"}')
    passkey_sign_ins = client.sample("verification-service", 'passkey_sign_ins_total{method="passkey"}')
    modal = client.sample("verification-service", 'passkey_registrations_total{mode="modal"}')
    conditional = client.sample("verification-service", 'passkey_registrations_total{mode="conditional"}')
    attempts = client.sample("challenge-service", 'passkey_automatic_upgrade_attempts_total{outcome="started"}')
    refused = client.sample("challenge-service", 'passkey_automatic_upgrade_attempts_total{outcome="refused"}')
    successes = client.sample("verification-service", "passkey_automatic_upgrade_successes_total")

    # Stage ①: three password accounts.
    accounts = [client.create_password_account() for _ in range(3)]
    expected = dict(start, password_only=start["password_only"] + 3)
    assert gauges(client, **expected) == expected == counts_in_database(client)

    # Stage ②: one adds a passkey by Automatic Passkey Upgrade right after signing in, one by a button.
    (first, first_id), (second, _), _ = accounts
    token = client.sign_in(first, PASSWORD).json()["accessToken"]
    upgraded = client.add_passkey(token, mode="conditional")
    other = client.sign_in(second, PASSWORD).json()["accessToken"]
    client.add_passkey(other, mode="modal")
    expected = dict(expected, password_only=expected["password_only"] - 2, both=expected["both"] + 2)
    assert gauges(client, **expected) == expected == counts_in_database(client)
    assert client.sample("session-service", 'passkey_sign_ins_total{method="password"}') == password_sign_ins + 2
    assert client.sample("verification-service", 'passkey_registrations_total{mode="conditional"}') == conditional + 1
    assert client.sample("verification-service", 'passkey_registrations_total{mode="modal"}') == modal + 1
    assert client.sample("challenge-service",
                         'passkey_automatic_upgrade_attempts_total{outcome="started"}') == attempts + 1
    assert client.sample("verification-service", "passkey_automatic_upgrade_successes_total") == successes + 1

    # An upgrade attempt without a fresh password sign-in is refused and counted as such, with no success.
    passkey_token = client.passkey_sign_in(upgraded).json()["accessToken"]
    denied = client.call("POST", "/v1/passkeys/registrations", {"mode": "conditional"}, token=passkey_token)
    assert denied.status == 403, denied.body
    assert client.sample("challenge-service",
                         'passkey_automatic_upgrade_attempts_total{outcome="refused"}') == refused + 1
    assert client.sample("verification-service", "passkey_automatic_upgrade_successes_total") == successes + 1
    assert client.sample("verification-service", 'passkey_sign_ins_total{method="passkey"}') == passkey_sign_ins + 1

    # Stage ③: the upgraded account drops its password; a new account starts with a passkey.
    assert client.call("DELETE", "/v1/account/password", token=passkey_token).status == 204
    client.create_passkey_account()
    expected = dict(expected, both=expected["both"] - 1, passkey_only=expected["passkey_only"] + 2)
    assert gauges(client, **expected) == expected == counts_in_database(client)
    assert client.sample("verification-service", 'passkey_registrations_total{mode="modal"}') == modal + 2

    # Failed sign-ins count nothing; an account deleted with all its rows leaves its count.
    client.sign_in(first, PASSWORD)
    assert client.sample("session-service", 'passkey_sign_ins_total{method="password"}') == password_sign_ins + 2
    client.sql(f"DELETE FROM accounts WHERE id = '{first_id}'")
    expected = dict(expected, passkey_only=expected["passkey_only"] - 1)
    assert gauges(client, **expected) == expected == counts_in_database(client)
