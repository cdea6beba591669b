import GRPC

/// libFuzzer entry point: the gRPC message deframer. The first byte sets the message size limit and how the rest is
/// cut into reads; the messages and the failure must be the same as when the rest arrives in one read, each message
/// within the limit, and the messages re-framed must be exactly the bytes they were read from.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGRPCDeframer(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let control = data[0]
    let body = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let limit = 16 + Int(control & 0x3F) * 32
    let whole = deframe(body, [0..<body.count], limit: limit)
    let split = deframe(body, reads(of: body.count, pattern: Int(control >> 6)), limit: limit)
    require(whole.messages == split.messages, "the messages depend on how the bytes arrived")
    require(whole.failure == split.failure, "the failure depends on how the bytes arrived")
    require(whole.messages.allSatisfy { $0.count <= limit }, "a message over the limit was returned")
    var reframed: [UInt8] = []
    for message in whole.messages { GRPCMessageFramer.frame(message, into: &reframed) }
    require(reframed == Array(body.prefix(reframed.count)), "the messages are not the bytes they came from")
    if whole.failure == nil {
        require(reframed.count + whole.buffered == body.count, "bytes were lost or invented")
    }
    return 0
}

struct Deframed {
    var messages: [[UInt8]] = []
    var failure: GRPCMessageDeframer.Failure?
    var buffered = 0
}

func deframe(_ bytes: [UInt8], _ reads: [Range<Int>], limit: Int) -> Deframed {
    var deframer = GRPCMessageDeframer(maxMessageSize: limit)
    var result = Deframed()
    for read in reads {
        bytes.withUnsafeBytes { deframer.append(UnsafeRawBufferPointer(rebasing: $0[read])) }
        do {
            while let message = try deframer.next() { result.messages.append(message) }
        } catch {
            result.failure = error
            return result
        }
    }
    result.buffered = deframer.bufferedByteCount
    return result
}

/// `count` bytes cut into reads: one byte at a time, in sizes 1, 2, 3, …, at every fifth byte, or in sizes around a
/// frame header's.
func reads(of count: Int, pattern: Int) -> [Range<Int>] {
    var reads: [Range<Int>] = []
    var offset = 0
    var index = 0
    while offset < count {
        let size: Int
        switch pattern {
        case 0: size = 1
        case 1: size = index % 7 + 1
        case 2: size = 5
        default: size = [4, 6, 5, 1][index % 4]
        }
        reads.append(offset..<min(count, offset + size))
        offset += size
        index += 1
    }
    return reads
}
