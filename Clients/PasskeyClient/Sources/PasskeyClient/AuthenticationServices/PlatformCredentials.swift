#if canImport(AuthenticationServices) && (os(iOS) || os(macOS) || os(visionOS))
    import AuthenticationServices
    import Foundation

    // The platform's credentials as the finish operations' values. The raw client data is passed on as the
    // platform serialized it: the signature covers its hash, so it is never rebuilt.

    extension PasskeyRegistrationCredential {
        /// A new platform passkey. Throws ``PasskeyClientError/Code/invalidArgument`` when the platform returned
        /// no attestation object.
        public init(_ registration: ASAuthorizationPlatformPublicKeyCredentialRegistration) throws {
            guard let attestationObject = registration.rawAttestationObject, !attestationObject.isEmpty else {
                throw PasskeyClientError(code: .invalidArgument, detail: "The registration has no attestation object.")
            }
            self.init(
                credentialID: registration.credentialID, clientDataJSON: registration.rawClientDataJSON,
                attestationObject: attestationObject)
        }
    }

    extension PasskeyAssertion {
        /// A platform passkey's assertion. Throws ``PasskeyClientError/Code/invalidArgument`` when the platform
        /// returned no authenticator data or signature.
        public init(_ assertion: ASAuthorizationPlatformPublicKeyCredentialAssertion) throws {
            // These are implicitly unwrapped in the SDK; read them as the optionals they are.
            let authenticatorData: Data? = assertion.rawAuthenticatorData
            let signature: Data? = assertion.signature
            let userHandle: Data? = assertion.userID
            guard let authenticatorData, let signature else {
                throw PasskeyClientError(
                    code: .invalidArgument, detail: "The assertion has no authenticator data or signature.")
            }
            self.init(
                credentialID: assertion.credentialID, clientDataJSON: assertion.rawClientDataJSON,
                authenticatorData: authenticatorData, signature: signature,
                userHandle: userHandle.flatMap { $0.isEmpty ? nil : $0 })
        }
    }

    #if compiler(>=6.2)
        extension PasskeyAccountCreationResult {
            /// What the account creation sheet returned: the email address chosen (nil for a phone number), a
            /// display name formatted from the name chosen, and the new passkey.
            @available(iOS 26.0, macOS 26.0, visionOS 26.0, *)
            public init(_ credential: ASAuthorizationAccountCreationPlatformPublicKeyCredential) throws {
                let emailAddress: String?
                switch credential.contactIdentifier {
                case .email(let email): emailAddress = email.value
                default: emailAddress = nil
                }
                let name = credential.name.map {
                    PersonNameComponentsFormatter.localizedString(from: $0, style: .default)
                }
                self.init(
                    emailAddress: emailAddress, displayName: name.flatMap { $0.isEmpty ? nil : $0 },
                    credential: try PasskeyRegistrationCredential(credential.credentialRegistration))
            }
        }
    #endif

    /// What an authorization returned, in the library's terms.
    public enum PasskeyAuthorizationResult: Sendable {
        /// A new passkey: finish with ``PasskeyRegistrationFinishOperation`` or
        /// ``PasskeyAccountCreationFinishOperation``.
        case registration(PasskeyRegistrationCredential)
        /// An assertion: finish with ``PasskeyAuthenticationFinishOperation``.
        case assertion(PasskeyAssertion)
        /// The account creation sheet's result (iOS 26): finish with ``PasskeyAccountCreationFinishOperation``.
        case accountCreation(PasskeyAccountCreationResult)
        /// A saved password picked from a combined request: sign in with ``PasswordSignInOperation``, then offer
        /// a conditional registration.
        case password(user: String, password: String)

        /// Reads `authorization`; throws ``PasskeyClientError/Code/invalidArgument`` for a credential of another
        /// kind (Sign in with Apple, security keys).
        public init(_ authorization: ASAuthorization) throws {
            switch authorization.credential {
            case let registration as ASAuthorizationPlatformPublicKeyCredentialRegistration:
                self = .registration(try PasskeyRegistrationCredential(registration))
            case let assertion as ASAuthorizationPlatformPublicKeyCredentialAssertion:
                self = .assertion(try PasskeyAssertion(assertion))
            case let password as ASPasswordCredential:
                self = .password(user: password.user, password: password.password)
            default:
                #if compiler(>=6.2)
                    if #available(iOS 26.0, macOS 26.0, visionOS 26.0, *),
                        let account = authorization.credential
                            as? ASAuthorizationAccountCreationPlatformPublicKeyCredential
                    {
                        self = .accountCreation(try PasskeyAccountCreationResult(account))
                        return
                    }
                #endif
                throw PasskeyClientError(
                    code: .invalidArgument, detail: "The authorization returned \(type(of: authorization.credential)).")
            }
        }
    }
#endif
