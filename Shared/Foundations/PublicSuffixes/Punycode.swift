/// Punycode (RFC 3492) encoding of one label, for the list's rules written in Unicode: `公司` is looked up as
/// `xn--55qx5d` too, the form a host name carries in an origin.
enum Punycode {
    private static let base = 36, tMin = 1, tMax = 26, skew = 38, damp = 700, initialBias = 72, initialN = 128

    /// `xn--` and the label's Punycode when it holds a non-ASCII character; the label itself otherwise. Nil when a
    /// step would overflow (a label far longer than any host name's).
    static func asciiLabel(_ label: Substring) -> String? {
        let input = label.unicodeScalars.map { Int($0.value) }
        guard input.contains(where: { $0 >= 0x80 }) else { return String(label) }
        guard let encoded = encode(input) else { return nil }
        return "xn--" + encoded
    }

    /// RFC 3492 §6.3.
    static func encode(_ input: [Int]) -> String? {
        var output = input.filter { $0 < 0x80 }.map { Character(Unicode.Scalar(UInt8($0))) }
        let basicCount = output.count
        if basicCount > 0 { output.append("-") }
        var n = initialN
        var delta = 0
        var bias = initialBias
        var handled = basicCount
        while handled < input.count {
            guard let next = input.filter({ $0 >= n }).min() else { return nil }
            let (step, overflow) = (next - n).multipliedReportingOverflow(by: handled + 1)
            guard !overflow, delta <= Int.max - step else { return nil }
            delta += step
            n = next
            for point in input {
                if point < n { delta += 1 }
                guard point == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta, points: handled + 1, first: handled == basicCount)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return String(output)
    }

    private static func digit(_ value: Int) -> Character {
        Character(Unicode.Scalar(UInt8(value < 26 ? 0x61 + value : 0x30 + value - 26)))
    }

    private static func adapt(_ delta: Int, points: Int, first: Bool) -> Int {
        var delta = first ? delta / damp : delta / 2
        delta += delta / points
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }
}
