import Domain
import Foundation
import SessionIssuance

extension IssuedSession {
    /// The contract's form of a session as issued, whichever service issued it.
    public init(_ issued: SessionIssuer.IssuedSession) {
        self.init()
        accessToken = issued.token
        expiresAtUnixMilliseconds = issued.session.expiresAt.unixMilliseconds
        accountID = issued.session.accountID.description
        displayName = issued.displayName
        sessionID = issued.session.id.description
        refreshToken = issued.refreshToken ?? ""
        accessTokenExpiresAtUnixMilliseconds = issued.tokenExpiresAt.unixMilliseconds
        refreshTokenExpiresAtUnixMilliseconds = issued.refreshTokenExpiresAt?.unixMilliseconds ?? 0
    }
}
