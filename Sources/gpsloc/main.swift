import Foundation
import GPSLocation

let port = Int(CommandLine.arguments.dropFirst().first ?? "2947") ?? 2947
let source = GPSDSource(endpoint: GPSDEndpoint(port: port), noDataTimeout: .seconds(3))
let done = DispatchSemaphore(value: 0)
source.start { event in
    print(event)
    if case .failed = event { done.signal() }
}
done.wait()
