import Testing

/// Every suite that runs a real gpsd (gpsfake, `GPSDServer`, a gpsd-backed `gpsloc`) is nested
/// here, so they run one at a time while everything else runs in parallel: gpsfake starts
/// feeding 1.4 s after it listens, and a client starved of CPU by a parallel suite can miss
/// the start of a recording. Each suite carries its own time limit.
@Suite("real gpsd (one at a time)", .serialized, .timeLimit(.minutes(10)))
enum RealGPSD {}
