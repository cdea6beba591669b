import Postgres
import XCTest

final class PostgresQueryTests: XCTestCase {
    func testAFragmentKeepsItsBindsRenumberedAfterTheQuerysOwn() {
        let inner: PostgresQuery = "INSERT INTO t (a, b) SELECT \(7), \("x") FROM s WHERE s.c = \(Int64(9))"
        let outer: PostgresQuery = "WITH s AS (SELECT \(1) AS c), w AS (\(fragment: inner)) SELECT \(2), $ FROM s"
        XCTAssertEqual(
            outer.sql,
            "WITH s AS (SELECT $1 AS c), w AS (INSERT INTO t (a, b) SELECT $2, $3 FROM s WHERE s.c = $4) SELECT $5, $ FROM s"
        )
        XCTAssertEqual(outer.binds.count, 5)
        XCTAssertEqual(outer.binds[1], inner.binds[0])
        XCTAssertEqual(outer.binds[3], inner.binds[2])
        // Ten and more binds before it: two-digit placeholders on both sides.
        let many: PostgresQuery =
            "\(1)\(2)\(3)\(4)\(5)\(6)\(7)\(8)\(9)\(10)\(11) \(fragment: "$x \(12) \(13)\(14)\(15)\(16)\(17)\(18)\(19)\(20)\(21)")"
        XCTAssertEqual(many.sql, "$1$2$3$4$5$6$7$8$9$10$11 $x $12 $13$14$15$16$17$18$19$20$21")
        XCTAssertEqual(many.binds.count, 21)
        // First in a query: the text is kept as it is.
        let first: PostgresQuery = "\(fragment: inner);"
        XCTAssertEqual(first.sql, inner.sql + ";")
    }
}
