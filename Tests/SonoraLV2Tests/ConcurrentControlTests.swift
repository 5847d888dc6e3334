import Foundation
import SonoraCore
import SonoraUnits
import Synchronization
import Testing
@testable import SonoraLV2

/// The realtime thread renders while the control thread changes parameters, sends MIDI and
/// patch messages and reads meters — the way an appliance runs a plugin (also under TSan).
@Suite(.serialized) struct ConcurrentControlTests {
    @Test func controlThreadTalksToARenderingPlugin() throws {
        let unit = try LV2Unit(
            uri: "http://lv2plug.in/plugins/eg-sampler", world: Fixtures.world,
            options: .init(maximumFrames: 256, workerMode: .thread))
        try unit.initialize()
        defer { unit.uninitialize() }
        let buffers = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 256)
        let list = buffers.list
        let done = Atomic<Bool>(false)
        let nonSilent = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let stopped = Atomic<Bool>(false)
        let renderer = Thread {
            var cycle = 0
            while !done.load(ordering: .acquiring) {
                var flags = RenderActionFlags()
                let status = unit.render(
                    flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * 256)), bus: 0, frameCount: 256,
                    into: list)
                if status != .noError { failures.add(1, ordering: .relaxed) }
                if list.samples(0)[255] != 0 || list.samples(0)[0] != 0 { nonSilent.add(1, ordering: .relaxed) }
                cycle += 1
                sched_yield()
            }
            stopped.store(true, ordering: .releasing)  // the control side may uninitialize after this
        }
        renderer.start()
        let gain = "http://lv2plug.in/ns/ext/parameters#gain"
        let sample = "http://lv2plug.in/plugins/eg-sampler#sample"
        for step in 0..<200 {
            try unit.sendMIDI([0x90, UInt8(48 + step % 24), 100], at: step % 256)
            try unit.setPatchParameter(gain, to: .float(Float(step % 12) - 6))
            if step % 50 == 0 {
                // Loading a sample goes through worker:schedule to the worker thread.
                try unit.setPatchParameter(sample, to: .path("/usr/lib/lv2/eg-sampler.lv2/click.wav"))
            }
            _ = unit.drainAtomOutputs()
            unit.drainLog()
            usleep(500)
        }
        done.store(true, ordering: .releasing)
        while !stopped.load(ordering: .acquiring) { usleep(1000) }
        #expect(failures.load(ordering: .relaxed) == 0)
        #expect(nonSilent.load(ordering: .relaxed) > 0, "no note was heard")
    }
}
