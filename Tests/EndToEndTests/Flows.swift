import Encoding
import Foundation
import SoftwareAuthenticator
import WebAuthn
import XCTest

/// How a finish request carries the WebAuthn response.
enum BodyForm: CaseIterable {
    /// Flat fields, as the talk's iOS code sends them.
    case flat
    /// `credential`: PublicKeyCredential.toJSON(), as browsers and Android send it.
    case credential
}

/// The app-side steps of every flow, over the gateway's JSON API.
struct Flows {
    let client: GatewayClient

    func uniqueEmail(_ prefix: String = "user") -> String { "\(prefix)-\(UUID().uuidString.prefix(8))@example.com" }

    /// Creates a password account; returns its ID.
    func signUpWithPassword(email: String, password: String = "correct horse battery", name: String = "Ada")
        async throws -> String
    {
        let response = try await client.post(
            "/v1/accounts/password", ["email": email, "password": password, "displayName": name])
        XCTAssertEqual(response.status, 201, response.text)
        return response.json["accountID"] as? String ?? ""
    }

    /// Signs in with a password; returns the access token.
    func signInWithPassword(email: String, password: String = "correct horse battery") async throws -> String {
        let response = try await client.post("/v1/sessions/password", ["email": email, "password": password])
        XCTAssertEqual(response.status, 200, response.text)
        return response.json["accessToken"] as? String ?? ""
    }

    /// A password account, signed in: (account ID, token).
    func passwordUser() async throws -> (accountID: String, token: String, email: String) {
        let email = uniqueEmail()
        let accountID = try await signUpWithPassword(email: email)
        return (accountID, try await signInWithPassword(email: email), email)
    }

    /// Starts adding a passkey; returns the start response.
    func beginRegistration(token: String, mode: String? = nil) async throws -> GatewayResponse {
        try await client.post("/v1/passkeys/registrations", mode.map { ["mode": $0] } ?? [:], bearer: token)
    }

    /// Completes a registration start with the authenticator; returns the finish response.
    func finishRegistration(
        token: String, start: GatewayResponse, authenticator: SoftwareAuthenticator, form: BodyForm = .flat,
        flags: AuthenticatorData.Flags = [.userPresent, .userVerified, .attestedCredentialData],
        attestation: SoftwareAuthenticator.Attestation = .none, origin: String = Stack.origin
    ) async throws -> GatewayResponse {
        let challenge = Base64URL.decode(start.json["challenge"] as? String ?? "") ?? []
        let registration = authenticator.makeRegistration(
            challenge: challenge, rpID: Stack.relyingPartyID, origin: origin, flags: flags, attestation: attestation)
        var body = registrationBody(registration, form: form)
        body["challengeID"] = start.json["challengeID"]
        return try await client.post("/v1/passkeys/registrations/finish", body, bearer: token)
    }

    /// Adds a passkey to a signed-in account, asserting success.
    func addPasskey(token: String, authenticator: SoftwareAuthenticator, form: BodyForm = .flat) async throws {
        let start = try await beginRegistration(token: token)
        XCTAssertEqual(start.status, 200, start.text)
        let finish = try await finishRegistration(token: token, start: start, authenticator: authenticator, form: form)
        XCTAssertEqual(finish.status, 204, finish.text)
    }

    /// Creates an account with a passkey; returns the finish response.
    func createPasskeyAccount(
        authenticator: inout SoftwareAuthenticator, email: String?, displayName: String? = "Grace",
        emailAtFinish: String? = nil, form: BodyForm = .flat,
        flags: AuthenticatorData.Flags = [.userPresent, .userVerified, .attestedCredentialData],
        attestation: SoftwareAuthenticator.Attestation = .none
    ) async throws -> GatewayResponse {
        var startBody: [String: Any] = [:]
        if let email { startBody["email"] = email }
        if let displayName { startBody["displayName"] = displayName }
        let start = try await client.post("/v1/passkeys/account-registrations", startBody)
        XCTAssertEqual(start.status, 200, start.text)
        authenticator.userHandle = Base64URL.decode(start.json["userID"] as? String ?? "") ?? []
        let challenge = Base64URL.decode(start.json["challenge"] as? String ?? "") ?? []
        let registration = authenticator.makeRegistration(
            challenge: challenge, rpID: Stack.relyingPartyID, origin: Stack.origin, flags: flags,
            attestation: attestation)
        var body = registrationBody(registration, form: form)
        body["registrationID"] = start.json["registrationID"]
        if let emailAtFinish { body["email"] = emailAtFinish }
        return try await client.post("/v1/passkeys/account-registrations/finish", body)
    }

    /// Starts a passkey sign-in.
    func beginAuthentication() async throws -> GatewayResponse {
        let start = try await client.post("/v1/passkeys/authentications", [:] as [String: Any])
        XCTAssertEqual(start.status, 200, start.text)
        return start
    }

    /// Finishes a passkey sign-in with `assertion`.
    func finishAuthentication(challengeID: Any?, assertion: AuthenticationResponse, form: BodyForm = .flat)
        async throws -> GatewayResponse
    {
        var body = authenticationBody(assertion, form: form)
        body["challengeID"] = challengeID
        return try await client.post("/v1/passkeys/authentications/finish", body)
    }

    /// Signs in with the authenticator's passkey; returns the finish response.
    func signInWithPasskey(
        _ authenticator: inout SoftwareAuthenticator, form: BodyForm = .flat,
        flags: AuthenticatorData.Flags = [.userPresent, .userVerified]
    ) async throws -> GatewayResponse {
        let start = try await beginAuthentication()
        let challenge = Base64URL.decode(start.json["challenge"] as? String ?? "") ?? []
        let assertion = authenticator.makeAssertion(
            challenge: challenge, rpID: Stack.relyingPartyID, origin: Stack.origin, flags: flags)
        return try await finishAuthentication(challengeID: start.json["challengeID"], assertion: assertion, form: form)
    }

    func registrationBody(_ registration: RegistrationResponse, form: BodyForm) -> [String: Any] {
        let id = Base64URL.encode(registration.credentialID)
        let clientData = Base64URL.encode(registration.clientDataJSON)
        let attestation = Base64URL.encode(registration.attestationObject)
        switch form {
        case .flat:
            return [
                "credentialID": id, "clientDataJSON": clientData, "attestationObject": attestation,
                "transports": registration.transports,
            ]
        case .credential:
            return [
                "credential": [
                    "id": id, "rawId": id, "type": "public-key", "authenticatorAttachment": "platform",
                    "response": [
                        "clientDataJSON": clientData, "attestationObject": attestation,
                        "transports": registration.transports,
                    ],
                    "clientExtensionResults": ["credProps": ["rk": true]],
                ]
            ]
        }
    }

    func authenticationBody(_ assertion: AuthenticationResponse, form: BodyForm) -> [String: Any] {
        let id = Base64URL.encode(assertion.credentialID)
        var fields: [String: Any] = [
            "clientDataJSON": Base64URL.encode(assertion.clientDataJSON),
            "authenticatorData": Base64URL.encode(assertion.authenticatorData),
            "signature": Base64URL.encode(assertion.signature),
        ]
        if let handle = assertion.userHandle { fields["userHandle"] = Base64URL.encode(handle) }
        switch form {
        case .flat:
            fields["credentialID"] = id
            return fields
        case .credential:
            return [
                "credential": [
                    "id": id, "rawId": id, "type": "public-key", "response": fields, "clientExtensionResults": [:],
                ] as [String: Any]
            ]
        }
    }
}
