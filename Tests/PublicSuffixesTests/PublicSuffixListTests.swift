import XCTest

@testable import PublicSuffixes

/// The list's algorithm against the Public Suffix List project's own test cases (`tests/test_psl.txt`, public
/// domain, as Debian's `publicsuffix` package ships them), on the shipped list; the format's parsing; and Punycode
/// against RFC 3492's samples.
final class PublicSuffixListTests: XCTestCase {
    let list = PublicSuffixList.shipped!

    /// (host, its registrable domain or nil), from test_psl.txt.
    let cases: [(String, String?)] = [
        ("COM", nil), ("example.COM", "example.com"), ("WwW.example.COM", "example.com"),
        (".com", nil), (".example", nil), (".example.com", nil), (".example.example", nil),
        ("example", nil), ("example.example", "example.example"), ("b.example.example", "example.example"),
        ("a.b.example.example", "example.example"),
        ("biz", nil), ("domain.biz", "domain.biz"), ("b.domain.biz", "domain.biz"), ("a.b.domain.biz", "domain.biz"),
        ("com", nil), ("example.com", "example.com"), ("b.example.com", "example.com"),
        ("a.b.example.com", "example.com"), ("uk.com", nil), ("example.uk.com", "example.uk.com"),
        ("b.example.uk.com", "example.uk.com"), ("a.b.example.uk.com", "example.uk.com"), ("test.ac", "test.ac"),
        ("mm", nil), ("c.mm", nil), ("b.c.mm", "b.c.mm"), ("a.b.c.mm", "b.c.mm"),
        ("jp", nil), ("test.jp", "test.jp"), ("www.test.jp", "test.jp"), ("ac.jp", nil),
        ("test.ac.jp", "test.ac.jp"), ("www.test.ac.jp", "test.ac.jp"), ("kyoto.jp", nil),
        ("test.kyoto.jp", "test.kyoto.jp"), ("ide.kyoto.jp", nil), ("b.ide.kyoto.jp", "b.ide.kyoto.jp"),
        ("a.b.ide.kyoto.jp", "b.ide.kyoto.jp"), ("c.kobe.jp", nil), ("b.c.kobe.jp", "b.c.kobe.jp"),
        ("a.b.c.kobe.jp", "b.c.kobe.jp"), ("city.kobe.jp", "city.kobe.jp"), ("www.city.kobe.jp", "city.kobe.jp"),
        ("ck", nil), ("test.ck", nil), ("b.test.ck", "b.test.ck"), ("a.b.test.ck", "b.test.ck"),
        ("www.ck", "www.ck"), ("www.www.ck", "www.ck"),
        ("us", nil), ("test.us", "test.us"), ("www.test.us", "test.us"), ("ak.us", nil),
        ("test.ak.us", "test.ak.us"), ("www.test.ak.us", "test.ak.us"), ("k12.ak.us", nil),
        ("test.k12.ak.us", "test.k12.ak.us"), ("www.test.k12.ak.us", "test.k12.ak.us"),
        ("食狮.com.cn", "食狮.com.cn"), ("食狮.公司.cn", "食狮.公司.cn"), ("www.食狮.公司.cn", "食狮.公司.cn"),
        ("shishi.公司.cn", "shishi.公司.cn"), ("公司.cn", nil), ("食狮.中国", "食狮.中国"), ("www.食狮.中国", "食狮.中国"),
        ("shishi.中国", "shishi.中国"), ("中国", nil),
        ("xn--85x722f.com.cn", "xn--85x722f.com.cn"), ("xn--85x722f.xn--55qx5d.cn", "xn--85x722f.xn--55qx5d.cn"),
        ("www.xn--85x722f.xn--55qx5d.cn", "xn--85x722f.xn--55qx5d.cn"),
        ("shishi.xn--55qx5d.cn", "shishi.xn--55qx5d.cn"), ("xn--55qx5d.cn", nil),
        ("xn--85x722f.xn--fiqs8s", "xn--85x722f.xn--fiqs8s"), ("www.xn--85x722f.xn--fiqs8s", "xn--85x722f.xn--fiqs8s"),
        ("shishi.xn--fiqs8s", "shishi.xn--fiqs8s"), ("xn--fiqs8s", nil),
    ]

    func testTheProjectsOwnCasesOnTheShippedList() {
        XCTAssertGreaterThan(list.count, 9000)
        for (host, expected) in cases {
            XCTAssertEqual(list.registrableDomain(of: host), expected, host)
        }
    }

    func testListedPublicSuffixesAreWhatBrowsersRefuseAsARelyingPartyID() {
        for suffix in ["com", "co.uk", "github.io", "c.mm", "test.ck", "公司.cn", "xn--55qx5d.cn", "CO.UK"] {
            XCTAssertTrue(list.isListedPublicSuffix(suffix), suffix)
        }
        // A registrable name, an exception to a wildcard, and names only the default rule would make suffixes.
        for host in ["example.com", "example.co.uk", "me.github.io", "www.ck", "intranet", "localhost", "mm"] {
            XCTAssertFalse(list.isListedPublicSuffix(host), host)
        }
        XCTAssertEqual(list.publicSuffix(of: "intranet")?.match, .defaultRule)
        XCTAssertEqual(list.publicSuffix(of: "shop.example.co.uk")?.suffix, "co.uk")
        XCTAssertEqual(list.publicSuffix(of: "a.b.c.mm")?.suffix, "c.mm")
        XCTAssertEqual(list.publicSuffix(of: "a.www.ck")?.suffix, "ck", "the exception prevails over *.ck")
        for malformed in ["", ".", "a..b", "example.com.", ".example.com"] {
            XCTAssertNil(list.publicSuffix(of: malformed), malformed)
            XCTAssertNil(list.registrableDomain(of: malformed), malformed)
            XCTAssertFalse(list.isListedPublicSuffix(malformed), malformed)
        }
    }

    func testTheFormatsRulesCommentsAndWhiteSpace() {
        let small = PublicSuffixList(
            parsing: """
                // a comment: com
                com

                *.WILD   trailing text is not part of the rule
                !keep.wild
                  // an indented comment
                公司.cn
                """)
        XCTAssertEqual(small.registrableDomain(of: "a.example.com"), "example.com")
        XCTAssertNil(small.registrableDomain(of: "x.wild"), "*.wild makes x.wild a suffix")
        XCTAssertEqual(small.registrableDomain(of: "a.b.x.wild"), "b.x.wild")
        XCTAssertEqual(small.registrableDomain(of: "a.keep.wild"), "keep.wild")
        XCTAssertEqual(small.registrableDomain(of: "a.xn--55qx5d.cn"), "a.xn--55qx5d.cn")
        XCTAssertFalse(small.isListedPublicSuffix("a"), "`a` is in no rule but the comment's")
        XCTAssertEqual(small.count, 5, "com, *.wild, !keep.wild, and 公司.cn in both forms")
    }

    func testPunycodeOfRFC3492sSamples() {
        XCTAssertEqual(Punycode.asciiLabel("公司"), "xn--55qx5d")
        XCTAssertEqual(Punycode.asciiLabel("中国"), "xn--fiqs8s")
        XCTAssertEqual(Punycode.asciiLabel("食狮"), "xn--85x722f")
        XCTAssertEqual(Punycode.asciiLabel("bücher"), "xn--bcher-kva")
        XCTAssertEqual(Punycode.asciiLabel("plain"), "plain")
        // RFC 3492 §7.1 (L): Japanese, mixed with ASCII.
        XCTAssertEqual(Punycode.asciiLabel("3年b組金八先生"), "xn--3b-ww4c5e180e575a65lsy2b")
        // (E) Hebrew.
        XCTAssertEqual(Punycode.asciiLabel("למההםפשוטלאמדבריםעברית"), "xn--4dbcagdahymbxekheh6e0a7fei0b")
    }
}
