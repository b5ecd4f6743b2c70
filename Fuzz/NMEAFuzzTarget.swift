// libFuzzer entry point for GPSLocation's NMEA engine (built by scripts/fuzz.sh, not by SwiftPM).
// Invariants checked on every input: no crash; every position is finite and in range; feeding
// the input in two pieces gives exactly the fixes of feeding it whole.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNMEA(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: start, count: count)
    var whole: [Fix] = []
    var decoder = NMEADecoder()
    decoder.feed(bytes) { whole.append($0) }
    decoder.finish { whole.append($0) }

    let split = count == 0 ? 0 : Int(bytes[0]) % (count + 1)
    var pieces: [Fix] = []
    var chunked = NMEADecoder()
    chunked.feed(UnsafeBufferPointer(rebasing: bytes[0..<split])) { pieces.append($0) }
    chunked.feed(UnsafeBufferPointer(rebasing: bytes[split..<count])) { pieces.append($0) }
    chunked.finish { pieces.append($0) }

    precondition(whole == pieces, "chunking changed the fixes")
    precondition(decoder.statistics == chunked.statistics, "chunking changed the statistics")
    for fix in whole {
        if let latitude = fix.latitude { precondition(latitude.isFinite && abs(latitude) <= 90) }
        if let longitude = fix.longitude { precondition(longitude.isFinite && abs(longitude) <= 180) }
        if fix.hasPosition { precondition(fix.mode >= .twoDimensional) }
    }
    return 0
}
