import Foundation

/// Runs GeographicLib's `GeodSolve -i -p PRECISION` (Debian geographiclib-tools) on `input`
/// (one "lat1 lon1 lat2 lon2" a line) and returns its output. The input is written from its own
/// thread while the output is read, so neither pipe can fill up and stall the other.
func geodSolveInverse(_ input: String, precision: Int) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/GeodSolve")
    process.arguments = ["-i", "-p", String(precision)]
    let stdin = Pipe()
    let stdout = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    try process.run()
    let data = Data(input.utf8)
    let writer = Thread {
        stdin.fileHandleForWriting.write(data)
        try? stdin.fileHandleForWriting.close()
    }
    writer.start()
    let output = stdout.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: output, as: UTF8.self)
}
