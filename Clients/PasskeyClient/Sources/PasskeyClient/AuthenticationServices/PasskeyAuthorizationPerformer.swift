#if canImport(AuthenticationServices) && (os(iOS) || os(macOS) || os(visionOS))
    import AuthenticationServices
    import Foundation

    /// Runs `ASAuthorizationController` requests as `async` calls, one at a time, for UIKit and AppKit apps (SwiftUI
    /// apps can pass the same requests to the environment's `authorizationController` instead).
    ///
    /// Errors are AuthenticationServices' own: catch `ASAuthorizationError.canceled` and fall back to the form. It
    /// is what a dismissed sheet gives, and also what a missing associated domain or an RP ID that does not match
    /// it gives, with no UI at all. Starting a request cancels the one still running (an AutoFill-assisted request
    /// waits until the user picks a passkey or leaves the screen), and so does cancelling the calling task.
    @MainActor
    public final class PasskeyAuthorizationPerformer: NSObject {
        /// How the requests are presented.
        public enum Presentation: Sendable {
            /// A sheet (`performRequests()`): registration, a "Sign in with a passkey" button, and conditional
            /// registration (which shows nothing when the credential manager declines).
            case modal
            #if (os(iOS) && !targetEnvironment(macCatalyst)) || os(visionOS)
                /// Passkeys in the QuickType bar of the `.username` text field (`performAutoFillAssistedRequests()`),
                /// for assertion requests, started as the sign-in screen appears.
                case autoFill
            #endif
        }

        private let anchor: ASPresentationAnchor
        private var controller: ASAuthorizationController?
        private var continuation: CheckedContinuation<ASAuthorization, any Error>?

        /// A performer presenting over `anchor` (the window of the sign-in screen).
        public init(anchor: ASPresentationAnchor) {
            self.anchor = anchor
        }

        /// Performs `requests` and returns the authorization the user gave.
        public func perform(_ requests: [ASAuthorizationRequest], presentation: Presentation = .modal) async throws
            -> ASAuthorization
        {
            cancel()
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    self.continuation = continuation
                    let controller = ASAuthorizationController(authorizationRequests: requests)
                    controller.delegate = self
                    controller.presentationContextProvider = self
                    self.controller = controller
                    switch presentation {
                    case .modal: controller.performRequests()
                    #if (os(iOS) && !targetEnvironment(macCatalyst)) || os(visionOS)
                        case .autoFill: controller.performAutoFillAssistedRequests()
                    #endif
                    }
                }
            } onCancel: {
                Task { @MainActor in self.cancel() }
            }
        }

        /// Performs `requests` and reads what they returned.
        public func result(of requests: [ASAuthorizationRequest], presentation: Presentation = .modal) async throws
            -> PasskeyAuthorizationResult
        {
            try PasskeyAuthorizationResult(await perform(requests, presentation: presentation))
        }

        /// Cancels the running request, if any; its caller gets `ASAuthorizationError.canceled`.
        public func cancel() {
            guard let controller else { return }
            self.controller = nil
            controller.cancel()
            finish(.failure(ASAuthorizationError(.canceled)))
        }

        private func finish(_ result: Result<ASAuthorization, any Error>) {
            guard let continuation else { return }
            self.continuation = nil
            continuation.resume(with: result)
        }

        private func isCurrent(_ controller: ASAuthorizationController) -> Bool { controller === self.controller }
    }

    extension PasskeyAuthorizationPerformer: @preconcurrency ASAuthorizationControllerDelegate {
        public func authorizationController(
            controller: ASAuthorizationController, didCompleteWithAuthorization authorization: ASAuthorization
        ) {
            guard isCurrent(controller) else { return }
            self.controller = nil
            finish(.success(authorization))
        }

        public func authorizationController(
            controller: ASAuthorizationController, didCompleteWithError error: any Error
        ) {
            guard isCurrent(controller) else { return }
            self.controller = nil
            finish(.failure(error))
        }
    }

    extension PasskeyAuthorizationPerformer: @preconcurrency ASAuthorizationControllerPresentationContextProviding {
        public func presentationAnchor(for controller: ASAuthorizationController) -> ASPresentationAnchor { anchor }
    }
#endif
