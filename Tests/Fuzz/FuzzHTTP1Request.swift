import HTTP1
import HTTPMessages

/// libFuzzer entry point: the HTTP/1.1 request parser, with small limits so that they are reached. The first byte
/// says how the rest is cut into reads; the requests and the refusal must not depend on it (the `100 Continue`
/// prompt may: it answers what has arrived so far). Each request keeps within the limits, and a refusal is one of
/// the statuses the server sends.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP1Request(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let control = Int(data[0])
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let limits = HTTP1Limits(maximumHeadBytes: 256, maximumHeaderCount: 8, maximumBodyBytes: 512)
    let whole = parse(input, [0..<input.count], limits: limits)
    let split = parse(input, reads(of: input.count, control: control), limits: limits)
    require(whole.requests == split.requests, "the requests depend on how the bytes arrived")
    require(whole.refusal == split.refusal, "the refusal depends on how the bytes arrived: \(whole) \(split)")
    for request in whole.requests {
        require(request.body.count <= limits.maximumBodyBytes, "a body over the limit was returned")
        require(request.headers.fields.count <= limits.maximumHeaderCount, "too many header fields returned")
        require(!request.method.isEmpty && !request.target.isEmpty, "a request without a method or target")
    }
    if let refusal = whole.refusal {
        require([400, 413, 431, 501, 505].contains(refusal), "unexpected refusal \(refusal)")
    }
    return 0
}

struct Parsed: CustomStringConvertible {
    var requests: [HTTP1Request] = []
    var refusal: Int?
    var description: String { "\(requests.count) requests, refusal \(refusal.map(String.init) ?? "none")" }
}

func parse(_ bytes: [UInt8], _ reads: [Range<Int>], limits: HTTP1Limits) -> Parsed {
    var parser = HTTP1RequestParser(limits: limits)
    var parsed = Parsed()
    for read in reads {
        parser.append(bytes[read])
        do {
            while let event = try parser.next() {
                if case .request(let request) = event { parsed.requests.append(request) }
            }
        } catch let error as HTTP1ParseError {
            parsed.refusal = error.status
            // A refusal is final: the same error again, whatever comes next.
            parser.append([13, 10])
            do {
                _ = try parser.next()
                fatalError("the parser went on after refusing")
            } catch let again as HTTP1ParseError {
                require(again == error, "a second call gave another error: \(again) after \(error)")
            } catch {
                fatalError("\(error)")
            }
            return parsed
        } catch {
            fatalError("the parser threw \(error)")
        }
    }
    return parsed
}

/// `count` bytes cut into reads of sizes taken from `control`: one byte at a time when it is 0 or 1.
func reads(of count: Int, control: Int) -> [Range<Int>] {
    var reads: [Range<Int>] = []
    var offset = 0
    var index = 0
    while offset < count {
        let size = control <= 1 ? 1 : 1 + (index * 31 + control) % control
        reads.append(offset..<min(count, offset + size))
        offset += size
        index += 1
    }
    return reads
}
