import Foundation

/// The Public Suffix List's rules and its algorithm (https://publicsuffix.org/list/, "Formal Algorithm"): which part
/// of a host name is a public suffix (`com`, `co.uk`, `github.io`), under which anyone may register a name, and
/// which name was registered under it (the registrable domain, "eTLD+1"). Browsers decide with it whether a relying
/// party ID may be used for an origin and how related origins are counted (WebAuthn Level 3 §5.1.4, §5.11.1).
///
/// Host names are compared lowercased. A rule written in Unicode (`公司.cn`) matches a host written in Unicode or in
/// the `xn--` form an origin carries (`xn--55qx5d.cn`).
public struct PublicSuffixList: Sendable {
    /// `example.com` for the rule `example.com`.
    private let rules: Set<String>
    /// `ck` for the rule `*.ck`.
    private let wildcards: Set<String>
    /// `www.ck` for the rule `!www.ck`.
    private let exceptions: Set<String>

    /// How a host's public suffix was found.
    public enum Match: Equatable, Sendable {
        /// A rule of the list (a name, a wildcard, or an exception to one) decided it.
        case listed
        /// No rule matched: the default rule `*`, the host's last label.
        case defaultRule
    }

    /// The rules of a list in the list's own format: one rule per line, `//` comments and blank lines skipped, each
    /// rule ending at the first white space.
    public init(parsing text: String) {
        var rules = Set<String>()
        var wildcards = Set<String>()
        var exceptions = Set<String>()
        for line in text.split(whereSeparator: \.isNewline) {
            guard let rule = line.split(whereSeparator: \.isWhitespace).first, !rule.hasPrefix("//") else { continue }
            let lowered = rule.lowercased()
            // A rule in Unicode is kept in its ASCII (Punycode) form as well.
            let ascii = lowered.split(separator: ".", omittingEmptySubsequences: false)
                .map { Punycode.asciiLabel($0) ?? String($0) }.joined(separator: ".")
            for form in Set([lowered, ascii]) {
                if form.hasPrefix("!") {
                    exceptions.insert(String(form.dropFirst()))
                } else if form.hasPrefix("*.") {
                    wildcards.insert(String(form.dropFirst(2)))
                } else {
                    rules.insert(form)
                }
            }
        }
        self.rules = rules
        self.wildcards = wildcards
        self.exceptions = exceptions
    }

    /// How many rules the list holds, a rule written in Unicode counted once in each of its two forms.
    public var count: Int { rules.count + wildcards.count + exceptions.count }

    /// The public suffix of `host` and how it was found; nil for a name that is not a host name (empty, or with an
    /// empty label: a leading, trailing or doubled dot).
    public func publicSuffix(of host: String) -> (suffix: String, match: Match)? {
        let labels = host.lowercased().split(separator: ".", omittingEmptySubsequences: false)
        guard !labels.isEmpty, !labels.contains(where: \.isEmpty) else { return nil }
        // Longest candidate first: the prevailing rule is an exception, else the one with the most labels.
        for start in labels.indices {
            let candidate = labels[start...].joined(separator: ".")
            if exceptions.contains(candidate) {
                return (labels[(start + 1)...].joined(separator: "."), .listed)
            }
            if rules.contains(candidate) { return (candidate, .listed) }
            if start + 1 < labels.count, wildcards.contains(labels[(start + 1)...].joined(separator: ".")) {
                return (candidate, .listed)
            }
        }
        return (String(labels[labels.count - 1]), .defaultRule)
    }

    /// The registrable domain of `host`: its public suffix and the one label before it (`example.co.uk` for
    /// `www.example.co.uk`); nil when `host` is itself a public suffix or not a host name.
    public func registrableDomain(of host: String) -> String? {
        guard let (suffix, _) = publicSuffix(of: host) else { return nil }
        let lowered = host.lowercased()
        guard lowered.count > suffix.count else { return nil }
        let before = lowered.dropLast(suffix.count + 1)
        let label = before.split(separator: ".").last.map(String.init) ?? String(before)
        return label + "." + suffix
    }

    /// Whether a rule of the list makes `host` a public suffix (`com`, `co.uk`, `github.io`, anything under `*.ck`
    /// but `www.ck`). A name no rule lists, such as `intranet`, is not one here: only the default rule would make it
    /// so.
    public func isListedPublicSuffix(_ host: String) -> Bool {
        guard let (suffix, match) = publicSuffix(of: host) else { return false }
        return match == .listed && suffix == host.lowercased()
    }
}

extension PublicSuffixList {
    /// The list shipped with this module (`Data/public_suffix_list.dat`, whose header names its source), read on
    /// first use; nil when the file is missing or holds no rules, which the callers treat as a broken installation.
    public static let shipped: PublicSuffixList? = {
        guard
            let url = Bundle.module.url(forResource: "public_suffix_list", withExtension: "dat", subdirectory: "Data"),
            let text = try? String(contentsOf: url, encoding: .utf8)
        else { return nil }
        let list = PublicSuffixList(parsing: text)
        return list.count > 0 ? list : nil
    }()
}
