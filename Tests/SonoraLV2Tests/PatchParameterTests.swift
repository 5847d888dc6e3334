import Foundation
import SonoraCore
import SonoraLV2
import Testing

/// Parameters that are plugin properties, not ports (lv2:Parameter with patch:writable),
/// set and read through patch:Set / patch:Get on the plugin's control atom ports — eg-params.
@Suite struct PatchParameterTests {
    static let uri = "http://lv2plug.in/plugins/eg-params"
    static func parameter(_ name: String) -> String { "http://lv2plug.in/plugins/eg-params#\(name)" }

    @Test func describedFromTurtle() throws {
        let plugin = try Fixtures.world.plugin(Self.uri)
        let lfo = try #require(plugin.patchParameters.first { $0.uri == Self.parameter("lfo") })
        #expect(lfo.range == LV2URI.atomFloat)
        #expect(lfo.minimum == -1 && lfo.maximum == 1)
        #expect(plugin.patchParameters.first { $0.uri == Self.parameter("int") }?.isWritable == true)
    }

    @Test func patchSetReachesThePluginState() throws {
        let unit = try Fixtures.unit(Self.uri, maximumFrames: 256)
        try unit.setPatchParameter(Self.parameter("int"), to: .int(7))
        try unit.setPatchParameter(Self.parameter("float"), to: .float(0.5))
        try unit.setPatchParameter(Self.parameter("string"), to: .string("Sonora"))
        _ = try unit.renderOffline(inputs: [], frameCount: 512, blockSize: 256)
        let state = try unit.saveState()
        #expect(state.contains("<http://lv2plug.in/plugins/eg-params#int> \"7\"^^xsd:int"), "\(state)")
        #expect(state.contains("<http://lv2plug.in/plugins/eg-params#float> \"0.5\"^^xsd:float"))
        #expect(state.contains("\"Sonora\""))
    }

    @Test func patchGetIsAnsweredOnTheNotifyPort() throws {
        let unit = try Fixtures.unit(Self.uri, maximumFrames: 256)
        try unit.setPatchParameter(Self.parameter("double"), to: .double(2.25))
        _ = try unit.renderOffline(inputs: [], frameCount: 256, blockSize: 256)
        _ = unit.drainAtomOutputs()
        try unit.requestPatchValues()
        _ = try unit.renderOffline(inputs: [], frameCount: 256, blockSize: 256)
        let events = unit.drainAtomOutputs()
        #expect(events.contains { $0.type == LV2URI.atomObject })
        #expect(unit.patchValues[Self.parameter("double")] == .double(2.25))
        #expect(unit.patchValues[Self.parameter("long")] != nil, "patch:Get answers every parameter")
    }

    @Test func wrongTypesAndReadOnlyParametersAreRefused() throws {
        let unit = try Fixtures.unit(Self.uri)
        let wrongType = try #require(throws: AudioError.self) { try unit.setPatchParameter(Self.parameter("int"), to: .float(1)) }
        #expect(wrongType.message.contains(LV2URI.atomInt))
        // lfo is patch:readable only: the plugin writes it.
        #expect(throws: AudioError.self) { try unit.setPatchParameter(Self.parameter("lfo"), to: .float(0.5)) }
        #expect(throws: AudioError.self) { try unit.setPatchParameter("http://example.org/none", to: .int(1)) }
        let amp = try Fixtures.unit("http://lv2plug.in/plugins/eg-amp")
        #expect(throws: AudioError.self) { try amp.setPatchParameter(Self.parameter("int"), to: .int(1)) }
    }
}
