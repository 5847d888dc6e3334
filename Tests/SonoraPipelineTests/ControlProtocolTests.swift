import Foundation
import SonoraPipeline
import SonoraUnits
import Testing

/// The failure a request line decodes to (nil if it decodes).
private func refusal(_ line: String) -> ControlFailure? {
    if case .failure(let failure) = ControlRequest.decode(Array(line.utf8)) { return failure }
    return nil
}

private func request(_ line: String) -> ControlRequest? {
    try? ControlRequest.decode(Array(line.utf8)).get()
}

@Suite("Control protocol: typed requests and answers")
struct ControlProtocolTests {
    @Test("an element that is not a whole number in range is refused, naming the field",
          arguments: [#""1""#, "1.5", "null", "[1]", "{}", "true", "9223372036854775808", "-1", "4294967296", "1e400"])
    func element(_ value: String) throws {
        let failure = try #require(refusal(#"{"cmd":"set","node":"m","param":"volume","value":1,"element":"# + value + "}"))
        #expect(failure.field == "element")
        #expect(failure.code == .badField || failure.code == .outOfRange)
        #expect(failure.message.contains("whole number"), "\(failure.message)")
    }

    @Test("the element's own JSON type is named in the message")
    func elementMessages() {
        #expect(refusal(#"{"cmd":"get","node":"m","param":"volume","element":"1"}"#)?.message.contains("a string") == true)
        #expect(refusal(#"{"cmd":"get","node":"m","param":"volume","element":null}"#)?.message.contains("not null") == true)
        #expect(refusal(#"{"cmd":"get","node":"m","param":"volume","element":[1]}"#)?.message.contains("an array") == true)
        #expect(refusal(#"{"cmd":"get","node":"m","param":"volume","element":1.5}"#)?.message.contains("not a whole number") == true)
        #expect(refusal(#"{"cmd":"get","node":"m","param":"volume","element":9223372036854775808}"#)?.code == .outOfRange)
    }

    @Test("scope must be one of the scope names", arguments: ["5", "null", #""inptu""#, "[]", "true"])
    func scope(_ value: String) throws {
        let failure = try #require(refusal(#"{"cmd":"get","node":"m","param":"volume","scope":"# + value + "}"))
        #expect(failure.field == "scope" && failure.code == .badField)
    }

    @Test("values: text, numbers and flags decode; null, arrays and numbers beyond a double do not")
    func values() throws {
        #expect(request(#"{"cmd":"set","node":"g","param":"gain","value":"-6 dB"}"#) == .set(.init(node: "g", parameter: .name("gain")), value: .text("-6 dB"), ramp: nil))
        #expect(request(#"{"cmd":"set","node":"g","param":3,"value":-6,"ramp":0.5}"#) == .set(.init(node: "g", parameter: .id(3)), value: .number(-6), ramp: 0.5))
        #expect(request(#"{"cmd":"set","node":"g","param":"on","value":true}"#) == .set(.init(node: "g", parameter: .name("on")), value: .flag(true), ramp: nil))
        for value in ["null", "[1]", "{}", "1e400"] {
            #expect(refusal(#"{"cmd":"set","node":"g","param":"gain","value":"# + value + "}")?.field == "value", "\(value)")
        }
        #expect(refusal(#"{"cmd":"set","node":"g","param":"gain","value":1,"ramp":61}"#)?.code == .outOfRange)
        #expect(refusal(#"{"cmd":"set","node":"g","param":"gain","value":1,"ramp":"1"}"#)?.field == "ramp")
        // NaN and infinities cannot be made into a request.
        if case .success = ControlValue.number(.nan) { Issue.record("NaN accepted") }
        if case .success = ControlValue.number(-.infinity) { Issue.record("-inf accepted") }
    }

    @Test("every field is checked: types, missing fields, fields the command does not take")
    func fields() {
        #expect(refusal(#"{"cmd":"get","node":3,"param":"gain"}"#)?.field == "node")
        #expect(refusal(#"{"cmd":"get","node":"g","param":null}"#)?.field == "param")
        #expect(refusal(#"{"cmd":"get","node":"g","param":1.5}"#)?.field == "param")
        #expect(refusal(#"{"cmd":"get","node":"g","param":-1}"#)?.code == .outOfRange)
        #expect(refusal(#"{"cmd":"get","node":"g"}"#) == ControlFailure(.missingField, field: "param", "get needs \"param\""))
        let typo = refusal(#"{"cmd":"set","node":"g","param":"gain","value":1,"elemnt":1}"#)
        #expect(typo?.code == .unknownField && typo?.field == "elemnt" && typo?.message.contains("did you mean 'element'?") == true)
        #expect(refusal(#"{"cmd":"status","node":"g"}"#)?.code == .unknownField)
        #expect(refusal(#"{"cmd":3}"#)?.field == "cmd")
        #expect(refusal(#"{"node":"g"}"#)?.code == .missingField)
        #expect(refusal(#"{"cmd":"set-property","node":"g","property":"bypass","value":1}"#)?.field == "value")
        #expect(refusal(#"{"cmd":"set-property","node":"g","property":"latency","value":1}"#)?.code == .unknownProperty)
        #expect(refusal(#"{"cmd":"get-property","node":"g","property":"bypas"}"#)?.message.contains("did you mean 'bypass'?") == true)
        #expect(refusal(#"{"cmd":"save","path":""}"#)?.field == "path")
        // Two values for one field: neither is used.
        let twice = refusal(#"{"cmd":"get","node":"m","param":"volume","scope":"input","element":1,"element":0}"#)
        #expect(twice?.code == .badRequest && twice?.field == "element")
        #expect(refusal(#"{"cmd":"get","node":"m","param":"volume","\u0065lement":1,"element":0}"#)?.field == "element")
        // Keys of nested values, and strings holding quotes and commas, are no fields.
        #expect(request(#"{"cmd":"set","node":"m","param":"pan","value":"a\",\"value\":1"}"#) != nil)
    }

    @Test("commands: unknown ones get a suggestion from the one list; malformed lines a code")
    func commands() {
        let unknown = refusal(#"{"cmd":"stauts"}"#)
        #expect(unknown?.code == .unknownCommand && unknown?.message.contains("did you mean 'status'?") == true)
        #expect(unknown?.message.contains(ControlCommand.allCases.map(\.name).joined(separator: ", ")) == true)
        #expect(refusal("{not json")?.code == .malformedJSON)
        #expect(refusal("[1,2]")?.code == .badRequest)
        #expect(refusal("\"status\"")?.code == .badRequest)
        #expect(refusal("{\"cmd\":\"status\",\"pad\":\"" + String(repeating: "x", count: 70_000) + "\"}")?.code == .tooLong)
        // A 1 MB command name comes back as a short excerpt.
        let huge = refusal(#"{"cmd":""# + String(repeating: "y", count: 60_000) + #""}"#)
        #expect(huge?.code == .unknownCommand && (huge?.message.count ?? 0) < 400)
    }

    @Test("the protocol version: absent or 1 accepted, any other refused")
    func version() {
        #expect(request(#"{"cmd":"status"}"#) == .status)
        #expect(request(#"{"cmd":"status","version":1}"#) == .status)
        #expect(request(#"{"cmd":"version"}"#) == .version)
        let future = refusal(#"{"cmd":"status","version":2}"#)
        #expect(future?.code == .unsupportedVersion && future?.field == "version")
        #expect(refusal(#"{"cmd":"status","version":"1"}"#)?.field == "version")
        // The version is checked before the command: a newer client's command is not "unknown".
        #expect(refusal(#"{"cmd":"subscribe","version":2}"#)?.code == .unsupportedVersion)
    }

    @Test("requests round-trip through their JSON", arguments: [
        ControlRequest.nodes, .parameters(node: "eq"), .meters, .status, .reload, .version, .save(path: "/tmp/x.yaml", overwrite: false), .save(path: "/tmp/y.yaml", overwrite: true),
        .get(.init(node: "mix", parameter: .name("volume"), scope: .input, element: 1)),
        .set(.init(node: "mix", parameter: .id(0), scope: .output, element: 0), value: .number(-6), ramp: 0.2),
        .set(.init(node: "g", parameter: .name("gain")), value: .text("-6 dB"), ramp: nil),
        .getProperty(node: "eq", property: .preset), .setProperty(node: "eq", .bypass(true)), .setProperty(node: "eq", .preset("Jazz")),
    ])
    func roundTrip(_ original: ControlRequest) throws {
        let line = try original.line()
        #expect(line.last == 10)
        #expect(try ControlRequest.decode(line.dropLast()).get() == original)
    }

    @Test("answers keep the documented shapes: ok beside the payload, errors with code and field")
    func answers() throws {
        func object(_ response: ControlResponse) -> [String: Any] {
            let line = response.line()
            #expect(line.last == 10 && line.dropLast().firstIndex(of: 10) == nil)
            return (try? JSONSerialization.jsonObject(with: Data(line.dropLast()))) as? [String: Any] ?? [:]
        }
        let failure = object(.failure(ControlFailure(.outOfRange, field: "element", "element 5 is out of range")))
        #expect(failure["ok"] as? Bool == false && failure["code"] as? String == "out-of-range" && failure["field"] as? String == "element")
        #expect(failure["error"] as? String == "element 5 is out of range")
        let nodes = object(.nodes([.init(id: "g", kind: "Gain", unit: "aufx gain sonr")]))
        #expect(nodes["ok"] as? Bool == true && (nodes["nodes"] as? [[String: Any]])?.first?["id"] as? String == "g")
        let reading = ControlResponse.ParameterReading(node: "g", param: "Gain", scope: "global", element: 0, value: -6, unit: "dB")
        let get = object(.parameter(reading))
        #expect(get["ok"] as? Bool == true && get["value"] as? Double == -6 && get["param"] as? String == "Gain" && get["unit"] as? String == "dB")
        let meter = object(.meters([.init(node: "m", meter: "Peak 0", scope: "global", element: 0, value: -.infinity, unit: "dB")]))
        #expect((meter["meters"] as? [[String: Any]])?.first?["value"] as? String == "-inf")
        let version = object(.version(.current))
        #expect(version["protocol"] as? Int == ControlProtocol.version && version["sonora"] as? String == ControlProtocol.sonoraVersion)
        #expect(version["commands"] as? [String] == ControlCommand.allCases.map(\.name))
        let property = object(.property(.init(node: "eq", property: .preset, value: .name(nil), presets: ["Jazz"])))
        #expect(property["value"] is NSNull && property["property"] as? String == "preset")
        // And back, as `sonora ctl` reads them.
        #expect(try ControlResponse.decode(Data(ControlResponse.parameter(reading).line().dropLast()), for: .get) == .parameter(reading))
        let refused = ControlResponse.failure(ControlFailure(.reloadRefused, "x", diagnostics: ["a.yaml:1:2: bad"]))
        #expect(try ControlResponse.decode(Data(refused.line().dropLast()), for: .reload) == refused)
    }
}
