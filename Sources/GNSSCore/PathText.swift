import FoundationEssentials

// Small text helpers the light binaries need without Foundation's `NSString` and `CharacterSet`.

/// The folder of `path`, as `NSString.deletingLastPathComponent` gives it: "/run/gpslocd" for
/// "/run/gpslocd/socket", "/" for "/socket", "" for "socket"; a trailing slash is ignored.
package func parentFolder(of path: String) -> String {
    var trimmed = Substring(path)
    while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
    guard let slash = trimmed.lastIndex(of: "/") else { return "" }
    if slash == trimmed.startIndex { return "/" }
    var folder = trimmed[..<slash]
    while folder.count > 1 && folder.hasSuffix("/") { folder = folder.dropLast() }
    return String(folder)
}

/// The last part of `path` (`NSString.lastPathComponent`): "gpsd" for "/usr/sbin/gpsd".
package func lastPathComponent(of path: String) -> String {
    var trimmed = Substring(path)
    while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
    guard let slash = trimmed.lastIndex(of: "/"), trimmed.count > 1 else { return String(trimmed) }
    return String(trimmed[trimmed.index(after: slash)...])
}

extension StringProtocol {
    /// Without spaces and tabs at either end (`trimmingCharacters(in: .whitespaces)`).
    package func trimmingWhitespace() -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0.isWhitespace && !$0.isNewline }
        guard let first = firstIndex(where: { !isBlank($0) }) else { return "" }
        let last = lastIndex(where: { !isBlank($0) })!
        return String(self[first...last])
    }
}

/// `text` right-aligned in `width` characters (`%5d`, `%12.8f`): spaces before it, nothing cut.
package func padLeft(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
}

extension String {
    /// Left-aligned in `width` characters (`padding(toLength:withPad: " ", startingAt: 0)`): spaces
    /// after it, or cut to `width`.
    package func paddedRight(to width: Int) -> String {
        count >= width ? String(prefix(width)) : self + String(repeating: " ", count: width - count)
    }
}
