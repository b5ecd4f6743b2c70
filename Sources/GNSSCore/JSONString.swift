/// Appends `text` as a JSON string: quoted, with the escapes RFC 8259 requires (`"`, `\`, and
/// the control characters U+0000–U+001F). Only ASCII bytes are ever escaped, and no byte of a
/// multi-byte UTF-8 sequence is ASCII, so the rest is copied as it is. gpsloc's NDJSON lines and
/// gpslocd's protocol lines are both written with it.
public func appendJSONString(_ text: String, to buffer: inout [UInt8]) {
    buffer.append(UInt8(ascii: "\""))
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "\""): buffer.append(contentsOf: #"\""#.utf8)
        case UInt8(ascii: "\\"): buffer.append(contentsOf: #"\\"#.utf8)
        case UInt8(ascii: "\n"): buffer.append(contentsOf: #"\n"#.utf8)
        case UInt8(ascii: "\r"): buffer.append(contentsOf: #"\r"#.utf8)
        case UInt8(ascii: "\t"): buffer.append(contentsOf: #"\t"#.utf8)
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            buffer.append(contentsOf: #"\u00"#.utf8)
            buffer.append(hex[Int(byte >> 4)])
            buffer.append(hex[Int(byte & 0xF)])
        default: buffer.append(byte)
        }
    }
    buffer.append(UInt8(ascii: "\""))
}
