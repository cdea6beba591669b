import GatewayCore
import Protobuf

/// libFuzzer entry point: the gateway's request-body decoding, every body type from the same bytes. A body the
/// gateway cannot use must be refused as 400 `invalid_request`, never anything else.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestBodies(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = isJSONContentType(String(decoding: bytes.prefix(64), as: UTF8.self))
    let body: JSONBody
    do {
        body = try JSONBody(bytes: bytes, emptyAllowed: bytes.count % 2 == 0)
    } catch {
        expectInvalidRequest(error)
        return 0
    }
    read(PasswordAccountBody.init, body)
    read(PasswordSignInBody.init, body)
    read(RegistrationStartBody.init, body)
    read(AccountRegistrationStartBody.init, body)
    read(RenamePasskeyBody.init, body)
    read(RegistrationFinishBody.init, body)
    read(AccountRegistrationFinishBody.init, body)
    if let finish = read(AuthenticationFinishBody.init, body) {
        // A discoverable sign-in's assertion carries every part.
        require(body.has("credential") || body.has("userHandle"), "a sign-in without its user handle")
        _ = finish.credential.serializedBytes()
    }
    return 0
}

@discardableResult
func read<Body>(_ decode: (JSONBody) throws(APIProblem) -> Body, _ body: JSONBody) -> Body? {
    do {
        return try decode(body)
    } catch {
        expectInvalidRequest(error)
        return nil
    }
}

func expectInvalidRequest(_ problem: APIProblem) {
    require(problem.status == 400 && problem.code == "invalid_request", "refused as \(problem.status) \(problem.code)")
    require(!(problem.detail ?? "").isEmpty, "a refusal says what is wrong")
}
