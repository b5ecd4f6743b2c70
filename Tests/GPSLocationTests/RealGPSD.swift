import Testing

/// Every suite that runs a real gpsd (gpsfake, `GPSDServer`, a gpsd-backed `gpsloc`) is nested
/// in one of two lanes. Inside a lane they run one at a time; the two lanes and everything
/// else run in parallel. gpsfake starts feeding 1.4 s after it listens, and a client starved
/// of CPU can miss the start of a recording: the other suites finish within seconds, and two
/// gpsd lanes use a fraction of a core each (they wait on gpsd's pacing), so that does not
/// happen. The lanes are balanced by measured time (about two minutes each). Each suite
/// carries its own time limit.
@Suite("real gpsd (two lanes, one at a time in each)", .timeLimit(.minutes(10)))
enum RealGPSD {
    /// The real-receiver corpus and the kill-and-restart resilience runs.
    @Suite("real gpsd, lane A", .serialized) enum LaneA {}
    /// The project's fixtures, gpsloc against gpsd, receivers, staleness, one engine.
    @Suite("real gpsd, lane B", .serialized) enum LaneB {}
}
