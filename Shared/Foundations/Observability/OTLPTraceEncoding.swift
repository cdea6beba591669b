import Protobuf

/// Spans as an OTLP `ExportTraceServiceRequest` (opentelemetry-proto, `collector/trace/v1`) in protobuf, the body
/// of an OTLP/HTTP export (`POST /v1/traces`, `application/x-protobuf`).
public enum OTLPTraceEncoding {
    /// One request carrying `spans` under one resource (`service.name` and the other `resource` attributes) and
    /// one instrumentation scope.
    public static func exportRequest(
        _ spans: [Span], resource: [(key: String, value: String)], scope: String
    ) -> [UInt8] {
        var resourceMessage = ProtobufWriter()
        for (key, value) in resource { writeAttribute(1, key, .string(value), to: &resourceMessage) }

        var scopeMessage = ProtobufWriter()
        scopeMessage.writeStringField(1, scope)

        var scopeSpans = ProtobufWriter()
        writeMessage(1, scopeMessage, to: &scopeSpans)
        for span in spans { writeMessage(2, encode(span), to: &scopeSpans) }

        var resourceSpans = ProtobufWriter()
        writeMessage(1, resourceMessage, to: &resourceSpans)
        writeMessage(2, scopeSpans, to: &resourceSpans)

        var request = ProtobufWriter()
        writeMessage(1, resourceSpans, to: &request)
        return request.bytes
    }

    /// `opentelemetry.proto.trace.v1.Span`.
    static func encode(_ span: Span) -> ProtobufWriter {
        var message = ProtobufWriter()
        message.writeBytesField(1, span.context.traceID.bytes)
        message.writeBytesField(2, bigEndianBytes(span.context.spanID))
        if span.parentSpanID != 0 { message.writeBytesField(4, bigEndianBytes(span.parentSpanID)) }
        message.writeStringField(5, span.name)
        message.writeVarintField(6, UInt64(span.kind.rawValue))
        message.writeFixed64Field(7, span.startUnixNanoseconds)
        message.writeFixed64Field(8, span.endUnixNanoseconds)
        for (key, value) in span.attributes { writeAttribute(9, key, value, to: &message) }
        var status = ProtobufWriter()
        if let error = span.errorMessage {
            status.writeStringField(2, error)
            status.writeVarintField(3, 2)  // STATUS_CODE_ERROR
        }
        writeMessage(15, status, to: &message)
        // Flags: the sampled bit of the trace flags, and that the parent's remoteness is unknown.
        message.writeFixed32Field(16, span.context.sampled ? 1 : 0)
        return message
    }

    /// A `KeyValue` in field `number`; the `AnyValue` is a oneof, so a false or zero value is still written.
    private static func writeAttribute(
        _ number: UInt32, _ key: String, _ value: SpanAttributeValue, to writer: inout ProtobufWriter
    ) {
        var anyValue = ProtobufWriter()
        switch value {
        case .string(let text):
            anyValue.writeLengthDelimitedElement(1, text.utf8)
        case .bool(let flag):
            anyValue.writeTag(2, .varint)
            anyValue.writeVarint(flag ? 1 : 0)
        case .int(let number):
            anyValue.writeTag(3, .varint)
            anyValue.writeVarint(UInt64(bitPattern: number))
        }
        var keyValue = ProtobufWriter()
        keyValue.writeStringField(1, key)
        keyValue.writeLengthDelimitedElement(2, anyValue.bytes)
        writer.writeLengthDelimitedElement(number, keyValue.bytes)
    }

    private static func writeMessage(_ number: UInt32, _ message: ProtobufWriter, to writer: inout ProtobufWriter) {
        guard !message.bytes.isEmpty else { return }
        writer.writeLengthDelimitedElement(number, message.bytes)
    }
}
