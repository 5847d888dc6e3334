import CAllocationCounter
import CLilv
import Foundation
import SonoraCore
import SonoraUnits
import Synchronization
import Testing
@testable import SonoraLV2

/// The render path of an LV2 unit makes no heap call, whatever the plugin kind:
/// plain audio, atom ports, MIDI, sidechain, parameter changes splitting runs.
@Suite("LV2 render allocates nothing", .serialized, .enabled(if: sonora_allocation_counter_available() != 0))
struct RenderAllocationLV2Tests {
    static let plugins = [
        "http://lv2plug.in/plugins/eg-amp", "http://drobilla.net/plugins/mda/Delay", "urn:zamaudio:ZamCompX2",
        "http://gareus.org/oss/lv2/fil4#stereo", "http://lv2plug.in/plugins/eg-sampler",
        "http://lsp-plug.in/plugins/lv2/comp_delay_stereo",
    ]

    final class Silence: RenderCallbackTarget {
        override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
            let buffers = request.pointee.buffers
            for channel in 0..<buffers.channelCount {
                let samples = buffers.samples(channel)
                for frame in 0..<request.pointee.frameCount { samples[frame] = Float(frame % 64) / 64 - 0.5 }
            }
            return .noError
        }
    }

    @Test(arguments: plugins)
    func renderMakesNoHeapCalls(_ uri: String) throws {
        let unit = try Fixtures.unit(uri, maximumFrames: 512)
        for input in 0..<unit.elementCount(.input) { try unit.setRenderCallback(Silence(), input: input) }
        try unit.initialize()
        defer { unit.uninitialize() }
        let outputs = try (0..<unit.elementCount(.output)).map { element in
            try OwnedAudioBufferList(
                channelCount: Int(try unit.streamFormat(scope: .output, element: element).channelsPerFrame), frameCapacity: 512)
        }
        let control = unit.plugin.ports.first { $0.kind == .control && $0.direction == .input && !$0.isToggled && !$0.isInteger }
        // Plain values only in the measured loop (iterating an array of class references allocates in debug builds).
        let lists = UnsafeMutableBufferPointer<AudioBufferList>.allocate(capacity: outputs.count)
        defer { lists.deallocate() }
        for (bus, output) in outputs.enumerated() { lists[bus] = output.list }
        func cycle(_ index: Int) -> AudioError.Code {
            var status = AudioError.Code.noError
            for bus in 0..<lists.count {
                var flags = RenderActionFlags()
                let result = unit.render(
                    flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 512)), bus: bus, frameCount: 512,
                    into: lists[bus])
                if result != .noError { status = result }
            }
            return status
        }
        for index in 0..<20 { #expect(cycle(index) == .noError) }
        var heapCalls = 0
        for index in 20..<520 {
            // Control-side work between cycles (not counted): parameter changes and MIDI.
            if index % 10 == 0, let control {
                let info = try unit.parameterInfo(AudioUnitParameterID(control.index))
                try unit.setParameter(
                    AudioUnitParameterID(control.index), to: info.minValue + (info.maxValue - info.minValue) * Float(index % 7) / 7,
                    bufferOffset: index % 512)
            }
            if index % 25 == 0, unit.plugin.ports.contains(where: \.takesMIDI) {
                try unit.sendMIDI([0x90, 60, 100], at: 100)
            }
            sonora_allocation_counter_begin()
            let status = cycle(index)
            heapCalls += sonora_allocation_counter_end()
            #expect(status == .noError)
        }
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 500 render cycles of \(uri)")
        withExtendedLifetime(outputs) {}
    }
}

@Suite struct URIDMapTests {
    @Test func mapsOnceAndUnmapsBack() {
        let map = URIDMap(capacity: 64)
        let a = map.map("http://example.org/a")
        let b = map.map("http://example.org/b")
        #expect(a != 0 && b != 0 && a != b)
        #expect(map.map("http://example.org/a") == a)
        #expect(map.uri(of: b) == "http://example.org/b")
        #expect(map.uri(of: 999) == nil)
    }

    @Test func fullTableReturnsZero() {
        let map = URIDMap(capacity: 4)
        for index in 0..<4 { #expect(map.map("urn:x:\(index)") != 0) }
        #expect(map.map("urn:x:overflow") == 0)
        #expect(map.map("urn:x:2") != 0)  // lookups still work
    }

    @Test func concurrentMappingAgrees() async {
        let map = URIDMap(capacity: 4096)
        let results = await withTaskGroup(of: [UInt32].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<500).map { map.map("urn:concurrent:\($0)") } }
            }
            var all: [[UInt32]] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(Set(results.map { $0 }).count == 1, "threads got different URIDs for the same URIs")
        #expect(map.mappedCount == 500)
    }

    @Test(.enabled(if: sonora_allocation_counter_available() != 0))
    func alreadyMappedLookupsMakeNoHeapCalls() throws {
        let map = URIDMap()
        let uri = "http://lv2plug.in/ns/ext/atom#Sequence"
        let urid = map.map(uri)
        try uri.withCString { text in
            sonora_allocation_counter_begin()
            var same = true
            for _ in 0..<1000 { same = same && map.map(text) == urid && map.unmap(urid) != nil }
            let calls = sonora_allocation_counter_end()
            #expect(same)
            #expect(calls == 0)
        }
    }
}

/// worker:schedule in both modes, through the same C entry points a plugin calls.
@Suite struct WorkerTests {
    /// A plugin-side worker: work() doubles the request and responds; work_response() records it.
    final class Recorder: @unchecked Sendable {
        let responses = Mutex<[UInt32]>([])
        let workThreads = Mutex<Set<UInt>>([])
    }

    static func interface() -> LV2_Worker_Interface {
        LV2_Worker_Interface(
            work: { handle, respond, respondHandle, size, data in
                let recorder = Unmanaged<Recorder>.fromOpaque(handle!).takeUnretainedValue()
                let thread = UInt(pthread_self())
                recorder.workThreads.withLock { $0.insert(thread) }
                var doubled = data!.load(as: UInt32.self) * 2
                return respond!(respondHandle, 4, &doubled)
            },
            work_response: { handle, _, data in
                let recorder = Unmanaged<Recorder>.fromOpaque(handle!).takeUnretainedValue()
                recorder.responses.withLock { $0.append(data!.load(as: UInt32.self)) }
                return LV2_WORKER_SUCCESS
            },
            end_run: nil)
    }

    @Test func inlineWorkIsAnsweredAfterTheSameRun() throws {
        let recorder = Recorder()
        let worker = try LV2Worker(mode: .inline)
        var interface = Self.interface()
        worker.attach(interface: withUnsafePointer(to: &interface) { $0 }, handle: Unmanaged.passUnretained(recorder).toOpaque())
        var request: UInt32 = 21
        let status = worker.feature.pointee.schedule_work(worker.feature.pointee.handle, 4, &request)
        #expect(status == LV2_WORKER_SUCCESS)
        worker.afterRun()
        #expect(recorder.responses.withLock { $0 } == [42])
        withExtendedLifetime(interface) {}
    }

    @Test func threadedWorkRunsOffTheCallingThread() async throws {
        let recorder = Recorder()
        let worker = try LV2Worker(mode: .thread)
        let interface = UnsafeMutablePointer<LV2_Worker_Interface>.allocate(capacity: 1)
        interface.initialize(to: Self.interface())
        defer { interface.deallocate() }
        worker.attach(interface: UnsafePointer(interface), handle: Unmanaged.passUnretained(recorder).toOpaque())
        var schedulingThreads = Set<UInt>()
        for value in UInt32(1)...5 {
            schedulingThreads.insert(UInt(pthread_self()))
            var request = value
            #expect(worker.feature.pointee.schedule_work(worker.feature.pointee.handle, 4, &request) == LV2_WORKER_SUCCESS)
        }
        var waited = 0
        while recorder.responses.withLock({ $0.count }) < 5 && waited < 400 {
            try await Task.sleep(nanoseconds: 5_000_000)
            worker.afterRun()
            waited += 1
        }
        worker.stop()
        #expect(recorder.responses.withLock { $0 } == [2, 4, 6, 8, 10])
        let workThreads = recorder.workThreads.withLock { $0 }
        #expect(workThreads.count == 1)
        #expect(workThreads.isDisjoint(with: schedulingThreads), "work ran on the scheduling thread")
    }
}
