import Protobuf
import ServiceContracts

/// libFuzzer entry point: the protobuf reader, through generated messages of each shape the services exchange
/// (nested messages, repeated messages and strings, bytes, integers, booleans), and a walk over the fields that
/// skips whatever it meets. Whatever decodes must encode deterministically and decode back to itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProtobuf(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    roundTrip(FinishAuthenticationRequest.self, bytes)
    roundTrip(FinishRegistrationRequest.self, bytes)
    roundTrip(FinishAccountRegistrationRequest.self, bytes)
    roundTrip(BeginRegistrationResponse.self, bytes)
    roundTrip(ListSessionsResponse.self, bytes)
    roundTrip(ListCredentialsResponse.self, bytes)
    walkFields(bytes)
    return 0
}

func roundTrip<Message: ProtobufMessage & Equatable>(_ type: Message.Type, _ bytes: [UInt8]) {
    guard let message = try? Message(serializedBytes: bytes) else { return }
    let encoded = message.serializedBytes()
    guard let again = try? Message(serializedBytes: encoded) else {
        fatalError("\(Message.self): its own encoding does not decode")
    }
    require(again == message, "\(Message.self) changed in a round trip")
    require(again.serializedBytes() == encoded, "\(Message.self): the encoding is not deterministic")
}

/// Reads every tag and skips its value; stops at the end or the first error, never past the input.
func walkFields(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { raw in
        var reader = ProtobufReader(raw)
        while true {
            // try? flattens: nil at the end of the input and on an unreadable tag alike.
            guard let (number, wireType) = try? reader.readTag() else { return }
            guard (try? reader.skipField(wireType: wireType, number: number)) != nil else { return }
        }
    }
}
