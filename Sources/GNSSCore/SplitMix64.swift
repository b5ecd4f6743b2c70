/// SplitMix64: a small, fast, seedable random number generator. Used wherever GPSLocation
/// needs reproducible randomness (the reduced-accuracy offset, the simulator, tests).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private(set) var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// Continues a generator from a saved `state`.
    public init(state: UInt64) { self.state = state }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1), 53 bits.
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
