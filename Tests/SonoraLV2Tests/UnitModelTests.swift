import Foundation
import SonoraCore
import SonoraLV2
import SonoraUnits
import Testing

/// The audio-unit face of a plugin: elements, parameters, latency, control outputs,
/// presets, state, MIDI.
@Suite struct UnitModelTests {
    @Test func busesFollowGroupsDesignationsAndSidechains() throws {
        // mda Delay: ports 6/7 in, 8/9 out, grouped as mainIn/mainOut with pg:left/right.
        let delay = try Fixtures.unit("http://drobilla.net/plugins/mda/Delay")
        #expect(delay.layout.inputs.map(\.ports) == [[6, 7]])
        #expect(delay.layout.outputs.map(\.ports) == [[8, 9]])
        #expect(try delay.streamFormat(scope: .input, element: 0).channelsPerFrame == 2)
        // zam's stereo compressor: its sidechain input is an element of its own.
        let compressor = try Fixtures.unit("urn:zamaudio:ZamCompX2")
        #expect(compressor.elementCount(.input) == 2)
        #expect(compressor.layout.inputs[0].ports == [0, 1])
        #expect(compressor.layout.inputs[1].isSideChain)
        #expect(compressor.layout.inputs[1].ports == [2])
    }

    @Test func rightBeforeLeftInIndexOrderStillMapsLeftFirst() throws {
        var plugin = try Fixtures.world.plugin("http://drobilla.net/plugins/mda/Delay")
        // Swap the designations: channel 0 must now be port 7.
        plugin.ports[6].designation = LV2URI.channelOrder[1]
        plugin.ports[7].designation = LV2URI.channelOrder[0]
        #expect(LV2BusLayout(plugin).inputs[0].ports == [7, 6])
    }

    @Test func controlPortsAreParametersByIndexAndSymbol() throws {
        let unit = try Fixtures.unit("http://lsp-plug.in/plugins/lv2/comp_delay_stereo")
        let mode = try unit.parameterInfo(5)
        #expect(mode.identifier == "mode")
        #expect(mode.unit == .indexed)
        #expect(mode.valueStrings == ["Samples", "Distance", "Time"])
        #expect(try unit.parameterInfo(6).unit == .boolean)  // ramp: toggled
        #expect(try unit.parameterInfo(13).flags.contains(.displayLogarithmic))
        #expect(try unit.parameterInfo(16).flags.contains(.meterReadOnly))
        #expect(try unit.parameterID(symbol: "samp") == 7)
        #expect(throws: AudioError.self) { try unit.setParameter(16, to: 3) }  // outputs are read-only
        #expect(throws: AudioError.self) { try unit.setControl("nonexistent", to: 1) }
        #expect(throws: AudioError.self) { try unit.setControl("samp", to: .nan) }
        let change = try unit.setControl("samp", to: 1e9)
        #expect(change.wasClamped && change.applied == 10000)
    }

    @Test func sampleRatePortsAreScaledToHertz() throws {
        // swh lowpass_iir's cutoff is declared as a fraction of the sample rate.
        let unit = try Fixtures.unit("http://plugin.org.uk/swh-plugins/lowpass_iir")
        let port = try #require(unit.plugin.port(symbol: "cutoff"))
        #expect(port.isSampleRateScaled)
        let info = try unit.parameterInfo(AudioUnitParameterID(port.index))
        #expect(info.maxValue == (port.maximum ?? 0) * 48000)
        #expect(info.unit == .hertz)
    }

    @Test func latencyPortFeedsLatencyPropertyAndGraph() throws {
        let unit = try Fixtures.unit("http://gareus.org/oss/lv2/nodelay")
        try unit.setControl("delay", to: 100)
        _ = try unit.renderOffline(inputs: [[Fixtures.input]], blockSize: 256)
        #expect(unit.latencyFrames == 100)
        guard case .latency(let seconds) = try unit.property(.latency, scope: .global, element: 0) else {
            Issue.record("no latency value")
            return
        }
        #expect(abs(seconds - 100.0 / 48000) < 1e-12)
        // In a graph: the unit's latency counts in the graph's total.
        let fresh = try Fixtures.unit("http://gareus.org/oss/lv2/nodelay")
        try fresh.setControl("delay", to: 64)
        var heard: [AudioUnitPropertyID] = []
        fresh.addPropertyListener(.latency) { _, property, _, _ in heard.append(property) }
        _ = try fresh.renderOffline(inputs: [[Fixtures.input]], blockSize: 256)
        #expect(heard == [.latency], "Latency listeners hear the plugin's report")
        fresh.uninitialize()
        #expect(fresh.latencyFrames == 64, "the last report is kept while uninitialized")
        let graph = AudioGraph()
        let node = graph.addNode(fresh)
        let head = GenericOutputUnit()
        try head.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .input, element: 0)
        try head.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .output, element: 0)
        let output = graph.addNode(head)
        try graph.connect(node, bus: 0, to: output, input: 0)
        #expect(graph.latencyFrames == 64)
    }

    @Test func controlOutputsAreReadable() throws {
        let unit = try Fixtures.unit("http://gareus.org/oss/lv2/meters#dBTPmono")
        _ = try unit.renderOffline(inputs: [[Fixtures.input]], blockSize: 512)
        let peak = try unit.control("level1")
        #expect(peak > 0.5 && peak < 1, "true-peak meter read \(peak)")
    }

    @Test func factoryPresetsApplyPortValues() throws {
        let unit = try Fixtures.unit("http://drobilla.net/plugins/mda/Leslie")
        let presets = unit.factoryPresets
        #expect(presets.map(\.name) == ["Default", "Fast", "Slow"])
        try unit.setProperty(.presentPreset, scope: .global, element: 0, to: .presentPreset(presets[2]))
        #expect(try unit.control("hi_depth") == 0.75)
        #expect(try unit.control("hi_throb") == 0.57)
        #expect(unit.presentPreset?.name == "Slow")
        #expect(throws: AudioError.self) { try unit.applyPreset(uri: "http://example.org/no-such-preset") }
    }

    @Test func classInfoRoundTripsControlsAndPluginState() throws {
        let first = try Fixtures.unit("http://drobilla.net/plugins/mda/Delay")
        try first.setControl("l_delay", to: 0.123)
        try first.setControl("feedback", to: 0.25)
        guard case .classInfo(let state) = try first.property(.classInfo, scope: .global, element: 0) else {
            Issue.record("no class info")
            return
        }
        #expect(state.extra["lv2:uri"] == "http://drobilla.net/plugins/mda/Delay")
        #expect(state.extra["lv2:state"]?.contains("l_delay") == true)
        let second = try Fixtures.unit("http://drobilla.net/plugins/mda/Delay")
        try second.setProperty(.classInfo, scope: .global, element: 0, to: .classInfo(state))
        #expect(try second.control("l_delay") == 0.123)
        #expect(try second.control("feedback") == 0.25)
        let a = try first.renderOffline(inputs: [[Fixtures.input]], blockSize: 512)
        let b = try second.renderOffline(inputs: [[Fixtures.input]], blockSize: 512)
        #expect(a == b)
        // A state from another plugin is refused.
        let other = try Fixtures.unit("http://lv2plug.in/plugins/eg-amp")
        #expect(throws: AudioError.self) { try other.restore(state) }
    }

    @Test func stateRoundTripKeepsPortValues() throws {
        let first = try Fixtures.unit("http://gareus.org/oss/lv2/fil4#stereo")
        #expect(first.plugin.extensionData.contains(LV2URI.stateInterface))
        try first.setControl("gain", to: -9)
        let turtle = try first.saveState()
        let second = try Fixtures.unit("http://gareus.org/oss/lv2/fil4#stereo")
        try second.restoreState(turtle)
        #expect(try second.control("gain") == -9)
        #expect(throws: AudioError.self) { try second.restoreState("this is not turtle @@@") }
    }

    /// eg-params keeps parameters in its state interface, not in ports: a value edited in
    /// the saved Turtle goes into the plugin by restore and comes back out by save.
    @Test func stateInterfacePropertiesSurviveRoundTrip() throws {
        let unit = try Fixtures.unit("http://lv2plug.in/plugins/eg-params")
        let saved = try unit.saveState()
        let property = "<http://lv2plug.in/plugins/eg-params#int>"
        try #require(saved.contains(property), "saved state: \(saved)")
        // Replace the int parameter's value (whatever it was) by 42.
        let lines = saved.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard line.contains(property) else { return String(line) }
            let head = line.components(separatedBy: property)[0]
            let tail = line.trimmingCharacters(in: .whitespaces).hasSuffix(";") ? " ;" : " ."
            return head + property + " 42" + tail
        }
        let edited = lines.joined(separator: "\n")
        let other = try Fixtures.unit("http://lv2plug.in/plugins/eg-params")
        try other.restoreState(edited)
        let again = try other.saveState()
        #expect(!saved.contains(property + " \"42\"^^xsd:int"))
        #expect(again.contains(property + " \"42\"^^xsd:int"), "after restore: \(again)")
    }

    @Test func pluginStateIsNotRestoredUnderARunningPlugin() throws {
        let unit = try Fixtures.unit("http://lv2plug.in/plugins/eg-params", maximumFrames: 256)
        let saved = try unit.saveState()
        _ = try unit.renderOffline(inputs: [], frameCount: 256, blockSize: 256)  // leaves it initialized
        let error = try #require(throws: AudioError.self) { try unit.restoreState(saved) }
        #expect(error.code == .cannotDoInCurrentContext)
        unit.uninitialize()
        try unit.restoreState(saved)
        // Port-only states (mda presets) apply while rendering.
        let leslie = try Fixtures.unit("http://drobilla.net/plugins/mda/Leslie", maximumFrames: 256)
        _ = try leslie.renderOffline(inputs: [[Fixtures.input]], blockSize: 256)
        try leslie.setPresentPreset(leslie.factoryPresets[1])
        #expect(leslie.isInitialized)
    }

    @Test func turtlePresetSavesAndLoadsBack() throws {
        let directory = Fixtures.directory + "/preset-\(UUID().uuidString).lv2"
        let unit = try Fixtures.unit("http://lv2plug.in/plugins/eg-amp")
        try unit.setControl("gain", to: -7.5)
        let uri = try unit.savePreset(label: "Quieter", directory: directory)
        #expect(FileManager.default.fileExists(atPath: directory + "/manifest.ttl"))
        let world = LV2World()
        try world.loadBundle(at: directory)
        let fresh = try LV2Unit(uri: "http://lv2plug.in/plugins/eg-amp", world: world, options: .init(workerMode: .inline))
        #expect(try fresh.control("gain") == 0)
        try fresh.applyPreset(uri: uri)
        #expect(try fresh.control("gain") == -7.5)
        #expect(try world.presets(of: "http://lv2plug.in/plugins/eg-amp").contains { $0.label == "Quieter" })
    }

    @Test func midiNoteTriggersSampler() throws {
        // eg-sampler: atom MIDI input, loads its sample at instantiation; plays it on note-on.
        let unit = try Fixtures.unit("http://lv2plug.in/plugins/eg-sampler", maximumFrames: 256)
        #expect(unit.elementCount(.input) == 0)
        let silent = try unit.renderOffline(inputs: [], frameCount: 4800, blockSize: 256)
        #expect(silent[0][0].allSatisfy { $0 == 0 })
        let played = try unit.renderOffline(inputs: [], frameCount: 4800, blockSize: 256) { block, _ throws(AudioError) in
            if block == 2 { try unit.sendMIDI([0x90, 60, 100], at: 17) }
        }
        let first = played[0][0].firstIndex { $0 != 0 }
        #expect(first == 2 * 256 + 17, "sample starts at frame \(String(describing: first))")
    }

    /// A larger MaximumFramesPerSlice than the plugin was made for: re-instantiated with the
    /// new bound (options:maxBlockLength), state carried over.
    @Test func growingTheBlockBoundReinstantiatesWithState() throws {
        let unit = try Fixtures.unit("http://lv2plug.in/plugins/eg-amp", maximumFrames: 128)
        try unit.setControl("gain", to: -20)
        let ones = [Float](repeating: 1, count: 8192)
        let output = try unit.renderOffline(inputs: [[ones]], blockSize: 4096)[0][0]
        #expect(unit.maximumFramesPerSlice == 4096)
        #expect(output.allSatisfy { abs($0 - 0.1) < 1e-6 })
    }

    @Test func parameterChangeSplitsTheRunAtItsOffset() throws {
        // eg-amp at block size 512 with a gain change 100 frames into block 3: the output
        // switches gain exactly at frame 3 * 512 + 100.
        let unit = try Fixtures.unit("http://lv2plug.in/plugins/eg-amp", maximumFrames: 512)
        let ones = [Float](repeating: 1, count: 4096)
        let output = try unit.renderOffline(inputs: [[ones]], blockSize: 512) { block, _ throws(AudioError) in
            if block == 3 { try unit.setControl("gain", to: -20, bufferOffset: 100) }
        }
        let samples = output[0][0]
        #expect(samples[3 * 512 + 99] == 1)
        #expect(abs(samples[3 * 512 + 100] - 0.1) < 1e-6)
    }
}
