import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

// The calendar and the cycle boundaries of `EpochAssembler`: where a dated sentence puts its day,
// and where a time-bearing sentence closes the open cycle and teaches which types end cycles
// (gpsd's `cycle_enders`, driver_nmea0183.c). Part of `EpochAssembler`, in a file of their own.

extension EpochAssembler {
    /// A dated sentence: its date is the day of its own time of day (when it has one).
    mutating func setDate(year: Int, month: Int, day newDay: Int, time: Double?) {
        day = Self.daysFromCivil(year: year, month: month, day: newDay)
        dayTime = time
    }

    /// Places a cycle's time of day on the calendar: on the day of the last dated sentence,
    /// moved forward a day when the time of day went back by more than 12 h since the last
    /// placed time (midnight passed before the next date came), back a day when it went
    /// forward by more than 12 h (a cycle from before midnight after a new date).
    mutating func placeOnCalendar(_ seconds: Double) -> Date? {
        guard var placed = day else { return nil }
        if let last = dayTime {
            if seconds < last - 43_200 {
                placed += 1
            } else if seconds > last + 43_200 {
                placed -= 1
            }
        }
        day = placed
        dayTime = seconds
        return Date(timeIntervalSince1970: Double(placed) * 86_400 + seconds)
    }

    mutating func openIfNeeded() {
        if !cycle.open { cycle.open = true }
    }

    /// A time-bearing sentence: close the open cycle if its time differs, learning that the
    /// previous time-bearing sentence type ends cycles.
    /// (The closed cycle's fix goes straight to `emit`: returned, the 300-byte optional was copied
    /// twice a sentence.)
    mutating func boundary(_ time: Double?, _ type: TimedType, _ emit: (Fix) -> Void) {
        guard let time else {
            openIfNeeded()
            return
        }
        defer { lastTimed = type }
        // Times within 10 ms are one cycle (NMEA's resolution is 1/100 s); the cycle takes the
        // latest of them, as gpsd reports the time of the sentence that ends the cycle.
        if cycle.open, let current = cycle.time, abs(current - time) < 0.01 {
            cycle.time = time
            return
        }
        if cycle.open, cycle.time == nil {
            // Sentences without time opened this cycle (e.g. GSA first): it takes this time. gpsd
            // clears its fix at the first sentence of a new time (`CLEAR_IS`): what those
            // sentences put in it (a PGRMZ altitude, a VTG speed, PGRME errors) is gone; its
            // DOPs and satellites are not in the fix and stay.
            let positional = cycle.positional
            cycle = Cycle()
            cycle.open = true
            cycle.positional = positional
            cycle.time = time
            errors = GPSDCycleErrors()
            return
        }
        // A time a little *behind* the open cycle's (a GGA of 12:00:04 after an RMC of
        // 12:00:05) is a cycle whose sentences disagree, not a cycle's end: the sentence before
        // it is not learned as an ender (else every later cycle would be reported at that
        // sentence, before the rest of its data).
        let mixedTime = cycle.time.map { $0 - time > 0.01 && $0 - time < 2 } ?? false
        // A cycle of nothing but a time (a ZDA that opens the receiver's cycle, ahead of its
        // RMC/GGA, with the previous second) teaches nothing about where cycles end: learning
        // from it would take ZDA for an ender and lose the first real cycle.
        let teaches = cycle.time != nil && !mixedTime && cycle.positional
        if let lastTimed, teaches { cycleEnders.insert(lastTimed) }
        if let lastLatched, teaches { gpsdEnders.insert(lastLatched) }
        // Once the cycle's end is known, a cycle is reported at its ending sentence; one whose
        // ending sentence never came is reported at its close when it had one of gpsd's enders
        // (gpsd reported it there: an RMC + GGA whose ZDA was cut off before a capture gap), and
        // not otherwise (gpsd did not report it either). While learning, at its close.
        if !cycle.reported && (learning || cycle.gpsdEnded || cycle.awaitsEstimate), let fix = makeFix() { emit(fix) }
        if teaches { learning = false }
        rememberCycle()
        cycle = Cycle()
        errors = GPSDCycleErrors()
        cycle.open = true
        cycle.time = time
    }
}
