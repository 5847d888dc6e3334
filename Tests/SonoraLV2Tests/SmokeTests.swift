import Testing
@testable import SonoraLV2

@Test func worldListsEgAmp() throws {
    let world = LV2World.shared
    let amp = try world.plugin("http://lv2plug.in/plugins/eg-amp")
    #expect(amp.name == "Simple Amplifier")
}
