import SonoraPipeline
import Testing

/// The control protocol's `device` request: decoded, and refused as a hostile client would
/// write it, naming the field.
@Suite("Control protocol: device")
struct DeviceRequestTests {
    static func decode(_ line: String) -> Result<ControlRequest, ControlFailure> {
        ControlRequest.decode(Array(line.utf8))
    }

    @Test("playback alone, capture alone, both")
    func decodes() throws {
        #expect(try Self.decode(#"{"cmd":"device","playback":"hw:1"}"#).get() == .device(playback: "hw:1", capture: nil))
        #expect(try Self.decode(#"{"cmd":"device","capture":"hw:2"}"#).get() == .device(playback: nil, capture: "hw:2"))
        #expect(try Self.decode(#"{"cmd":"device","playback":"a","capture":"b"}"#).get() == .device(playback: "a", capture: "b"))
    }

    @Test("no name, an empty one, a number, a 257-byte name, an unknown field: refused, naming the field")
    func refusals() {
        let long = String(repeating: "a", count: 257)
        let cases: [(String, ControlFailure.Code, String)] = [
            (#"{"cmd":"device"}"#, .missingField, "playback"),
            (#"{"cmd":"device","playback":""}"#, .badField, "playback"),
            (#"{"cmd":"device","capture":5}"#, .badField, "capture"),
            (#"{"cmd":"device","playback":"\#(long)"}"#, .badField, "playback"),
            (#"{"cmd":"device","playback":"null","extra":1}"#, .unknownField, "extra"),
        ]
        for (line, code, field) in cases {
            guard case .failure(let failure) = Self.decode(line) else {
                Issue.record("accepted: \(line.prefix(60))")
                continue
            }
            #expect(failure.code == code && failure.field == field, "\(line.prefix(60)): \(failure.code) \(failure.field ?? "-") \(failure.message)")
        }
    }
}
