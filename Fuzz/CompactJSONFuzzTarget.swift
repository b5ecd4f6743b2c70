// libFuzzer entry point for the broker's compact JSON reader (built by scripts/fuzz.sh with
// Sources/LocationCore/Broker/CompactJSON.swift and BrokerMessage.swift as one module).
// Invariants checked on every input: no crash; whatever the compact reader accepts,
// Foundation's JSONDecoder reads to the same values (numbers bit for bit); BrokerMessage
// answers as JSONDecoder alone would.
import FoundationEssentials

private let decoder = JSONDecoder()

private func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case (.null, .null): true
    case (.bool(let x), .bool(let y)): x == y
    case (.number(let x), .number(let y)): x.bitPattern == y.bitPattern
    case (.string(let x), .string(let y)): x == y
    case (.array(let x), .array(let y)): x.count == y.count && zip(x, y).allSatisfy(same)
    case (.object(let x), .object(let y)): same(x, y)
    default: false
    }
}

private func same(_ a: [String: JSONValue], _ b: [String: JSONValue]) -> Bool {
    a.count == b.count && a.allSatisfy { key, value in b[key].map { same(value, $0) } ?? false }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCompactJSON(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: start, count: count)
    let expected = try? decoder.decode([String: JSONValue].self, from: Data(bytes))
    if let compact = CompactJSON.object(bytes) {
        precondition(expected.map { same(compact, $0) } == true, "the compact reader read what JSONDecoder does not")
    }
    let message = BrokerMessage(line: bytes)
    let expectedMessage: [String: JSONValue]? =
        if let expected, case .string = expected["class"] { expected } else { nil }
    switch (message, expectedMessage) {
    case (nil, nil): break
    case (let message?, let expectedMessage?): precondition(same(message.fields, expectedMessage))
    default: preconditionFailure("BrokerMessage answered otherwise than JSONDecoder")
    }
    return 0
}
