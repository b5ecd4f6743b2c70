import FoundationEssentials
import GNSSCore

/// The monitoring services of `LocationEngine` — regions (`RegionMonitorStage`), visits
/// (`VisitStage`) and significant changes (`SignificantChangeStage`): starting and stopping them,
/// and the locations they see (only what passed the gate).
extension LocationEngine {
    /// Starts monitoring `fence` (replacing one with its identifier). `assuming`: the state to
    /// start from (a persisted one); unknown is determined by the next location.
    public mutating func startMonitoring(_ fence: Geofence, assuming: RegionPresence = .unknown, now: Date)
        -> [Action]
    {
        var actions = admitMonitoring()
        var events: [RegionEvent] = []
        regions.add(
            fence, assuming: assuming, limitation: regionLimitation(), at: clock(now: now) ?? now, into: &events)
        actions.append(contentsOf: events.map { .region($0) })
        return actions
    }

    /// Why regions cannot be evaluated for this app now, if they cannot.
    func regionLimitation() -> RegionEvent.Limitation? {
        if !gate.state.allowsDelivery { return .notAuthorized }
        if gate.state.accuracy == .reducedAccuracy { return .accuracyLimited }
        if configuration.regionsRequireAlways && gate.state.status != .authorizedAlways { return .alwaysRequired }
        return nil
    }

    /// Stops monitoring a region; `.stopSource` when nothing runs any more.
    public mutating func stopMonitoring(_ identifier: String) -> [Action] {
        regions.remove(identifier)
        return stopIfIdle()
    }

    /// Every region at once (their owner goes away): the stage is dropped whole, not emptied one
    /// region at a time.
    public mutating func stopMonitoringAllRegions() -> [Action] {
        regions = RegionMonitorStage()
        return stopIfIdle()
    }

    /// Starts visit monitoring (refused, with an error, while the app may not monitor).
    public mutating func startVisits() -> [Action] {
        let refusal = admitMonitoring()
        if visits == nil { visits = VisitStage() }
        return refusal
    }

    /// Stops visit monitoring.
    public mutating func stopVisits() -> [Action] {
        visits = nil
        return stopIfIdle()
    }

    /// Starts significant-change monitoring (refused, with an error, while the app may not monitor).
    public mutating func startSignificantChanges() -> [Action] {
        let refusal = admitMonitoring()
        if significantChanges == nil { significantChanges = SignificantChangeStage() }
        return refusal
    }

    /// Stops significant-change monitoring.
    public mutating func stopSignificantChanges() -> [Action] {
        significantChanges = nil
        return stopIfIdle()
    }

    /// A monitoring service is starting: refused (said once) when the app is denied or
    /// restricted, otherwise monitoring resumes.
    mutating func admitMonitoring() -> [Action] {
        if gate.state.status.refusesAll, let refusal = gate.state.refusal {
            monitoringSuspended = true
            return gate.explain(refusal).map { [.fail($0)] } ?? []
        }
        monitoringSuspended = false
        return []
    }

    mutating func stopIfIdle() -> [Action] {
        guard !isRunning else { return [] }
        resetShared()
        return [.cancel(.monitoringGap), .cancel(.staleness), .stopSource]
    }

    /// A location that passed the gate, for the monitoring services.
    mutating func monitor(_ location: LocationValue, clock: Date, now: Date) -> [Action] {
        var actions: [Action] = []
        if !regions.isEmpty {
            let limitation = regionLimitation()
            var events: [RegionEvent] = []
            regions.observe(location, clock: clock, limitation: limitation, into: &events)
            for event in events { actions.append(.region(event)) }
            if isLive && gapDeadline == nil {
                gapDeadline = clock.addingTimeInterval(RegionMonitorStage.gapTimeout)
                actions.append(.arm(.monitoringGap, after: max(0, gapDeadline!.timeIntervalSince(now))))
            }
        }
        if visits != nil {
            var records: [VisitRecord] = []
            visits!.observe(location, reduced: gate.state.accuracy == .reducedAccuracy, into: &records)
            for record in records { actions.append(.visit(record)) }
        }
        return actions
    }
}

// MARK: Heading

extension LocationEngine {
    /// Starts heading updates (`startUpdatingHeading()`). A refused authorization is said once,
    /// as for locations.
    public mutating func startHeading() -> [Action] {
        var actions: [Action] = []
        if let refusal = gate.state.refusal {
            if let error = gate.explain(refusal) { actions.append(.fail(error)) }
            if gate.state.status.refusesAll { return actions }
        }
        headingStage.start()
        return actions
    }

    /// The heading to hand over for `reading` (heading updates on, the app authorized).
    mutating func headingActions(_ reading: HeadingReading, time: Date) -> [Action] {
        let reduced = gate.state.accuracy == .reducedAccuracy || gate.reducedRequested
        guard
            let heading = headingStage.heading(
                reading,
                lastFix: lastPosition.map { last in
                    Fix(
                        mode: .twoDimensional, latitude: last.latitude, longitude: last.longitude,
                        magneticVariation: last.magneticVariation)
                }, time: time,
                declination: reduced
                    ? .reduced(
                        gate.fuzzer.lastPoint.map {
                            CLLocationCoordinate2D(latitude: $0.latitude, longitude: $0.longitude)
                        }) : .precise),
            gate.state.allowsDelivery
        else { return [] }
        return [.heading(heading)]
    }

    /// Stops heading updates; the source stops when nothing else runs.
    public mutating func stopHeading() -> [Action] {
        guard headingStage.active else { return [] }
        headingStage.stop()
        return isRunning ? [] : [.stopSource]
    }
}
