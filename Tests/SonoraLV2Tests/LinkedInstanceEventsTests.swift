import Foundation
import SonoraCore
import SonoraTestSupport
import SonoraUnits
import Testing
@testable import SonoraLV2

/// What reaches a plugin through atom ports — the graph's transport as time:Position, MIDI,
/// patch messages — reaches every linked instance at the same frame, as it reaches a single
/// instance: each linked channel renders as the plugin alone renders it with the same events.
@Suite("LV2 linked instances: transport, MIDI and patch messages", .serialized)
struct LinkedInstanceEventsTests {
    typealias Linked = LinkedInstancesTests

    static func single(_ uri: String, maximumFrames: Int = 512) throws -> LV2Unit {
        try LV2Unit(
            uri: uri, world: Fixtures.world,
            options: .init(sampleRate: Fixtures.sampleRate, maximumFrames: maximumFrames, workerMode: .inline))
    }

    static func impulses(count: Int, every period: Int) -> [Float] {
        (0..<count).map { $0 % period == 0 ? 0.5 : 0 }
    }

    // MARK: time:Position

    static let zamDelay = "urn:zamaudio:ZamDelay"

    /// x42's ZamDelay in tempo sync: its delay follows the host's tempo from time:Position.
    static func syncedDelay(_ unit: AudioUnit, first: LV2Unit, transport: Transport?, input: [[Float]], frames: Int) throws -> [[Float]] {
        try unit.setParameter(try first.parameterID(symbol: "sync"), to: 1)
        try unit.setParameter(try first.parameterID(symbol: "drywet"), to: 1)
        unit.hostCallbacks = transport?.hostCallbacks
        let feed = Linked.Feed(input)
        try unit.setRenderCallback(feed, input: 0)
        try unit.initialize()
        defer { unit.uninitialize() }
        return try Linked.render(unit, frames: frames, blockSize: 256)
    }

    @Test("the transport's tempo reaches every linked instance (ZamDelay in tempo sync, dual mono)")
    func transportReachesEveryInstance() throws {
        let frames = 96000
        let input = Self.impulses(count: frames, every: 48000)
        let transport = try Transport(sampleRate: 48000, tempo: 60, isPlaying: true)
        let alone = try Self.single(Self.zamDelay)
        let reference = try Self.syncedDelay(alone, first: alone, transport: transport, input: [input], frames: frames)[0]
        let withoutTransport = try Self.single(Self.zamDelay)
        let unsynced = try Self.syncedDelay(withoutTransport, first: withoutTransport, transport: nil, input: [input], frames: frames)[0]
        // The check can fail: at 60 BPM the delay differs from the one without a tempo.
        #expect(SignalMeasurement.maximumDifference([reference], [unsynced]) > 0.01, "the tempo changes ZamDelay's output")

        let linked = try Linked.linked(Self.zamDelay)
        let rendered = try Self.syncedDelay(linked, first: linked.instances[0], transport: transport, input: [input, input], frames: frames)
        #expect(SignalMeasurement.maximumDifference([rendered[0]], [reference]) < 1e-6, "the first instance has the tempo")
        #expect(SignalMeasurement.maximumDifference([rendered[1]], [reference]) < 1e-6, "the second instance has it too")
    }

    // MARK: MIDI

    static let filterclavier = "http://calf.sourceforge.net/plugins/Filterclavier"

    /// Calf's Filterclavier (stereo): a MIDI note sets its filter's cutoff.
    static func playedFilter(_ unit: AudioUnit, send: (([UInt8]) throws -> Void)?, input: [[Float]], frames: Int) throws -> [[Float]] {
        let feed = Linked.Feed(input)
        try unit.setRenderCallback(feed, input: 0)
        try unit.initialize()
        defer { unit.uninitialize() }
        if let send { try send([0x90, 84, 127]) }
        return try Linked.render(unit, frames: frames, blockSize: 256)
    }

    @Test("a MIDI note sent to the linked unit reaches every instance (Filterclavier, stereo × 2 on a 4-channel bus)")
    func midiReachesEveryInstance() throws {
        let frames = 24000
        let noise = TestSignal.whiteNoise(count: frames, seed: 3, amplitude: 0.5)
        let alone = try Self.single(Self.filterclavier)
        let reference = try Self.playedFilter(alone, send: { try alone.sendMIDI($0, at: 0) }, input: [noise, noise], frames: frames)
        let silentKeys = try Self.single(Self.filterclavier)
        let unplayed = try Self.playedFilter(silentKeys, send: nil, input: [noise, noise], frames: frames)
        #expect(SignalMeasurement.maximumDifference(reference, unplayed) > 0.01, "the note changes the filter's output")

        let linked = try Linked.linked(Self.filterclavier)
        #expect(linked.instances.count == 2 && linked.channelsPerInstance == 2)
        let rendered = try Self.playedFilter(
            linked, send: { try linked.sendMIDI($0, at: 0) }, input: [noise, noise, noise, noise], frames: frames)
        #expect(SignalMeasurement.maximumDifference(Array(rendered[0..<2]), reference) < 1e-5, "instance 1 played")
        #expect(SignalMeasurement.maximumDifference(Array(rendered[2..<4]), reference) < 1e-5, "instance 2 played")
    }

    // MARK: patch messages

    static let convolver = "http://gareus.org/oss/lv2/zeroconvolv#CfgMono"
    static let impulseResponse = "http://gareus.org/oss/lv2/zeroconvolv#ir"

    /// The messages waiting in an instance's patch queue (taken out), each as its bytes.
    static func queuedMessages(_ instance: LV2Unit) -> [Data] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        var messages: [Data] = []
        while let record = instance.patchQueue.pop(into: buffer.baseAddress!, capacity: buffer.count) {
            messages.append(Data(buffer[0..<record.count]))
        }
        return messages
    }

    /// x42's IR convolver (mono, a patch:writable IR file). Its IR load could not be observed
    /// here (it answers no patch:Get and stays silent with any IR, alone as well as linked), so
    /// this checks the messages each instance is handed: the same patch:Set on every instance,
    /// the patch:Get on the first only (the one whose answers are read).
    @Test("patch:Set on the linked unit is handed to every instance; patch:Get to the first")
    func patchMessagesReachEveryInstance() throws {
        let linked = try Linked.linked(Self.convolver, instances: 3)
        #expect(linked.plugin.patchParameters.contains { $0.uri == Self.impulseResponse })
        try linked.setPatchParameter(Self.impulseResponse, to: .path("/nonexistent/ir.wav"))
        let handed = linked.instances.map(Self.queuedMessages)
        #expect(handed[0].count == 1, "the first instance got the patch:Set")
        #expect(handed[1] == handed[0] && handed[2] == handed[0], "every instance got the same message")
        let alone = try Self.single(Self.convolver)
        try alone.setPatchParameter(Self.impulseResponse, to: .path("/nonexistent/ir.wav"))
        #expect(Self.queuedMessages(alone) == handed[0], "the message a single instance gets")

        try linked.requestPatchValues()
        let asked = linked.instances.map(Self.queuedMessages)
        #expect(asked[0].count == 1 && asked[1].isEmpty && asked[2].isEmpty)
        // A wrong type is refused before any instance gets anything.
        #expect(throws: AudioError.self) { try linked.setPatchParameter(Self.impulseResponse, to: .float(1)) }
        #expect(linked.instances.allSatisfy { $0.patchQueue.isEmpty })
    }
}
