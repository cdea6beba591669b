import Foundation
import Synchronization

/// Counters, gauges and histograms with labels, exposed in Prometheus's text format.
///
/// Metric families are created on first use; a family's kind and help text are fixed by that first use.
public final class MetricsRegistry: Sendable {
    /// Latency buckets in seconds, from 100 µs to 10 s.
    public static let latencyBuckets: [Double] = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    private enum Kind: String { case counter, gauge, histogram }

    private struct Series {
        /// The labels as exposed (`key="value",...`), made once when the series is created.
        let labelText: String
        let labels: [(key: String, value: String)]
        var value: Double = 0
        var bucketCounts: [UInt64] = []
        var count: UInt64 = 0
        var sum: Double = 0
    }

    private struct Family {
        let kind: Kind
        let help: String
        let buckets: [Double]
        /// Series by a hash of their label pairs; a bucket also holds any series whose hash collides.
        var series: [UInt64: [Series]] = [:]
    }

    private let families = Mutex<[String: Family]>([:])

    public init() {}

    /// Adds `amount` to a counter.
    public func increment(
        _ name: String, help: String, labels: KeyValuePairs<String, String> = [:], by amount: Double = 1
    ) {
        update(name, kind: .counter, help: help, labels: labels, buckets: []) { $0.value += amount }
    }

    /// Sets a counter to a running total kept elsewhere (the kernel's CPU time); the total must only grow.
    public func setCounter(
        _ name: String, help: String, labels: KeyValuePairs<String, String> = [:], to value: Double
    ) {
        update(name, kind: .counter, help: help, labels: labels, buckets: []) { $0.value = max($0.value, value) }
    }

    /// Sets a gauge.
    public func set(_ name: String, help: String, labels: KeyValuePairs<String, String> = [:], to value: Double) {
        update(name, kind: .gauge, help: help, labels: labels, buckets: []) { $0.value = value }
    }

    /// Records one observation in a histogram.
    public func observe(
        _ name: String, help: String, labels: KeyValuePairs<String, String> = [:], _ value: Double,
        buckets: [Double] = MetricsRegistry.latencyBuckets
    ) {
        update(name, kind: .histogram, help: help, labels: labels, buckets: buckets) { series in
            if series.bucketCounts.isEmpty { series.bucketCounts = Array(repeating: 0, count: buckets.count) }
            for (index, bound) in buckets.enumerated() where value <= bound { series.bucketCounts[index] += 1 }
            series.count += 1
            series.sum += value
        }
    }

    private func update(
        _ name: String, kind: Kind, help: String, labels: KeyValuePairs<String, String>, buckets: [Double],
        _ change: (inout Series) -> Void
    ) {
        // Found by a hash of the label bytes and a comparison of the pairs: building the label text and hashing
        // it as a String for every update cost more than the update itself.
        let hash = Self.labelHash(labels)
        families.withLock { families in
            // Mutated in place, with one lookup each: copying a family out and back would copy all of its series.
            func update(_ family: inout Family) {
                guard family.kind == kind else { return }
                func update(_ bucket: inout [Series]) {
                    if let index = bucket.firstIndex(where: { Self.labels($0.labels, equal: labels) }) {
                        change(&bucket[index])
                    } else {
                        var series = Series(
                            labelText: Self.labelText(labels), labels: labels.map { ($0.key, $0.value) })
                        change(&series)
                        bucket.append(series)
                    }
                }
                update(&family.series[hash, default: []])
            }
            update(&families[name, default: Family(kind: kind, help: help, buckets: buckets)])
        }
    }

    /// The Prometheus text exposition (version 0.0.4) of every metric.
    public func exposition() -> String {
        let snapshot = families.withLock { $0 }
        var text = ""
        for name in snapshot.keys.sorted() {
            let family = snapshot[name]!
            text += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.kind.rawValue)\n"
            for series in family.series.values.joined().sorted(by: { $0.labelText < $1.labelText }) {
                let labels = series.labelText
                switch family.kind {
                case .counter, .gauge:
                    text += "\(name)\(braced(labels)) \(Self.number(series.value))\n"
                case .histogram:
                    for (index, bound) in family.buckets.enumerated() {
                        let le = "le=\"\(Self.number(bound))\""
                        text += "\(name)_bucket\(braced(labels, adding: le)) \(series.bucketCounts[index])\n"
                    }
                    text += "\(name)_bucket\(braced(labels, adding: "le=\"+Inf\"")) \(series.count)\n"
                    text += "\(name)_sum\(braced(labels)) \(Self.number(series.sum))\n"
                    text += "\(name)_count\(braced(labels)) \(series.count)\n"
                }
            }
        }
        return text
    }

    private func braced(_ labels: String, adding extra: String? = nil) -> String {
        let parts = [labels, extra ?? ""].filter { !$0.isEmpty }
        return parts.isEmpty ? "" : "{" + parts.joined(separator: ",") + "}"
    }

    /// FNV-1a over the label pairs' bytes, with separators so that different splits of the same bytes differ.
    static func labelHash(_ labels: KeyValuePairs<String, String>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for (key, value) in labels {
            fnv1a(key, &hash)
            hash = (hash ^ 0xFF) &* 0x0000_0100_0000_01b3
            fnv1a(value, &hash)
            hash = (hash ^ 0xFE) &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    private static func fnv1a(_ text: String, _ hash: inout UInt64) {
        let done: Void? = text.utf8.withContiguousStorageIfAvailable { bytes in
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        }
        if done == nil {
            for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        }
    }

    private static func labels(_ stored: [(key: String, value: String)], equal labels: KeyValuePairs<String, String>)
        -> Bool
    {
        guard stored.count == labels.count else { return false }
        for (index, pair) in labels.enumerated()
        where stored[index].key != pair.key || stored[index].value != pair.value {
            return false
        }
        return true
    }

    static func labelText(_ labels: KeyValuePairs<String, String>) -> String {
        // Built as bytes: every metric update on the request path makes one of these keys.
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for (index, (key, value)) in labels.enumerated() {
            let plain = !value.utf8.contains { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == 0x0A }
            guard plain else { return escapedLabelText(labels) }
            if index > 0 { text.append(UInt8(ascii: ",")) }
            text.append(contentsOf: key.utf8)
            text.append(UInt8(ascii: "="))
            text.append(UInt8(ascii: "\""))
            text.append(contentsOf: value.utf8)
            text.append(UInt8(ascii: "\""))
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func escapedLabelText(_ labels: KeyValuePairs<String, String>) -> String {
        labels.map { key, value in
            var escaped = ""
            for character in value {
                switch character {
                case "\\": escaped += "\\\\"
                case "\"": escaped += "\\\""
                case "\n": escaped += "\\n"
                default: escaped.append(character)
                }
            }
            return "\(key)=\"\(escaped)\""
        }.joined(separator: ",")
    }

    static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
