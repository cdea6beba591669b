import ChallengeServiceCore
import Foundation
import ServiceIdentity
import SessionServiceCore
import VerificationServiceCore
import XCTest

/// `docs/security.md`'s table of who may call what, against the rules the services declare: every method a service
/// serves is listed under its process with exactly the callers its rule names, and nothing else is listed.
final class CallerTableTests: XCTestCase {
    static let processes: [String: [CallerPolicy.Rule]] = [
        "challenge-service": ChallengeService.callers,
        "verification-service": VerificationService.callers,
        "session-service": SessionService.callers + AdminService.callers,
    ]

    /// The method names and callers the table lists for each process (a process may have several rows).
    static func documentedRules() throws -> [String: [String: Set<String>]] {
        let document = ConfigurationDocumentTests.packageRoot.appendingPathComponent("docs/security.md")
        let text = try String(contentsOf: document, encoding: .utf8)
        guard let section = text.range(of: "## Who may call what") else { return [:] }
        var rules: [String: [String: Set<String>]] = [:]
        for line in text[section.upperBound...].split(separator: "\n").prefix(while: { !$0.hasPrefix("## ") }) {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count == 5, let process = cells[1].split(separator: " ").first.map(String.init),
                processes[process] != nil
            else { continue }
            // Every second piece between backquotes is a method's name.
            let methods = cells[2].split(separator: "`", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 1 }.map { String($0.element) }
            let callers = Set(cells[3].split(separator: "(").first.map { $0.split(separator: ",") } ?? []).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            for method in methods { rules[process, default: [:]][method] = Set(callers) }
        }
        return rules
    }

    func testTheTableListsEveryMethodWithTheCallersItsServiceAllows() throws {
        let documented = try Self.documentedRules()
        XCTAssertEqual(Set(documented.keys), Set(Self.processes.keys), "a row for every service")
        for (process, rules) in Self.processes {
            var declared: [String: Set<String>] = [:]
            for rule in rules {
                for path in rule.paths {
                    declared[String(path.split(separator: "/").last ?? ""), default: []].formUnion(rule.callers)
                }
            }
            let listed = documented[process] ?? [:]
            XCTAssertEqual(
                Set(declared.keys).subtracting(listed.keys).sorted(), [], "\(process): served, not in docs/security.md")
            XCTAssertEqual(
                Set(listed.keys).subtracting(declared.keys).sorted(), [], "\(process): in docs/security.md, not served")
            for (method, callers) in declared where listed[method] != nil {
                XCTAssertEqual(listed[method], callers, "\(process) \(method)")
            }
        }
    }
}
