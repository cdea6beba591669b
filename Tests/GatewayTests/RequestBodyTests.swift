import Domain
import Encoding
import GatewayCore
import JSON
import ServiceContracts
import XCTest

final class RequestBodyTests: XCTestCase {
    let credentialID: [UInt8] = [1, 2, 3, 4, 250, 251]
    let clientData = Array(#"{"type":"webauthn.create"}"#.utf8)
    let attestation: [UInt8] = [0xA3, 0x63, 0x66, 0x6D, 0x74]
    let authenticatorData: [UInt8] = Array(repeating: 7, count: 37)
    let signature: [UInt8] = [0x30, 0x44, 0x02]
    let userHandle: [UInt8] = Array(repeating: 9, count: 16)

    func body(_ value: JSONValue) throws -> JSONBody { try JSONBody(bytes: value.serialized()) }

    func assertInvalid(
        _ value: JSONValue, mentioning field: String? = nil, _ read: (JSONBody) throws -> Void,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try read(try body(value)), file: file, line: line) { error in
            guard let problem = error as? APIProblem else {
                return XCTFail("not a problem: \(error)", file: file, line: line)
            }
            XCTAssertEqual(problem.status, 400, file: file, line: line)
            XCTAssertEqual(problem.code, "invalid_request", file: file, line: line)
            if let field {
                XCTAssertTrue(
                    problem.detail?.contains(field) == true, "\(problem.detail ?? "")", file: file, line: line)
            }
        }
    }

    var flatRegistration: JSONObject {
        [
            "challengeID": "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c",
            "credentialID": .string(Base64URL.encode(credentialID)),
            "clientDataJSON": .string(Base64URL.encode(clientData)),
            "attestationObject": .string(Base64URL.encode(attestation)), "transports": ["internal", "hybrid"],
        ]
    }

    var standardRegistration: JSONObject {
        [
            "challengeID": "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c",
            "credential": [
                "id": .string(Base64URL.encode(credentialID)), "rawId": .string(Base64URL.encode(credentialID)),
                "type": "public-key", "authenticatorAttachment": "platform",
                "response": [
                    "clientDataJSON": .string(Base64URL.encode(clientData)),
                    "attestationObject": .string(Base64URL.encode(attestation)), "transports": ["internal", "hybrid"],
                    "publicKeyAlgorithm": -7,
                ],
                "clientExtensionResults": ["credProps": ["rk": true]],
            ],
        ]
    }

    func testRegistrationFinishFlatAndStandardFormsGiveTheSameCredential() throws {
        let flat = try RegistrationFinishBody(body(.object(flatRegistration)))
        let standard = try RegistrationFinishBody(body(.object(standardRegistration)))
        XCTAssertEqual(flat.challengeID, "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c")
        XCTAssertEqual(flat.credential.credentialID, credentialID)
        XCTAssertEqual(flat.credential.clientDataJSON, clientData)
        XCTAssertEqual(flat.credential.attestationObject, attestation)
        XCTAssertEqual(flat.credential.transports, ["internal", "hybrid"])
        XCTAssertEqual(flat.credential.clientExtensionResultsJSON, [])
        XCTAssertEqual(standard.credential.credentialID, credentialID)
        XCTAssertEqual(standard.credential.clientDataJSON, clientData)
        XCTAssertEqual(standard.credential.attestationObject, attestation)
        XCTAssertEqual(standard.credential.transports, ["internal", "hybrid"])
        XCTAssertEqual(
            String(decoding: standard.credential.clientExtensionResultsJSON, as: UTF8.self),
            #"{"credProps":{"rk":true}}"#)
    }

    func testStandardFormAcceptsRawIdOrIdAlone() throws {
        for key in ["id", "rawId"] {
            var object = standardRegistration
            var credential = object["credential"]!.objectValue!
            credential[key == "id" ? "rawId" : "id"] = nil
            credential["clientExtensionResults"] = nil
            object["credential"] = .object(credential)
            let parsed = try RegistrationFinishBody(body(.object(object)))
            XCTAssertEqual(parsed.credential.credentialID, credentialID)
            XCTAssertEqual(parsed.credential.clientExtensionResultsJSON, [])
        }
    }

    /// Browsers send both; rawId is the ID, and id (checked for its shape) is only used without it.
    func testRawIdIsTheCredentialIDWhenIdDiffers() throws {
        var object = standardRegistration
        var credential = object["credential"]!.objectValue!
        credential["rawId"] = .string(Base64URL.encode([9, 9]))
        object["credential"] = .object(credential)
        XCTAssertEqual(try RegistrationFinishBody(body(.object(object))).credential.credentialID, [9, 9])
        credential["rawId"] = .null
        object["credential"] = .object(credential)
        XCTAssertEqual(try RegistrationFinishBody(body(.object(object))).credential.credentialID, credentialID)
    }

    func testIdentifiersAreUUIDsAndCredentialIDsHaveTheirLength() throws {
        for bad: JSONValue in ["c-1", "", "3f2a1c9e5b7d4c1e9a3b6d8e0f1a2b3c", "{3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3}"] {
            var object = flatRegistration
            object["challengeID"] = bad
            assertInvalid(.object(object), mentioning: "challengeID must be a UUID") {
                _ = try RegistrationFinishBody($0)
            }
            var authentication = flatAuthentication
            authentication["challengeID"] = bad
            assertInvalid(.object(authentication), mentioning: "challengeID must be a UUID") {
                _ = try AuthenticationFinishBody($0)
            }
        }
        var upper = flatRegistration
        upper["challengeID"] = "3F2A1C9E-5B7D-4C1E-9A3B-6D8E0F1A2B3C"
        XCTAssertEqual(
            try RegistrationFinishBody(body(.object(upper))).challengeID, "3F2A1C9E-5B7D-4C1E-9A3B-6D8E0F1A2B3C")
        for (count, valid) in [(0, false), (1, true), (1023, true), (1024, false)] {
            var object = flatAuthentication
            object["credentialID"] = .string(Base64URL.encode([UInt8](repeating: 0xAB, count: count)))
            if valid {
                XCTAssertEqual(try AuthenticationFinishBody(body(.object(object))).credential.credentialID.count, count)
            } else {
                assertInvalid(.object(object), mentioning: "credentialID") { _ = try AuthenticationFinishBody($0) }
            }
        }
        // Standard base64 and padding decode as well (the document's pattern says so too).
        var padded = flatRegistration
        padded["credentialID"] = .string(Base64URL.encodeStandard([0xFB, 0xFF]))
        XCTAssertEqual(try RegistrationFinishBody(body(.object(padded))).credential.credentialID, [0xFB, 0xFF])
    }

    func testNamesAddressesAndPasswordsHaveTheirShapes() throws {
        let good: JSONObject = [
            "email": " Ada@Example.com ", "password": "e\u{301}e\u{301}e\u{301}e\u{301}", "displayName": "Ada",
        ]
        XCTAssertEqual(try PasswordAccountBody(body(.object(good))).email, " Ada@Example.com ")
        let bad: [(String, JSONValue)] = [
            ("email", "ada"), ("email", "a b@c"), ("email", "a@b@c"), ("email", "@b"), ("email", "a@"), ("email", ""),
            ("email", .string(String(repeating: "a", count: 250) + "@b.co")), ("email", "a\u{7F}@b"),
            ("password", "1234567"), ("password", .string(String(repeating: "p", count: 257))),
            ("displayName", ""), ("displayName", " \u{3000} "), ("displayName", "bell\u{7}"),
            ("displayName", .string(String(repeating: "あ", count: 129))),
        ]
        for (key, value) in bad {
            var object = good
            object[key] = value
            assertInvalid(.object(object), mentioning: key) { _ = try PasswordAccountBody($0) }
        }
        XCTAssertNil(try AccountRegistrationStartBody(body(["email": "", "displayName": .null])).email)
        assertInvalid(["email": "nobody"], mentioning: "email") { _ = try AccountRegistrationStartBody($0) }
        assertInvalid(["displayName": " "], mentioning: "displayName") { _ = try AccountRegistrationStartBody($0) }
        assertInvalid(["name": "\u{0}"], mentioning: "name") { _ = try RenamePasskeyBody($0) }
        // Sign-in takes any strings: a malformed address fails as a wrong password does, in the session service.
        XCTAssertEqual(try PasswordSignInBody(body(["email": "x", "password": ""])).email, "x")
    }

    func testOptionalFieldsMayBeAbsentOrNull() throws {
        var object = flatRegistration
        object["transports"] = nil
        XCTAssertEqual(try RegistrationFinishBody(body(.object(object))).credential.transports, [])
        object["transports"] = .null
        XCTAssertEqual(try RegistrationFinishBody(body(.object(object))).credential.transports, [])
        var standard = standardRegistration
        var credential = standard["credential"]!.objectValue!
        credential["clientExtensionResults"] = ["credProps": ["rk": false]]
        standard["credential"] = .object(credential)
        let parsed = try RegistrationFinishBody(body(.object(standard)))
        XCTAssertEqual(
            String(decoding: parsed.credential.clientExtensionResultsJSON, as: UTF8.self),
            #"{"credProps":{"rk":false}}"#)
    }

    func testEveryMissingFlatRegistrationFieldIsInvalid() {
        for key in ["challengeID", "credentialID", "clientDataJSON", "attestationObject"] {
            var object = flatRegistration
            object[key] = nil
            assertInvalid(.object(object), mentioning: key) { _ = try RegistrationFinishBody($0) }
        }
    }

    func testEveryMistypedOrUndecodableFieldIsInvalid() {
        for key in ["challengeID", "credentialID", "clientDataJSON", "attestationObject"] {
            for bad: JSONValue in [1, true, ["x"], ["a": "b"]] {
                var object = flatRegistration
                object[key] = bad
                assertInvalid(.object(object), mentioning: key) { _ = try RegistrationFinishBody($0) }
            }
        }
        for key in ["credentialID", "clientDataJSON", "attestationObject"] {
            for bad in ["not base64!", "a", "ab$c", "YR"] {
                var object = flatRegistration
                object[key] = .string(bad)
                assertInvalid(.object(object), mentioning: key) { _ = try RegistrationFinishBody($0) }
            }
        }
        for bad: JSONValue in ["internal", 3, [1], ["internal", nil]] {
            var object = flatRegistration
            object["transports"] = bad
            assertInvalid(.object(object), mentioning: "transports") { _ = try RegistrationFinishBody($0) }
        }
    }

    func testMalformedStandardRegistrations() {
        func mutated(_ change: (inout JSONObject) -> Void) -> JSONValue {
            var object = standardRegistration
            var credential = object["credential"]!.objectValue!
            change(&credential)
            object["credential"] = .object(credential)
            return .object(object)
        }
        let cases: [(JSONValue, String)] = [
            (
                mutated {
                    $0["id"] = nil
                    $0["rawId"] = nil
                }, "rawId"
            ),
            (mutated { $0["rawId"] = .string(Base64URL.encode([UInt8](repeating: 9, count: 1024))) }, "rawId"),
            (mutated { $0["rawId"] = "" }, "rawId"),
            (
                mutated {
                    $0["rawId"] = nil
                    $0["id"] = ""
                }, "id"
            ),
            (mutated { $0["authenticatorAttachment"] = 7 }, "authenticatorAttachment"),
            (
                mutated {
                    var response = $0["response"]!.objectValue!
                    response["transports"] = ["usb\u{0}"]
                    $0["response"] = .object(response)
                }, "transports"
            ),
            (mutated { $0["rawId"] = "%%%" }, "rawId"),
            (mutated { $0["type"] = "password" }, "type"),
            (mutated { $0["type"] = 1 }, "type"),
            (mutated { $0["response"] = nil }, "response"),
            (mutated { $0["response"] = "x" }, "response"),
            (
                mutated { $0["response"] = ["attestationObject": .string(Base64URL.encode(self.attestation))] },
                "clientDataJSON"
            ),
            (
                mutated { $0["response"] = ["clientDataJSON": .string(Base64URL.encode(self.clientData))] },
                "attestationObject"
            ),
            (mutated { $0["clientExtensionResults"] = ["credProps": ["rk": "yes"]] }, "rk"),
            (mutated { $0["clientExtensionResults"] = ["credProps": 1] }, "credProps"),
            (mutated { $0["clientExtensionResults"] = [1] }, "clientExtensionResults"),
        ]
        for (value, field) in cases {
            assertInvalid(value, mentioning: field) { _ = try RegistrationFinishBody($0) }
        }
        var both = standardRegistration
        both["clientDataJSON"] = .string(Base64URL.encode(clientData))
        assertInvalid(.object(both), mentioning: "clientDataJSON") { _ = try RegistrationFinishBody($0) }
        var notObject = standardRegistration
        notObject["credential"] = "x"
        assertInvalid(.object(notObject), mentioning: "credential") { _ = try RegistrationFinishBody($0) }
    }

    func testBodiesThatAreNotJSONObjects() {
        for text in ["", "{", "[]", "\"x\"", "{\"a\":1,\"a\":2}", "{} x", "nul", "{\"a\":\"\u{01}\"}"] {
            XCTAssertThrowsError(try JSONBody(bytes: Array(text.utf8))) { error in
                XCTAssertEqual((error as? APIProblem)?.code, "invalid_request", text)
            }
        }
        XCTAssertThrowsError(try JSONBody(bytes: [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]))
        XCTAssertEqual(try JSONBody(bytes: [], emptyAllowed: true).object.count, 0)
    }

    func testAccountRegistrationFinishInBothForms() throws {
        var flat = flatRegistration
        flat["challengeID"] = nil
        flat["registrationID"] = "7b1e4d2a-0c9f-4e8b-b6a5-3c2d1e0f9a8b"
        flat["email"] = "new@example.com"
        let parsed = try AccountRegistrationFinishBody(body(.object(flat)))
        XCTAssertEqual(parsed.registrationID, "7b1e4d2a-0c9f-4e8b-b6a5-3c2d1e0f9a8b")
        XCTAssertEqual(parsed.email, "new@example.com")
        XCTAssertNil(parsed.displayName)
        XCTAssertEqual(parsed.credential.credentialID, credentialID)
        var standard = standardRegistration
        standard["challengeID"] = nil
        standard["registrationID"] = "d4c3b2a1-9f8e-4d7c-a6b5-4e3d2c1b0a99"
        standard["displayName"] = "New"
        let parsedStandard = try AccountRegistrationFinishBody(body(.object(standard)))
        XCTAssertEqual(parsedStandard.registrationID, "d4c3b2a1-9f8e-4d7c-a6b5-4e3d2c1b0a99")
        XCTAssertEqual(parsedStandard.displayName, "New")
        XCTAssertEqual(
            String(decoding: parsedStandard.credential.clientExtensionResultsJSON, as: UTF8.self),
            #"{"credProps":{"rk":true}}"#)
        flat["registrationID"] = nil
        assertInvalid(.object(flat), mentioning: "registrationID") { _ = try AccountRegistrationFinishBody($0) }
        standard["email"] = 5
        assertInvalid(.object(standard), mentioning: "email") { _ = try AccountRegistrationFinishBody($0) }
    }

    var flatAuthentication: JSONObject {
        [
            "challengeID": "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c",
            "credentialID": .string(Base64URL.encode(credentialID)),
            "clientDataJSON": .string(Base64URL.encode(clientData)),
            "authenticatorData": .string(Base64URL.encode(authenticatorData)),
            "signature": .string(Base64URL.encode(signature)), "userHandle": .string(Base64URL.encode(userHandle)),
        ]
    }

    var standardAuthentication: JSONObject {
        [
            "challengeID": "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c",
            "credential": [
                "id": .string(Base64URL.encode(credentialID)), "rawId": .string(Base64URL.encode(credentialID)),
                "type": "public-key",
                "response": [
                    "clientDataJSON": .string(Base64URL.encode(clientData)),
                    "authenticatorData": .string(Base64URL.encode(authenticatorData)),
                    "signature": .string(Base64URL.encode(signature)),
                    "userHandle": .string(Base64URL.encode(userHandle)),
                ],
                "clientExtensionResults": [:],
            ],
        ]
    }

    func testAuthenticationFinishFlatAndStandardFormsGiveTheSameCredential() throws {
        let flat = try AuthenticationFinishBody(body(.object(flatAuthentication)))
        let standard = try AuthenticationFinishBody(body(.object(standardAuthentication)))
        XCTAssertEqual(flat, standard)
        XCTAssertEqual(flat.challengeID, "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c")
        XCTAssertEqual(flat.credential.authenticatorData, authenticatorData)
        XCTAssertEqual(flat.credential.signature, signature)
        XCTAssertEqual(flat.credential.userHandle, userHandle)
    }

    func testMalformedAuthentications() {
        for key in ["challengeID", "credentialID", "clientDataJSON", "authenticatorData", "signature", "userHandle"] {
            var missing = flatAuthentication
            missing[key] = nil
            assertInvalid(.object(missing), mentioning: key) { _ = try AuthenticationFinishBody($0) }
            var mistyped = flatAuthentication
            mistyped[key] = 42
            assertInvalid(.object(mistyped), mentioning: key) { _ = try AuthenticationFinishBody($0) }
            if key != "challengeID" {
                var undecodable = flatAuthentication
                undecodable[key] = "***"
                assertInvalid(.object(undecodable), mentioning: key) { _ = try AuthenticationFinishBody($0) }
            }
        }
        for key in ["clientDataJSON", "authenticatorData", "signature", "userHandle"] {
            var object = standardAuthentication
            var credential = object["credential"]!.objectValue!
            var response = credential["response"]!.objectValue!
            response[key] = nil
            credential["response"] = .object(response)
            object["credential"] = .object(credential)
            assertInvalid(.object(object), mentioning: key) { _ = try AuthenticationFinishBody($0) }
        }
        var both = standardAuthentication
        both["signature"] = "AA"
        assertInvalid(.object(both), mentioning: "signature") { _ = try AuthenticationFinishBody($0) }
    }

    func testSmallBodies() throws {
        XCTAssertEqual(try RegistrationStartBody(JSONBody(bytes: [], emptyAllowed: true)).mode, .modal)
        XCTAssertEqual(try RegistrationStartBody(body(["mode": "conditional"])).mode, .conditional)
        XCTAssertEqual(try RegistrationStartBody(body(["mode": "modal"])).mode, .modal)
        assertInvalid(["mode": "silent"], mentioning: "mode") { _ = try RegistrationStartBody($0) }
        assertInvalid(["mode": 1], mentioning: "mode") { _ = try RegistrationStartBody($0) }
        let account = try PasswordAccountBody(
            body(["email": "a@b.c", "password": "correct horse", "displayName": "A"]))
        XCTAssertEqual(account.displayName, "A")
        for key in ["email", "password", "displayName"] {
            var object: JSONObject = ["email": "a@b.c", "password": "correct horse", "displayName": "A"]
            object[key] = nil
            assertInvalid(.object(object), mentioning: key) { _ = try PasswordAccountBody($0) }
            object[key] = false
            assertInvalid(.object(object), mentioning: key) { _ = try PasswordAccountBody($0) }
        }
        assertInvalid(["email": "a@b.c"], mentioning: "password") { _ = try PasswordSignInBody($0) }
        assertInvalid(["name": 3], mentioning: "name") { _ = try RenamePasskeyBody($0) }
        XCTAssertEqual(try RenamePasskeyBody(body(["name": "Phone"])).name, "Phone")
        let start = try AccountRegistrationStartBody(body(["email": "x@y.z"]))
        XCTAssertEqual(start.email, "x@y.z")
        XCTAssertNil(start.displayName)
        assertInvalid(["displayName": []], mentioning: "displayName") { _ = try AccountRegistrationStartBody($0) }
    }

    func testJSONContentTypes() {
        XCTAssertTrue(isJSONContentType("application/json"))
        XCTAssertTrue(isJSONContentType("Application/JSON; charset=utf-8"))
        XCTAssertTrue(isJSONContentType("application/vnd.api+json"))
        XCTAssertFalse(isJSONContentType(nil))
        XCTAssertFalse(isJSONContentType("text/plain"))
        XCTAssertFalse(isJSONContentType("application/x-www-form-urlencoded"))
        XCTAssertFalse(isJSONContentType("text/json+"))
        XCTAssertTrue(isJSONContentType(" application / json ;charset=utf-8"))
        XCTAssertFalse(isJSONContentType("application/+json"), "a suffix needs a subtype before it")
        XCTAssertFalse(isJSONContentType(";application/json"), "parameters without a media type")
        XCTAssertFalse(isJSONContentType("application/jsonp"))
        XCTAssertFalse(isJSONContentType("application/json\u{212A}"))
        XCTAssertFalse(isJSONContentType(""))
    }
}
