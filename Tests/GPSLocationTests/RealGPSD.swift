import Testing

/// Every suite that runs a real gpsd (gpsfake, `GPSDServer`, a gpsd-backed `gpsloc`) is nested
/// in one of four lanes. Inside a lane they run one at a time; the lanes and everything else run
/// in parallel, each gpsd on its own free port. gpsfake starts feeding 1.4 s after it listens,
/// and a client starved of CPU can miss the start of a recording; the lanes mostly wait on
/// gpsd's pacing, so four of them keep a 2-core machine busy without starving each other. The
/// lanes are balanced by measured time (docs/testing.md). Each suite carries its own time limit.
@Suite("real gpsd (four lanes, one at a time in each)", .tags(.integration), .timeLimit(.minutes(10)))
enum RealGPSD {
    // Balanced on ci20f's times (session 20): A 98 s, B 163, C 163, D 116 before; about 134,
    // 119, 135 and 143 after.
    /// The real-receiver corpus, monitoring through gpsd, one engine, staleness, the unit
    /// sandbox, the ported daemon, where a location came from.
    @Suite("real gpsd, lane A", .serialized) enum LaneA {}
    /// gpsloc against gpsd, the fleet recipe and the daemon under systemd, heading, accuracy,
    /// the receiver clock.
    @Suite("real gpsd, lane B", .serialized) enum LaneB {}
    /// Kill-and-restart resilience, shared connections, receivers, gpslocd as another uid.
    @Suite("real gpsd, lane C", .serialized) enum LaneC {}
    /// The project's fixtures through gpsd, gpsloc replay --via gpsd, app-shaped programs,
    /// ported programs.
    @Suite("real gpsd, lane D", .serialized) enum LaneD {}
}

extension Tag {
    /// Runs real programs against a real gpsd and takes seconds (up to about a minute, the 20
    /// restarts of gpsd): every test over 10 s is one, in a lane above. The rest finish in well
    /// under a second each when run alone.
    @Tag static var integration: Self
}
