import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc

/// Help texts within a terminal's 80 columns (and the man page's 73, inside its indent): a line
/// too long is broken at spaces, its continuation aligned with the line's description column
/// (after the first run of two spaces past the indent, as in `  --opt X   what it does`).
enum HelpText {
    static func wrapped(_ text: String, width: Int = 80) -> String {
        reflowed(text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
            .map { wrap($0, width: width) }.joined(separator: "\n")
    }

    /// The source's own line breaks are for the source: a prose line (no indent) continued by
    /// the next prose line, and an option's description continued on lines indented to its
    /// description column, are joined, so `wrap` breaks each paragraph once, at the width.
    static func reflowed(_ lines: [String]) -> [String] {
        var result: [String] = []
        for line in lines {
            let indent = line.prefix { $0 == " " }.count
            if let previous = result.last, !previous.isEmpty, !line.isEmpty, !previous.hasSuffix(":") {
                let previousIndent = previous.prefix { $0 == " " }.count
                let prose = indent == 0 && previousIndent == 0 && !previous.hasPrefix("usage:")
                // An option's description continued, or a description block of its own (a long
                // option name on a line alone, its text below at the description column).
                let column = descriptionColumn(previous) ?? (previousIndent >= 20 ? previousIndent : nil)
                let continuation = indent > 0 && indent == column
                if prose || continuation {
                    result[result.count - 1] = previous + " " + line.dropFirst(indent)
                    continue
                }
            }
            result.append(line)
        }
        return result
    }

    /// Where an option line's description starts (after its first run of two spaces past the
    /// indent, within 44 columns), or nil.
    static func descriptionColumn(_ line: String) -> Int? {
        let characters = Array(line)
        var index = characters.prefix { $0 == " " }.count
        while index + 1 < min(characters.count, 44) {
            if characters[index] == " " && characters[index + 1] == " " {
                var end = index
                while end < characters.count && characters[end] == " " { end += 1 }
                return end
            }
            index += 1
        }
        return nil
    }

    static func wrap(_ line: String, width: Int) -> String {
        guard line.count > width else { return line }
        let characters = Array(line)
        let indent = characters.prefix { $0 == " " }.count
        // The description column: after the first run of two spaces past the indent (an option's
        // text); none (prose): continuation lines keep the line's indent.
        var column = indent
        var index = indent
        while index + 1 < min(characters.count, 44) {
            if characters[index] == " " && characters[index + 1] == " " {
                var end = index
                while end < characters.count && characters[end] == " " { end += 1 }
                column = end
                break
            }
            index += 1
        }
        var lines: [String] = []
        var current = String(characters.prefix(column))
        let words = String(characters.dropFirst(column)).split(separator: " ").map(String.init)
        let pad = String(repeating: " ", count: column)
        for word in words {
            if current.count + 1 + word.count > width && current.trimmingWhitespace().count > 0 {
                lines.append(current)
                current = pad + word
            } else {
                current += (current.hasSuffix(" ") || current.isEmpty ? "" : " ") + word
            }
        }
        lines.append(current)
        return lines.joined(separator: "\n")
    }
}
