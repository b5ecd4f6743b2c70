/// Text from outside the process — another program's usage description, a device path, a
/// driver name, a file — made safe to show on a terminal: nothing in it can move the cursor,
/// erase or rewrite a line, or change the colours, and nothing can reorder what the person
/// reads. Each such character is shown escaped, so it is still visible what was sent:
///
/// - C0 and C1 controls (U+0000–U+001F, U+007F–U+009F): ESC starts every ANSI sequence, CR
///   and BS rewrite the line, LF forges a new one — shown as `\e`, `\r`, `\n`, `\t`, `\b`, or
///   `\xHH`;
/// - Unicode's bidirectional controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069),
///   which reverse the order text is displayed in (CVE-2021-42574, "Trojan Source"), and the
///   line and paragraph separators U+2028/U+2029 — shown as `\u{HHHH}`;
/// - a backslash is doubled, so an escape that was sent as text cannot pass for one made here.
public enum TerminalText {
    /// `text` with every character above escaped; the same string when there is none.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { needsEscape($0) || $0 == "\\" }) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\u{1B}": out += "\\e"
            case "\r": out += "\\r"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case _ where scalar.value < 0x100 && needsEscape(scalar):
                out += "\\x" + hex(scalar.value, digits: 2)
            case _ where needsEscape(scalar):
                out += "\\u{" + hex(scalar.value, digits: 4) + "}"
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Whether `scalar` could change what a terminal shows beyond itself.
    public static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0x2028, 0x2029: true
        default: false
        }
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
