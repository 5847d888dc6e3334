import SonoraCore
import Testing

@testable import SonoraHAL

@Suite("jack: device names")
struct JACKDeviceNameTests {
    @Test("names parse and read back", arguments: [
        ("jack", JACKDeviceName()),
        ("jack:system", JACKDeviceName(peer: .client("system"))),
        ("jack:self", JACKDeviceName(peer: .itself)),
        ("jack:system@studio", JACKDeviceName(peer: .client("system"), server: "studio")),
        ("jack:@studio", JACKDeviceName(peer: .none, server: "studio")),
        ("jack:PulseAudio JACK Sink", JACKDeviceName(peer: .client("PulseAudio JACK Sink"))),
    ])
    func parses(_ text: String, _ expected: JACKDeviceName) throws {
        // (A space is refused by DeviceSpecifier before the JACK parser sees it.)
        if text.contains(" ") {
            #expect(throws: AudioError.self) { try DeviceSpecifier(parsing: text) }
            #expect(try JACKDeviceName.parse(String(text.dropFirst(5))) == expected)
            return
        }
        let specifier = try DeviceSpecifier(parsing: text)
        #expect(specifier == .jack(expected))
        #expect(specifier.driver == "jack")
        #expect(specifier.name == text)
        #expect(DeviceSpecifier.isReserved(text))
    }

    @Test("bad names are refused with what would be right", arguments: [
        ("jack:", "jack:system"),
        ("jack:a:b", "without ':'"),
        ("jack:system@", "server name"),
        ("jack:system@a/b", "server name"),
        ("jack:" + String(repeating: "x", count: 64), "at most 63 bytes"),
    ])
    func refuses(_ text: String, _ hint: String) {
        #expect {
            try DeviceSpecifier(parsing: text)
        } throws: { error in
            (error as? AudioError)?.message.contains(hint) == true
        }
    }
}
