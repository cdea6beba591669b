import Encoding
import JSON

/// libFuzzer entry point: the JSON reader, and the writer's output read back as the same value.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = Base64URL.decode(String(decoding: bytes, as: UTF8.self))
    guard let value = try? JSONReader.parse(bytes) else { return 0 }
    guard let again = try? JSONReader.parse(value.serialized()), again == value else {
        fatalError("the writer's output does not read back as the same value")
    }
    return 0
}
