"""Rolling changes to the container stack under a steady passkey sign-in load through the gateway.

(a) verification-service scales from 3 to 5 replicas and then down to 2 (graceful stops, one at a time);
(b) every gRPC service is restarted one replica at a time: a new container, ready, one service-discovery interval
    for the clients to find it, then the old one drained;
(c) a verification replica is killed (SIGKILL) and a replacement started.

(a) and (b) must not fail a single ceremony; (c) may fail at most the calls that can be in flight at once (one per
load connection), and the load must go on completing ceremonies after the kill. A new replica must get its first
call within 2 s of reporting ready, and after (a) every remaining verification replica must be serving calls.

The gateway is not rolled here: it is the stack's single published entry point (one container behind one host
port), so replacing it would cut every client off by construction. In Kubernetes its Service spreads clients over
several gateway pods and its PodDisruptionBudget and rolling update keep enough of them serving; that is checked
against the manifests in Tests/Deploy.

The tests run in order and share one stack: each step starts from the replicas the previous one left.
"""

from __future__ import annotations

import base64
import os
import threading
import time
import urllib.error
import urllib.request

from conftest import FirstTraffic, Load, LoadResult, rpc_count

VERIFICATION = "verification-service"
CHALLENGE = "challenge-service"
SESSION = "session-service"
FIRST_TRAFFIC_LIMIT = 2.0
# How often the gateway and verification-service look the service names up again (SERVICE_DISCOVERY_INTERVAL in
# deploy/kubernetes/base/passkey.env), and a margin for the lookup itself.
DISCOVERY_SECONDS = 1.0 + 0.5


def report(step: str, result: LoadResult) -> None:
    print(f"step={step} ceremonies={result.ceremonies} failures={result.failures} seconds={result.seconds:.1f}")
    for line in result.failure_lines:
        print(f"step={step} {line}")


def explain(stack, result: LoadResult, since: float) -> str:
    """What the load saw and what the containers logged, for a failed assertion."""
    return "\n".join([result.line, *result.failure_lines, stack.trouble(since)])


def free_replica_number(stack, service: str) -> int:
    """The lowest replica number of SERVICE with no container at all: stopped and killed replicas keep theirs, with
    their logs, until the stack is removed."""
    used = set(stack.numbers_used(service))
    return next(n for n in range(1, 10) if n not in used)


def start_watched(stack, service: str, n: int) -> FirstTraffic:
    """Starts replica N of SERVICE (returns once it is SERVING) with a watch on its first served RPC."""
    watch = FirstTraffic(stack.metrics_port(service, n))
    stack.start(service, n)
    return watch


def stop_gracefully(stack, service: str, n: int) -> None:
    status, took = stack.stop(service, n)
    print(f"stopped {service} replica {n}: exit status {status} after {took:.1f} s")
    assert status == 0, f"{service} replica {n} exited {status} after SIGTERM, not 0"


def served_rpcs(stack, service: str) -> dict[int, int]:
    return {n: rpc_count(stack.metrics_port(service, n)) or 0 for n in stack.running(service)}


def test_a_scale_verification_up_and_down(stack):
    assert stack.running(VERIFICATION) == [1, 2, 3]
    began = time.time()
    first_traffic = {}
    with Load(stack) as load:
        for n in (4, 5):
            watch = start_watched(stack, VERIFICATION, n)
            first_traffic[n] = watch.wait()
            print(f"step=a replica={n} new_replica_first_traffic_seconds={first_traffic[n]:.3f}")
        assert stack.running(VERIFICATION) == [1, 2, 3, 4, 5]
        before = served_rpcs(stack, VERIFICATION)
        time.sleep(5)
        after = served_rpcs(stack, VERIFICATION)
        spread = {n: after[n] - before.get(n, 0) for n in after}
        print(f"step=a rpcs_per_replica_in_5s_at_5_replicas={spread}")
        for n in (1, 2, 3):
            stop_gracefully(stack, VERIFICATION, n)
        assert stack.running(VERIFICATION) == [4, 5]
        before_two = served_rpcs(stack, VERIFICATION)
        time.sleep(3)
        after_two = served_rpcs(stack, VERIFICATION)
        spread_two = {n: after_two[n] - before_two.get(n, 0) for n in after_two}
        print(f"step=a rpcs_per_replica_in_3s_at_2_replicas={spread_two}")
    result = load.result
    report("a", result)
    assert result.failures == 0, explain(stack, result, began)
    assert result.ceremonies > 0
    for n, seconds in first_traffic.items():
        assert seconds <= FIRST_TRAFFIC_LIMIT, (
            f"verification replica {n} served its first RPC {seconds:.3f} s after it reported ready")
    assert all(count > 0 for count in spread.values()), f"not every one of 5 replicas served calls: {spread}"
    assert all(count > 0 for count in spread_two.values()), (
        f"not every one of the 2 remaining replicas served calls: {spread_two}")


class SessionChecks:
    """`GET /v1/session` with well-formed tokens of no session, every 20 ms: the passkey sign-in load no longer calls
    session-service (verification-service issues passkey sessions), so this is the traffic that shows a new
    session-service replica taking calls. Each is a ValidateSession call answered 401."""

    def __init__(self, stack):
        self.url = stack.gateway_url + "/v1/session"
        self.unexpected: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            token = base64.urlsafe_b64encode(os.urandom(48)).decode().rstrip("=")
            request = urllib.request.Request(self.url, headers={"Authorization": f"Bearer {token}"})
            try:
                urllib.request.urlopen(request, timeout=3).close()
                self.unexpected.append(200)
            except urllib.error.HTTPError as error:
                if error.code != 401:
                    self.unexpected.append(error.code)
            except OSError:
                self.unexpected.append(0)
            self._stop.wait(0.02)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)


def test_b_restart_every_grpc_service_one_replica_at_a_time(stack):
    # The gateway stays: see the module's docstring.
    began = time.time()
    rolled = []
    with Load(stack) as load, SessionChecks(stack) as checks:
        for service in (CHALLENGE, SESSION, VERIFICATION):
            for old in stack.running(service):
                new = free_replica_number(stack, service)
                watch = start_watched(stack, service, new)
                # The clients find a new replica by their next lookup. In Kubernetes the old pod leaves the
                # headless Service's DNS when it starts terminating and its preStop sleep (5 s) keeps it serving
                # meanwhile; here its name resolves until it exits, so the clients get one discovery interval to
                # learn the new address before the old one stops accepting connections.
                time.sleep(DISCOVERY_SECONDS)
                stop_gracefully(stack, service, old)
                seconds = watch.wait()
                rolled.append(f"{service}:{old}->{new}")
                print(f"step=b {service} replica {old} replaced by {new}: first_traffic_seconds={seconds:.3f}")
        time.sleep(2)
    result = load.result
    report("b", result)
    print(f"step=b rolled={','.join(rolled)}")
    assert result.failures == 0, explain(stack, result, began)
    assert result.ceremonies > 0
    assert checks.unexpected == [], f"session checks answered other than 401 during the rollover: {checks.unexpected}"
    assert len(stack.running(CHALLENGE)) == 1 and len(stack.running(SESSION)) == 1
    assert len(stack.running(VERIFICATION)) == 2


def test_c_kill_a_verification_replica(stack):
    began = time.time()
    with Load(stack) as load:
        time.sleep(2)
        victim = stack.running(VERIFICATION)[0]
        killed_at = time.time()
        killed_monotonic = time.monotonic()
        stack.kill(VERIFICATION, victim)
        replacement = free_replica_number(stack, VERIFICATION)
        watch = start_watched(stack, VERIFICATION, replacement)
        first_traffic = watch.wait()
        kill_to_traffic = watch.first_rpc_at - killed_monotonic
        print(f"step=c killed={victim} replacement={replacement} "
              f"new_replica_first_traffic_seconds={first_traffic:.3f} kill_to_traffic_seconds={kill_to_traffic:.3f}")
        time.sleep(3)
    result = load.result
    report("c", result)
    print(f"step=c what the containers logged about connections since the kill:\n{stack.trouble(killed_at)}")
    # Ceremonies completed after the kill (1 s later, once the calls caught in it are settled), from the load's
    # half-second progress lines.
    def done_by(unix: float) -> int:
        return max((c for t, c, _ in result.progress if t <= unix), default=0)

    after_kill = result.ceremonies - done_by(killed_at + 1)
    # The replica that survived carries the load alone until the replacement is ready.
    ready_unix = killed_at + (watch.ready_at - killed_monotonic)
    alone = done_by(ready_unix) - done_by(killed_at + 0.5)
    print(f"step=c ceremonies_after_kill={after_kill} ceremonies_before_replacement_ready={alone} "
          f"replacement_ready_after_kill_seconds={ready_unix - killed_at:.3f}")
    assert result.failures <= load.connections, explain(stack, result, began)
    assert after_kill > 0, explain(stack, result, began)
    if ready_unix - killed_at >= 1.5:
        assert alone > 0, explain(stack, result, began)
    assert first_traffic <= FIRST_TRAFFIC_LIMIT, (
        f"the replacement served its first RPC {first_traffic:.3f} s after it reported ready")
