import IPAddresses
import XCTest

final class IPAddressesTests: XCTestCase {
    func testAddressesParseWithTheirFamilyAndCanonicalText() throws {
        let v4 = try XCTUnwrap(IPAddress(parsing: "10.0.0.1"))
        XCTAssertTrue(v4.isV4)
        XCTAssertFalse(v4.isV6)
        XCTAssertEqual(v4.canonical, "10.0.0.1")
        // An IPv4-mapped IPv6 address is the IPv4 address it maps.
        let mapped = try XCTUnwrap(IPAddress(parsing: "::FFFF:10.0.0.1"))
        XCTAssertTrue(mapped.isV4)
        XCTAssertTrue(mapped.isV6)
        XCTAssertEqual(mapped.bytes, v4.bytes)
        XCTAssertEqual(mapped.canonical, "10.0.0.1")
        XCTAssertEqual(mapped.description, "::FFFF:10.0.0.1")
        let v6 = try XCTUnwrap(IPAddress(parsing: "2001:DB8:0:0:0:0:0:1"))
        XCTAssertFalse(v6.isV4)
        XCTAssertEqual(v6.canonical, "2001:db8::1")
        for bad in ["", "10.0.0", "10.0.0.256", "host.example", "1::2::3", "fe80::1%eth0", " 10.0.0.1", "10.0.0.1/8"] {
            XCTAssertNil(IPAddress(parsing: bad), bad)
        }
    }

    func testAnAddressMaskedToItsPrefix() throws {
        let address = try XCTUnwrap(IPAddress(parsing: "2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff"))
        XCTAssertEqual(address.masked(toPrefixLength: 64).canonical, "2001:db8:aaaa:bbbb::")
        XCTAssertEqual(address.masked(toPrefixLength: 64).description, "2001:db8:aaaa:bbbb::")
        XCTAssertEqual(address.masked(toPrefixLength: 56).canonical, "2001:db8:aaaa:bb00::")
        XCTAssertEqual(address.masked(toPrefixLength: 52).canonical, "2001:db8:aaaa:b000::")
        XCTAssertEqual(address.masked(toPrefixLength: 48).canonical, "2001:db8:aaaa::")
        XCTAssertEqual(address.masked(toPrefixLength: 128), address.masked(toPrefixLength: 200))
        XCTAssertEqual(address.masked(toPrefixLength: 128).canonical, address.canonical)
        XCTAssertEqual(address.masked(toPrefixLength: 0).canonical, "::")
        XCTAssertEqual(
            IPAddress(parsing: "2001:db8:aaaa:bbbb::1")?.masked(toPrefixLength: 64).bytes,
            address.masked(toPrefixLength: 64).bytes)
        // An IPv4 address's prefix counts in the mapped form.
        XCTAssertEqual(IPAddress(parsing: "192.0.2.77")?.masked(toPrefixLength: 120).canonical, "192.0.2.0")
        XCTAssertEqual(IPAddress(parsing: "192.0.2.77")?.masked(toPrefixLength: 120).isV4, true)
    }

    func testTheIPv4AnIPv6AddressCarries() {
        XCTAssertEqual(IPAddress(parsing: "192.0.2.1")?.embeddedV4, [192, 0, 2, 1])
        XCTAssertEqual(IPAddress(parsing: "64:ff9b::10.1.2.3")?.embeddedV4, [10, 1, 2, 3])
        XCTAssertEqual(IPAddress(parsing: "2002:a01:203::1")?.embeddedV4, [10, 1, 2, 3])
        XCTAssertNil(IPAddress(parsing: "2001:db8::1")?.embeddedV4)
    }

    func testBlocksHoldTheirOwnFamily() throws {
        let private10 = try XCTUnwrap(IPNetwork(parsing: "10.0.0.0/8"))
        XCTAssertTrue(private10.contains(IPAddress(parsing: "10.255.0.1")!))
        XCTAssertTrue(private10.contains(IPAddress(parsing: "::ffff:10.1.2.3")!), "mapped is IPv4")
        XCTAssertFalse(private10.contains(IPAddress(parsing: "11.0.0.1")!))
        // An IPv6 block holds IPv6 addresses only: ::/0 is not every IPv4 address too.
        let everyV6 = try XCTUnwrap(IPNetwork(parsing: "::/0"))
        XCTAssertTrue(everyV6.contains(IPAddress(parsing: "2001:db8::1")!))
        XCTAssertFalse(everyV6.contains(IPAddress(parsing: "10.0.0.1")!))
        XCTAssertFalse(everyV6.contains(IPAddress(parsing: "::ffff:10.0.0.1")!))
        // A block written IPv4-mapped is the IPv4 block.
        let mapped = try XCTUnwrap(IPNetwork(parsing: "::ffff:10.0.0.0/104"))
        XCTAssertTrue(mapped.contains(IPAddress(parsing: "10.9.9.9")!))
        XCTAssertFalse(mapped.contains(IPAddress(parsing: "11.0.0.1")!))
        let uniqueLocal = try XCTUnwrap(IPNetwork(parsing: "fc00::/7"))
        XCTAssertTrue(uniqueLocal.contains(IPAddress(parsing: "fd12::1")!))
        XCTAssertFalse(uniqueLocal.contains(IPAddress(parsing: "fe80::1")!))
        let one = try XCTUnwrap(IPNetwork(parsing: "::1"))
        XCTAssertTrue(one.contains(IPAddress(parsing: "0:0::1")!))
        XCTAssertFalse(one.contains(IPAddress(parsing: "::2")!))
        XCTAssertTrue(IPNetwork(parsing: "0.0.0.0/0")!.contains(IPAddress(parsing: "203.0.113.9")!))
        for bad in [
            "10.0.0.0/33", "::/129", "10.0.0.0/8/8", "10.0.0.0/x", "10.0.0.0/-1", "10.0.0.0/", "host.example/8", "/8",
        ] {
            XCTAssertNil(IPNetwork(parsing: bad), bad)
        }
    }
}
