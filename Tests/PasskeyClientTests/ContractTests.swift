import Foundation
import GatewayCore
import JSON
import PasskeyClient
import XCTest

/// The library against the gateway's own description of itself: its router's route list and `openapi.json`. Any
/// route, field or code added to the gateway without the library (or the other way round) fails here.
final class ContractTests: XCTestCase {
    let document: JSONValue = (try? JSONReader.parse(OpenAPIDocument.bytes)) ?? .null

    func testTheOperationsAreTheGatewaysRoutes() {
        XCTAssertEqual(PasskeyAPI.routes.map(\.description), GatewayApplication.routeNames)
        XCTAssertEqual(Set(SampleOperations.all.map(\.route)), Set(PasskeyAPI.routes), "a route has no sample")
    }

    func testEveryRouteMatchesItsOpenAPIOperation() throws {
        let paths = try XCTUnwrap(document["paths"]?.objectValue)
        for route in PasskeyAPI.routes {
            let operation = try XCTUnwrap(
                paths[route.pattern]?[route.method.rawValue.lowercased()], "\(route) is not in openapi.json")
            XCTAssertEqual(operation["operationId"]?.stringValue, route.operationID, "\(route)")
            let security = operation["security"]?.arrayValue ?? []
            let needsBearer = security.contains { $0["bearer"] != nil }
            XCTAssertEqual(route.requiresAccessToken, needsBearer, "\(route): bearer")
        }
    }

    func testOnlyStartRoutesAndGETsAreRetried() {
        let starts: Set<String> = [
            "POST /v1/passkeys/registrations", "POST /v1/passkeys/account-registrations",
            "POST /v1/passkeys/authentications",
        ]
        for route in PasskeyAPI.routes {
            XCTAssertEqual(route.isRetryable, route.method == .get || starts.contains(route.description), "\(route)")
        }
    }

    func testPathsAreWhatTheGatewayRouterMatches() throws {
        for operation in SampleOperations.all {
            let path = try operation.route.path(operation.pathParameters)
            let parameters = RoutePattern(operation.route.pattern).match(path)
            XCTAssertEqual(parameters, operation.pathParameters, "\(operation.route): \(path)")
        }
        // Parameters are percent-encoded, and the router decodes them back.
        let odd = SessionRevocationOperation(sessionID: "a/b c%")
        let path = try odd.route.path(odd.pathParameters)
        XCTAssertEqual(path, "/v1/sessions/a%2Fb%20c%25")
        XCTAssertEqual(RoutePattern(odd.route.pattern).match(path), ["sessionID": "a/b c%"])
        XCTAssertThrowsError(try odd.route.path([:])) { error in
            XCTAssertEqual((error as? PasskeyClientError)?.code, .invalidArgument)
        }
    }

    func testTheErrorCodesAndReasonsAreTheDocumentsAndTheTwoSetsAreApart() throws {
        let problem = try XCTUnwrap(document["components"]?["schemas"]?["Problem"]?["properties"])
        let codes = Set((problem["code"]?["enum"]?.arrayValue ?? []).compactMap(\.stringValue))
        XCTAssertEqual(Set(PasskeyClientError.Code.gatewayCodes.map(\.rawValue)), codes)
        let reasons = Set((problem["reason"]?["enum"]?.arrayValue ?? []).compactMap(\.stringValue))
        XCTAssertEqual(Set(PasskeyClientError.Reason.known.map(\.rawValue)), reasons)
        XCTAssertTrue(PasskeyClientError.Code.gatewayCodes.isDisjoint(with: PasskeyClientError.Code.clientCodes))
    }

    /// Each response schema's example decodes; without any required member, or with any member of the wrong type,
    /// decoding fails with an error naming that member.
    func testResponsesDecodeAsTheSchemasSayAndNameEveryBrokenField() throws {
        var checked = 0
        for operation in SampleOperations.all {
            guard let (status, schema) = try successSchema(of: operation.route),
                schema["properties"] != nil
                    || schema["items"] != nil
            else { continue }
            let example = Schema.example(schema, in: document)
            try assertDecodes(operation, status: status, example, "\(operation.route)")
            for path in Schema.requiredPaths(schema, example: example, in: document) {
                let broken = Schema.removing(path, from: example)
                assertMalformed(operation, status: status, broken, field: path.text, "\(operation.route) without")
                checked += 1
            }
            for path in Schema.leafPaths(example) {
                let broken = Schema.replacing(path, in: example) { value in
                    value.stringValue != nil ? .number(12345) : .string("text")
                }
                assertMalformed(operation, status: status, broken, field: path.text, "\(operation.route) mistyped")
                checked += 1
            }
        }
        XCTAssertGreaterThan(checked, 100)
    }

    /// Every request body the library writes is valid for its route's request schema, and it sends none only where
    /// the route requires none.
    func testRequestBodiesMatchTheSchemas() throws {
        let paths = try XCTUnwrap(document["paths"])
        for operation in SampleOperations.all {
            let description = paths[operation.route.pattern]?[operation.route.method.rawValue.lowercased()]
            let schema = description?["requestBody"]?["content"]?["application/json"]?["schema"]
            guard let encoded = try operation.body.encoded() else {
                XCTAssertNotEqual(
                    description?["requestBody"]?["required"], .boolean(true), "\(operation.route) sends no body")
                continue
            }
            XCTAssertEqual(encoded.contentType, "application/json")
            let value = try JSONReader.parse(Array(encoded.data))
            let problems = Schema.validate(value, against: try XCTUnwrap(schema, "\(operation.route)"), in: document)
            XCTAssertEqual(problems, [], "\(operation.route): \(String(decoding: encoded.data, as: UTF8.self))")
        }
    }

    func testTheServedDocumentDecodes() throws {
        let description = try OpenAPIDocumentOperation().decodeResponse(
            PasskeyHTTPResponse(
                status: 200, headers: ["Content-Type": "application/json"], body: Data(OpenAPIDocument.bytes)))
        XCTAssertTrue(description.openapi.hasPrefix("3.1"))
        XCTAssertEqual(description.routes, Set(GatewayApplication.routeNames))
    }

    // MARK: - Helpers

    /// The first 2xx JSON response of the route.
    func successSchema(of route: APIRoute) throws -> (Int, JSONValue)? {
        let responses = document["paths"]?[route.pattern]?[route.method.rawValue.lowercased()]?["responses"]
        for (status, response) in try XCTUnwrap(responses?.objectValue) where status.hasPrefix("2") {
            if let schema = response["content"]?["application/json"]?["schema"] {
                return (Int(status) ?? 200, Schema.resolve(schema, in: document))
            }
        }
        return nil
    }

    func response(_ status: Int, _ value: JSONValue) -> PasskeyHTTPResponse {
        PasskeyHTTPResponse(
            status: status, headers: ["content-type": "application/json"], body: Data(value.serialized()))
    }

    func assertDecodes(_ operation: any PasskeyAPIOperation, status: Int, _ value: JSONValue, _ message: String)
        throws
    {
        do {
            _ = try decode(operation, response(status, value))
        } catch {
            XCTFail("\(message): \(error)\n\(JSONWriter.string(value))")
        }
    }

    func assertMalformed(
        _ operation: any PasskeyAPIOperation, status: Int, _ value: JSONValue, field: String, _ message: String
    ) {
        do {
            _ = try decode(operation, response(status, value))
            XCTFail("\(message) \(field): decoded")
        } catch let error as PasskeyClientError {
            XCTAssertEqual(error.code, .malformedResponse, "\(message) \(field)")
            XCTAssertEqual(error.field, field, "\(message) \(field): \(error)")
            XCTAssertEqual(error.status, status)
        } catch {
            XCTFail("\(message) \(field): \(error)")
        }
    }

    func decode<Operation: PasskeyAPIOperation>(_ operation: Operation, _ response: PasskeyHTTPResponse) throws -> Any {
        try operation.decodeResponse(response)
    }
}

/// One operation, at least, of every route, with every optional part filled in somewhere.
enum SampleOperations {
    static let registration = PasskeyRegistrationCredential(
        credentialID: Data([1, 2, 3]), clientDataJSON: Data("{}".utf8), attestationObject: Data([0xA0]),
        transports: ["internal", "hybrid"], authenticatorAttachment: "platform", isDiscoverable: true)
    static let assertion = PasskeyAssertion(
        credentialID: Data([1, 2, 3]), clientDataJSON: Data("{}".utf8),
        authenticatorData: Data(repeating: 7, count: 37),
        signature: Data([0x30, 0x01]), userHandle: Data([9, 9]), authenticatorAttachment: "platform")

    static let all: [any PasskeyAPIOperation] = [
        PasswordAccountCreationOperation(email: "ada@example.com", password: "correct horse", displayName: "Ada"),
        PasswordSignInOperation(email: "ada@example.com", password: "correct horse"),
        PasskeyRegistrationStartOperation(), PasskeyRegistrationStartOperation(mode: .conditional),
        PasskeyRegistrationFinishOperation(challengeID: "c", credential: registration),
        PasskeyRegistrationFinishOperation(challengeID: "c", credential: registration, encoding: .webAuthnJSON),
        PasskeyRegistrationFinishOperation(
            challengeID: "c", credentialID: Data([1]), clientDataJSON: Data([2]), attestationObject: Data([3])),
        PasskeyAccountCreationStartOperation(),
        PasskeyAccountCreationStartOperation(emailAddress: "grace@example.com", displayName: "Grace"),
        PasskeyAccountCreationFinishOperation(registrationID: "r", credential: registration),
        PasskeyAccountCreationFinishOperation(
            registrationID: "r", emailAddress: "grace@example.com", displayName: "Grace", credential: registration,
            encoding: .webAuthnJSON),
        PasskeyAccountCreationFinishOperation(
            registrationID: "r",
            result: PasskeyAccountCreationResult(
                emailAddress: "g@example.com", displayName: nil, credential: registration)),
        PasskeyAuthenticationStartOperation(),
        PasskeyAuthenticationFinishOperation(challengeID: "c", assertion: assertion),
        PasskeyAuthenticationFinishOperation(challengeID: "c", assertion: assertion, encoding: .webAuthnJSON),
        CurrentSessionOperation(), SessionRefreshOperation(refreshToken: "prt_" + String(repeating: "A", count: 70)),
        SignOutOperation(), SessionListOperation(),
        SessionRevocationOperation(sessionID: "3f2a1c9e-0000-4000-8000-000000000000"), AccountOperation(),
        AccountRenameOperation(displayName: "Ada L."),
        PasskeyProviderIconOperation(aaguid: "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4", variant: .dark),
        PasskeyListOperation(), PasskeyRenameOperation(credentialID: Data([0xFB, 0xFF]), name: "Work phone"),
        PasskeyRemovalOperation(credentialID: Data([0xFB, 0xFF])),
        EmailVerificationRequestOperation(), EmailVerificationOperation(code: "01234567"), RecoveryCodesOperation(),
        PasswordRemovalOperation(), PasswordChangeOperation(password: "a new passphrase"),
        PasswordReauthenticationOperation(password: "the password"),
        PasskeyReauthenticationOperation(challengeID: "c", assertion: assertion),
        RecoveryStartOperation(email: "ada@example.com"),
        RecoveryFinishOperation(email: "ada@example.com", proof: .emailCode("01234567")),
        RecoveryFinishOperation(email: "ada@example.com", proof: .recoveryCode("ABCD-EFGH-JKMN-PQRS")),
        RecoveryPasskeyRegistrationFinishOperation(challengeID: "c", credential: registration),
        RecoveryPasswordFinishOperation(password: "a new passphrase"),
        AppleAppSiteAssociationOperation(),
        AssetLinksOperation(), RelatedOriginsOperation(), PasskeyEndpointsOperation(), JSONWebKeySetOperation(),
        DiscoveryDocumentOperation(), HealthOperation(),
        ReadinessOperation(), MetricsOperation(), OpenAPIDocumentOperation(),
    ]
}
