#if canImport(AuthenticationServices) && (os(iOS) || os(macOS) || os(visionOS))
    import AuthenticationServices
    import Foundation

    // The ASAuthorization requests made from the start responses' options. Only what AuthenticationServices needs
    // is here; everything else of the library is shared with Linux and tested there.

    extension PasskeyRegistrationOptions {
        /// The request that adds a passkey to the signed-in account: a sheet the user confirms in modal mode, or
        /// Automatic Passkey Upgrade in conditional mode (`requestStyle = .conditional`, iOS 18, macOS 15, visionOS
        /// 2). Perform either with `performRequests()`; a conditional request shows no UI and fails quietly when
        /// the credential manager declines, and the password session stays signed in either way.
        ///
        /// Throws ``PasskeyClientError/Code/invalidArgument`` for conditional mode on an older system: do not start
        /// a conditional registration there.
        public func platformRegistrationRequest() throws
            -> ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest
        {
            let provider = ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: relyingPartyID)
            let request = provider.createCredentialRegistrationRequest(
                challenge: challenge, name: userName, userID: userID)
            request.userVerificationPreference = ASAuthorizationPublicKeyCredentialUserVerificationPreference(
                rawValue: userVerification)
            if mode == .conditional {
                if #available(iOS 18.0, macOS 15.0, visionOS 2.0, *) {
                    request.requestStyle = .conditional
                } else {
                    throw PasskeyClientError(
                        code: .invalidArgument,
                        detail: "Conditional registration needs iOS 18, macOS 15 or visionOS 2.")
                }
            }
            return request
        }
    }

    extension PasskeyAccountCreationOptions {
        /// The registration request for an account whose email and display name the app's own form asked for
        /// (iOS 16+). `userName` is what the credential manager shows, usually the email address.
        public func platformRegistrationRequest(userName: String)
            -> ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest
        {
            let provider = ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: relyingPartyID)
            return provider.createCredentialRegistrationRequest(challenge: challenge, name: userName, userID: userID)
        }

        #if compiler(>=6.2)
            /// The account creation sheet (iOS 26, macOS 26, visionOS 26): the user picks a contact and a name and
            /// creates the passkey in one step. Send what it returns with
            /// ``PasskeyAccountCreationFinishOperation/init(registrationID:result:)``.
            @available(iOS 26.0, macOS 26.0, visionOS 26.0, *)
            public func accountCreationRequest(
                acceptedContactIdentifiers: [ASContactIdentifierRequest] = [.email], shouldRequestName: Bool = true
            ) -> ASAuthorizationAccountCreationPlatformPublicKeyCredentialRequest {
                ASAuthorizationAccountCreationProvider().createPlatformPublicKeyCredentialRegistrationRequest(
                    acceptedContactIdentifiers: acceptedContactIdentifiers, shouldRequestName: shouldRequestName,
                    relyingPartyIdentifier: relyingPartyID, challenge: challenge, userID: userID)
            }
        #endif
    }

    extension PasskeyAuthenticationOptions {
        /// The discoverable sign-in request: no allowed credentials, so every passkey of the RP can be offered.
        /// Perform it with `performAutoFillAssistedRequests()` as the sign-in screen appears (iOS, visionOS) so
        /// passkeys show in the QuickType bar of the `.username` field, and with `performRequests()` behind an
        /// explicit "Sign in with a passkey" button.
        public func platformAssertionRequest() -> ASAuthorizationPlatformPublicKeyCredentialAssertionRequest {
            let provider = ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: relyingPartyID)
            let request = provider.createCredentialAssertionRequest(challenge: challenge)
            request.userVerificationPreference = ASAuthorizationPublicKeyCredentialUserVerificationPreference(
                rawValue: userVerification)
            return request
        }
    }
#endif
