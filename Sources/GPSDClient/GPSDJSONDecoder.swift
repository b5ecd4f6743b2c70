import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

/// Decodes gpsd's JSON report lines (as `gpspipe -w` records them) with libgps's own parser
/// (`gps_unpack`), without a daemon. Not thread-safe: one decoder per thread.
public final class GPSDJSONDecoder {
    package let handle = LibGPSHandle()

    public init() {}

    /// The report in one line, or nil when libgps cannot parse it.
    public func decode(_ line: String) -> GPSDEvent? { handle.unpack(line) }

    /// Every TPV of a gpsd JSON stream, in order.
    public func fixes(in text: String) -> [Fix] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            guard line.hasPrefix("{\"class\":\"TPV\""), case .fix(let fix)? = decode(String(line)) else { return nil }
            return fix
        }
    }
}
