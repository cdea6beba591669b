import Encoding
import Foundation
import JSON
import SoftwareAuthenticator
import Synchronization
import WebAuthn

// Passkey sign-in load through the gateway: each ceremony is a new challenge (start) and a signed assertion
// (finish). `--rate 0` saturates with `--connections` closed-loop workers; `--rate N` sends N ceremonies per second
// open-loop and measures latency from each ceremony's scheduled time, so queueing delay is counted.
//
// Usage: passkey-signin-load --url http://127.0.0.1:8080 --origin http://localhost:8080 --rp-id localhost
//            [--connections 32] [--duration 10] [--rate 0] [--synced] [--report-cpu] [--report-failures] [--progress]
// --synced gives every worker a passkey whose signature counter stays at zero, as synced passkeys (iCloud Keychain,
//   Google Password Manager) have; by default the counter moves on every sign-in, as on a security key.
// --report-cpu also prints the CPU seconds (user + system) this process used while the clock ran.
// --report-failures also prints, after the result line, one line per kind of failed ceremony (the step that
//   failed, the HTTP status or "transport" when no response came, and the problem document's code) with its count
//   and the wall-clock (Unix) times of its first and last occurrence.
// --windows SECONDS also prints, after the result line, one line per window of that many seconds (by each
//   ceremony's scheduled start): its ceremonies, failures, p50, p99, p99.9 and the longest, so a tail can be placed
//   in time (benchmarks' soak runs).
// --record FILE also writes, at the end, one line per ceremony: its wall-clock (Unix) start and end, how it ended
//   ("ok 200 TOKEN" with the session's access token, or the step, the HTTP status or "transport" and the problem
//   code: "finish 503 unavailable"), so a test can check afterwards that every acknowledged session exists
//   (Tests/PostgresHA).
// --refresh makes each "ceremony" a session refresh instead: every worker signs up once (which signs it in), then
//   trades its refresh token for the next one (POST /v1/session/refresh) as fast as it can or at --rate.
// --progress prints to standard error, every half second while the clock runs, the wall-clock time and the
//   ceremonies and failures so far.
// SIGTERM or SIGINT ends the run early: no further ceremonies start, those begun finish (in rate mode the ones
// already due too), and the results so far are printed as at the end of --duration.

let flags: Set<String> = ["--report-cpu", "--report-failures", "--progress", "--synced", "--refresh"]
var arguments: [String: String] = [:]
var index = 1
while index < CommandLine.arguments.count {
    if flags.contains(CommandLine.arguments[index]) {
        index += 1
        continue
    }
    guard index + 1 < CommandLine.arguments.count else { break }
    arguments[String(CommandLine.arguments[index].drop(while: { $0 == "-" }))] = CommandLine.arguments[index + 1]
    index += 2
}
let url = URL(string: arguments["url"] ?? "http://127.0.0.1:8080")!
let origin = arguments["origin"] ?? "http://localhost:8080"
let rpID = arguments["rp-id"] ?? "localhost"
let connections = Int(arguments["connections"] ?? "32") ?? 32
let duration = Double(arguments["duration"] ?? "10") ?? 10
let rate = Double(arguments["rate"] ?? "0") ?? 0
let reportCPU = CommandLine.arguments.contains("--report-cpu")
let reportFailures = CommandLine.arguments.contains("--report-failures")
let reportProgress = CommandLine.arguments.contains("--progress")
let synced = CommandLine.arguments.contains("--synced")
let refreshMode = CommandLine.arguments.contains("--refresh")
let windowSeconds = Double(arguments["windows"] ?? "0") ?? 0
let recordPath = arguments["record"]
let host = url.host ?? "127.0.0.1"
let port = UInt16(url.port ?? 80)

// The load generator's own CPU counts against the machine's budget, so it uses the package's JSON reader and
// writer rather than Foundation's.
func json(_ bytes: [UInt8]) -> JSONObject { (try? JSONReader.parse(bytes))?.objectValue ?? JSONObject() }

func text(_ object: JSONObject, _ key: String) -> String { object[key]?.stringValue ?? "" }

func body(_ object: JSONObject) -> [UInt8] { JSONWriter.serialize(.object(object)) }

/// One worker's account: a passkey account made through the API, and the refresh token of the session creating it
/// signed in with (empty with opaque session tokens).
func makeAccount(_ connection: HTTPConnection) throws -> (SoftwareAuthenticator, String) {
    var authenticator = SoftwareAuthenticator(keepsZeroCounter: synced)
    let started = try connection.post(
        "/v1/passkeys/account-registrations",
        body(["email": .string("load-\(UUID.randomV4().lowercaseText.prefix(12))@example.com"), "displayName": "Load"]))
    guard started.status == 200 else {
        FileHandle.standardError.write(
            Data("account creation failed: \(started.status) \(String(decoding: started.body, as: UTF8.self))\n".utf8))
        exit(1)
    }
    let start = json(started.body)
    authenticator.userHandle = Base64URL.decode(text(start, "userID")) ?? []
    let registration = authenticator.makeRegistration(
        challenge: Base64URL.decode(text(start, "challenge")) ?? [], rpID: rpID, origin: origin)
    let finish = try connection.post(
        "/v1/passkeys/account-registrations/finish",
        body([
            "registrationID": .string(text(start, "registrationID")),
            "credentialID": .string(Base64URL.encode(registration.credentialID)),
            "clientDataJSON": .string(Base64URL.encode(registration.clientDataJSON)),
            "attestationObject": .string(Base64URL.encode(registration.attestationObject)),
        ]))
    guard finish.status == 201 else {
        FileHandle.standardError.write(
            Data("account creation failed: \(finish.status) \(String(decoding: finish.body, as: UTF8.self))\n".utf8))
        exit(1)
    }
    return (authenticator, text(json(finish.body), "refreshToken"))
}

/// One refresh: the current refresh token traded for the next, which replaces it.
func refresh(_ connection: HTTPConnection, _ token: inout String) -> Result<String, FailureKind> {
    let refreshed = try? connection.post("/v1/session/refresh", body(["refreshToken": .string(token)]))
    guard let refreshed, refreshed.status == 200 else { return .failure(FailureKind("refresh", refreshed)) }
    let document = json(refreshed.body)
    token = text(document, "refreshToken")
    return .success(recordPath == nil ? "" : text(document, "accessToken"))
}

/// Why a ceremony failed: the step, the HTTP status (0: no response) and the problem document's code.
struct FailureKind: Hashable, Error {
    let step: String
    let status: Int
    let code: String

    init(_ step: String, _ response: HTTPConnection.Response?) {
        self.step = step
        status = response?.status ?? 0
        code = response.map { text(json($0.body), "code") } ?? ""
    }
}

/// One ceremony: start, sign, finish. The session's access token on a 200, else why not.
func ceremony(_ connection: HTTPConnection, _ authenticator: inout SoftwareAuthenticator) -> Result<String, FailureKind>
{
    let started = try? connection.post("/v1/passkeys/authentications", Array("{}".utf8))
    guard let start = started, start.status == 200 else { return .failure(FailureKind("start", started)) }
    let options = json(start.body)
    let assertion = authenticator.makeAssertion(
        challenge: Base64URL.decode(text(options, "challenge")) ?? [], rpID: rpID, origin: origin)
    let finish = try? connection.post(
        "/v1/passkeys/authentications/finish",
        body([
            "challengeID": .string(text(options, "challengeID")),
            "credentialID": .string(Base64URL.encode(assertion.credentialID)),
            "clientDataJSON": .string(Base64URL.encode(assertion.clientDataJSON)),
            "authenticatorData": .string(Base64URL.encode(assertion.authenticatorData)),
            "signature": .string(Base64URL.encode(assertion.signature)),
            "userHandle": .string(Base64URL.encode(assertion.userHandle ?? [])),
        ]))
    guard let finish, finish.status == 200 else { return .failure(FailureKind("finish", finish)) }
    return .success(recordPath == nil ? "" : text(json(finish.body), "accessToken"))
}

func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func wallClock() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

struct FailureCount {
    var count = 0
    var first = 0.0
    var last = 0.0
}

struct Results {
    var latencies: [Double] = []
    /// (scheduled start after the clock began, latency), kept for --windows; failures with a negative latency.
    var samples: [(start: Double, latency: Double)] = []
    var failures = 0
    var failureKinds: [FailureKind: FailureCount] = [:]
    /// For --record: (wall-clock start and end, outcome, access token) per ceremony.
    var records: [(start: Double, end: Double, outcome: String, token: String)] = []
}

// Set by SIGTERM or SIGINT: end the run early.
let stopRequested = Atomic<Bool>(false)
for signalNumber in [SIGTERM, SIGINT] {
    signal(signalNumber) { _ in stopRequested.store(true, ordering: .relaxed) }
}
func stopping() -> Bool { stopRequested.load(ordering: .relaxed) }
// Reserved up front: growing a large array copies it under the lock, which every worker then waits for, and the
// wait would count as server latency in a long run.
let results = Mutex(
    {
        var results = Results()
        let expected = rate > 0 ? Int(rate * duration * 1.05) + 1_024 : 1 << 16
        results.latencies.reserveCapacity(expected)
        if windowSeconds > 0 { results.samples.reserveCapacity(expected) }
        return results
    }())
let queue = Mutex<[Double]>([])  // scheduled start times, open-loop mode
let scheduled = DispatchSemaphore(value: 0)  // one signal per scheduled start, and one per worker at the end
let stopAt = Mutex<Double>(0)
let group = DispatchGroup()

// Set up every worker's account before the clock starts.
var workers: [(HTTPConnection, SoftwareAuthenticator, String)] = []
for _ in 0..<connections {
    let connection = HTTPConnection(host: host, port: port)
    do {
        let (authenticator, refreshToken) = try makeAccount(connection)
        if refreshMode && refreshToken.isEmpty {
            FileHandle.standardError.write(
                Data("passkey-signin-load: --refresh: sign-ups return no refresh token\n".utf8))
            exit(1)
        }
        workers.append((connection, authenticator, refreshToken))
    } catch {
        FileHandle.standardError.write(Data("passkey-signin-load: cannot set up an account at \(url): \(error)\n".utf8))
        exit(1)
    }
}
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}
let cpuBegan = cpuSeconds()
let began = now()
stopAt.withLock { $0 = began + duration }

final class Box<T>: @unchecked Sendable {
    // @unchecked: each box is used by one worker thread only.
    var value: T
    init(_ value: T) { self.value = value }
}

for worker in workers {
    let box = Box(worker)
    group.enter()
    Thread {
        var (connection, authenticator, refreshToken) = box.value
        let end = stopAt.withLock { $0 }
        while true {
            let startTime: Double
            if rate > 0 {
                scheduled.wait()
                guard let next = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { break }
                startTime = next
            } else {
                startTime = now()
                if startTime >= end || stopping() { break }
            }
            let wallStart = recordPath == nil ? 0 : wallClock() - (now() - startTime)
            let outcome = refreshMode ? refresh(connection, &refreshToken) : ceremony(connection, &authenticator)
            let finished = now()
            var failure: FailureKind?
            if case .failure(let kind) = outcome { failure = kind }
            let failedAt = failure == nil ? 0 : wallClock()
            results.withLock {
                if recordPath != nil {
                    let wallEnd = wallStart + (finished - startTime)
                    switch outcome {
                    case .success(let token): $0.records.append((wallStart, wallEnd, "ok 200", token))
                    case .failure(let kind):
                        let status = kind.status == 0 ? "transport" : String(kind.status)
                        $0.records.append(
                            (wallStart, wallEnd, "\(kind.step) \(status) \(kind.code.isEmpty ? "-" : kind.code)", ""))
                    }
                }
                if windowSeconds > 0 {
                    $0.samples.append((startTime - began, failure == nil ? finished - startTime : -1))
                }
                guard let failure else {
                    $0.latencies.append(finished - startTime)
                    return
                }
                $0.failures += 1
                var counted = $0.failureKinds[failure] ?? FailureCount(count: 0, first: failedAt, last: failedAt)
                counted.count += 1
                counted.last = failedAt
                $0.failureKinds[failure] = counted
            }
        }
        group.leave()
    }.start()
}

let finishedRun = Atomic<Bool>(false)
if reportProgress {
    Thread {
        while !finishedRun.load(ordering: .relaxed) {
            usleep(500_000)
            let (done, failed) = results.withLock { ($0.latencies.count, $0.failures) }
            FileHandle.standardError.write(
                Data(
                    String(
                        format: "progress unix=%.3f elapsed=%.1f ceremonies=%d failures=%d\n", wallClock(),
                        now() - began, done, failed
                    ).utf8))
        }
    }.start()
}

if rate > 0 {
    let interval = 1 / rate
    var next = began
    while next < began + duration && !stopping() {
        let wait = next - now()
        if wait > 0 { usleep(UInt32(wait * 1e6)) }
        queue.withLock { $0.append(next) }
        scheduled.signal()
        next += interval
    }
    // Every worker finishes the backlog, then finds the queue empty and stops.
    for _ in workers { scheduled.signal() }
}
group.wait()
finishedRun.store(true, ordering: .relaxed)
let elapsed = now() - began
let final = results.withLock { $0 }
let sorted = final.latencies.sorted()
func percentile(_ p: Double) -> Double {
    sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] * 1000
}
print(
    String(
        format: "mode=%@ ceremonies=%d failures=%d seconds=%.1f ceremonies_per_second=%.0f p50_ms=%.2f p99_ms=%.2f",
        rate > 0 ? "rate-\(Int(rate))" : "saturation", sorted.count, final.failures, elapsed,
        Double(sorted.count) / elapsed, percentile(0.50), percentile(0.99)))
if reportCPU { print(String(format: "load_generator_cpu_seconds %.3f", cpuSeconds() - cpuBegan)) }
if windowSeconds > 0 {
    var windows: [Int: (latencies: [Double], failures: Int)] = [:]
    for sample in final.samples {
        let window = Int(sample.start / windowSeconds)
        if sample.latency < 0 {
            windows[window, default: ([], 0)].failures += 1
        } else {
            windows[window, default: ([], 0)].latencies.append(sample.latency)
        }
    }
    for window in windows.keys.sorted() {
        let latencies = windows[window]!.latencies.sorted()
        func at(_ p: Double) -> Double {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] * 1000
        }
        print(
            String(
                format:
                    "window start_s=%.0f ceremonies=%d failures=%d p50_ms=%.2f p99_ms=%.2f p999_ms=%.2f max_ms=%.2f",
                Double(window) * windowSeconds, latencies.count, windows[window]!.failures, at(0.5), at(0.99),
                at(0.999),
                (latencies.last ?? 0) * 1000))
    }
}
if let recordPath {
    var lines = ""
    for record in final.records.sorted(by: { $0.start < $1.start }) {
        lines +=
            String(format: "%.3f %.3f ", record.start, record.end) + record.outcome
            + (record.token.isEmpty ? "" : " " + record.token) + "\n"
    }
    guard FileManager.default.createFile(atPath: recordPath, contents: Data(lines.utf8)) else {
        FileHandle.standardError.write(Data("cannot write the record to \(recordPath)\n".utf8))
        exit(1)
    }
}
if reportFailures {
    for (kind, counted) in final.failureKinds.sorted(by: { $0.value.count > $1.value.count }) {
        print(
            String(
                format: "failure step=%@ status=%@ code=%@ count=%d first_unix=%.3f last_unix=%.3f", kind.step,
                kind.status == 0 ? "transport" : String(kind.status), kind.code.isEmpty ? "-" : kind.code,
                counted.count, counted.first, counted.last))
    }
}
