import BuildInfo
import Foundation
import Observability
import XCTest

/// The product's version and the commit stamp: one version, the `VERSION` file's, compiled in; a commit only when
/// the stamp beside the executables names one.
final class BuildInfoTests: XCTestCase {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func testTheCompiledInVersionIsTheVersionFile() throws {
        let file = try String(contentsOf: Self.packageRoot.appendingPathComponent("VERSION"), encoding: .utf8)
        XCTAssertEqual(file, BuildInfo.productVersion + "\n", "VERSION holds the version and one newline")
    }

    func testTheVersionIsSemanticVersioning() throws {
        // semver.org's core form with an optional pre-release: MAJOR.MINOR.PATCH, no leading zeros.
        let semver = try Regex(#"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$"#)
        XCTAssertNotNil(BuildInfo.productVersion.wholeMatch(of: semver), BuildInfo.productVersion)
    }

    func testTheChangelogHasASectionForTheVersion() throws {
        let changelog = try String(
            contentsOf: Self.packageRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        XCTAssertTrue(
            changelog.contains("\n## [\(BuildInfo.productVersion)] - "),
            "CHANGELOG.md has no section for \(BuildInfo.productVersion)")
        XCTAssertTrue(changelog.contains("\n## [Unreleased]"), "CHANGELOG.md keeps an Unreleased section on top")
    }

    func testACommitIsTakenOnlyFromAStampThatNamesOne() {
        let full = "a314a69f0c6d7e2b9d5c1e8f3a2b4c6d8e0f1a2b"
        XCTAssertEqual(BuildInfo.commit(stamp: full + "\n"), full)
        XCTAssertEqual(BuildInfo.commit(stamp: full), full)
        XCTAssertEqual(BuildInfo.commit(stamp: "a314a69"), "a314a69")
        XCTAssertEqual(BuildInfo.commit(stamp: "a314a69-dirty\n"), "a314a69-dirty")
        XCTAssertEqual(BuildInfo.commit(stamp: " \(full) \nsecond line"), full)
        for bad in [
            nil, "", "\n", "a314a6", full + "0", "A314A69", "a314a69-clean", "-dirty", "a314a69\"} 1\nx{",
            "g314a69", "a314 a69",
        ] {
            XCTAssertEqual(BuildInfo.commit(stamp: bad), BuildInfo.unknownCommit, String(describing: bad))
        }
    }

    func testOnlyAFirstArgumentOfDashDashVersionAsksForTheVersion() {
        XCTAssertTrue(BuildInfo.asksForVersion(["gateway", "--version"]))
        XCTAssertTrue(BuildInfo.asksForVersion(["/usr/local/bin/passkey-admin", "--version", "extra"]))
        XCTAssertFalse(BuildInfo.asksForVersion(["gateway"]))
        XCTAssertFalse(BuildInfo.asksForVersion(["passkey-admin", "token", "--version"]))
        XCTAssertFalse(BuildInfo.asksForVersion(["gateway", "-v"]))
        XCTAssertFalse(BuildInfo.asksForVersion([]))
    }

    func testTheVersionLineAndTheMetric() {
        let build = BuildInfo(version: "1.2.3", commit: "a314a69")
        XCTAssertEqual(build.versionLine(program: "gateway"), "gateway 1.2.3 (commit a314a69)")
        let metrics = MetricsRegistry()
        build.record(in: metrics)
        let text = metrics.exposition()
        XCTAssertTrue(text.contains("# TYPE passkey_build_info gauge"), text)
        XCTAssertTrue(
            text.contains(#"passkey_build_info{version="1.2.3",commit="a314a69"} 1"#)
                || text.contains(#"passkey_build_info{commit="a314a69",version="1.2.3"} 1"#), text)
    }
}
