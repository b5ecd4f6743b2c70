import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

/// Bytes of NMEA in, `Fix` values out: `NMEAParser` + `EpochAssembler`.
public struct NMEADecoder: Sendable {
    /// The parser (its statistics and limits).
    public private(set) var parser = NMEAParser(collectsSatellites: true)
    private var assembler = EpochAssembler()

    /// A decoder at the start of a stream.
    public init() {}

    /// What the stream held so far: sentences decoded, ignored, malformed.
    public var statistics: NMEAStatistics { parser.statistics }

    /// Decodes `bytes` (any cut of the stream), calling `handle` for each fix a completed cycle makes.
    public mutating func feed(_ bytes: UnsafeBufferPointer<UInt8>, _ handle: (Fix) -> Void) {
        feed(bytes, heading: { _ in }, handle)
    }

    /// As `feed(_:_:)`, and each heading sentence (HDT, THS, HDG) is also handed to `heading` as
    /// it comes, before the fix of its cycle (gpsd reports an ATT as the sentence arrives too).
    public mutating func feed(
        _ bytes: UnsafeBufferPointer<UInt8>, heading: (HeadingReading) -> Void, _ handle: (Fix) -> Void
    ) {
        feed(bytes, heading: heading, sky: { _ in }, handle)
    }

    /// As `feed(_:heading:_:)`, and the satellite picture is handed to `sky` each time a GSV
    /// completes it, as gpsd reports a SKY (satellites in view with their elevation, azimuth,
    /// signal and use in the fix; the DOPs): once a cycle, after its last constellation's set.
    public mutating func feed(
        _ bytes: UnsafeBufferPointer<UInt8>, heading: (HeadingReading) -> Void, sky: (SkyView) -> Void,
        _ handle: (Fix) -> Void
    ) {
        // The assembler is handed to the parser's callback by pointer: captured as a variable,
        // the compiler copied the whole assembler in and out around every sentence (measured:
        // two 540-byte copies a sentence, an eighth of the instructions).
        withUnsafeMutablePointer(to: &assembler) { assembler in
            parser.feed(bytes) { sentence in
                if case .heading(let trueHeading, let magneticHeading, let variation) = sentence {
                    heading(
                        HeadingReading(
                            trueHeading: trueHeading, magneticHeading: magneticHeading, magneticVariation: variation))
                }
                assembler.pointee.add(sentence, handle)
                if case .gsv = sentence, let view = assembler.pointee.takeSkyView() { sky(view) }
            }
        }
    }

    /// As `feed(_:_:)` for the bytes of `data`.
    public mutating func feed(_ data: Data, _ handle: (Fix) -> Void) {
        data.withUnsafeBytes { raw in feed(raw.bindMemory(to: UInt8.self), handle) }
    }

    /// Ends the stream: a last line without its end and the last cycle are decoded and reported.
    public mutating func finish(_ handle: (Fix) -> Void) {
        var assembler = self.assembler
        parser.finish { sentence in assembler.add(sentence, handle) }
        if let fix = assembler.finish() { handle(fix) }
        self.assembler = assembler
    }

    /// Every fix of a whole recording.
    public static func fixes(in data: Data) -> (fixes: [Fix], statistics: NMEAStatistics) {
        var decoder = NMEADecoder()
        var fixes: [Fix] = []
        decoder.feed(data) { fixes.append($0) }
        decoder.finish { fixes.append($0) }
        return (fixes, decoder.statistics)
    }
}
