import Foundation

/// Runs GeographicLib's `GeodSolve -i -p PRECISION` (Debian geographiclib-tools) on `input`
/// (one "lat1 lon1 lat2 lon2" a line) and returns its output, awaiting its exit.
func geodSolveInverse(_ input: String, precision: Int) async throws -> String {
    try await runProgram("/usr/bin/GeodSolve", ["-i", "-p", String(precision)], input: Data(input.utf8)).stdout
}
