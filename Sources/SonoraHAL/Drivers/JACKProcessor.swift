import CJackLoader
import SonoraCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What JACK's callbacks reach through their `arg` pointer, for one activation of the
/// client: the engine (period buffers, clock, procedure), the ports, and flags the other
/// JACK threads raise for the device's control thread. Made and released off the
/// realtime thread; the process callback only reads it through an unretained pointer.
final class JACKProcessor: @unchecked Sendable {
    let engine: IOEngine
    let monitor: DeviceMonitor
    let periodFrames: Int
    let inputs: UnsafeMutablePointer<OpaquePointer?>
    let outputs: UnsafeMutablePointer<OpaquePointer?>
    let inputCount: Int
    let outputCount: Int
    /// Xruns JACK reported (xrun callback), and their total delay; the process callback
    /// posts their events (the event queue has one producer: the realtime thread).
    let xrunsReported = Atomic<Int>(0)
    let xrunDelayNanoseconds = Atomic<UInt64>(0)
    private var xrunsPosted = 0
    /// The client the callbacks are installed on (for JACK's xrun delay).
    private(set) var client: OpaquePointer?
    /// Raised by JACK's other threads, handled by the device's control thread.
    let serverGone = Atomic<Bool>(false)
    let formatChanged = Atomic<Bool>(false)
    /// The buffer size and rate the server last announced.
    let announcedFrames = Atomic<Int>(0)
    let announcedRate = Atomic<Int>(0)

    init(periodFrames: Int, sampleRate: Int, inputs: [OpaquePointer?], outputs: [OpaquePointer?], monitor: DeviceMonitor, procedure: IOProcedure?) throws(AudioError) {
        self.periodFrames = periodFrames
        self.monitor = monitor
        inputCount = inputs.count
        outputCount = outputs.count
        self.inputs = .allocate(capacity: max(1, inputs.count))
        self.inputs.initialize(from: inputs, count: inputs.count)
        self.outputs = .allocate(capacity: max(1, outputs.count))
        self.outputs.initialize(from: outputs, count: outputs.count)
        announcedFrames.store(periodFrames, ordering: .relaxed)
        announcedRate.store(sampleRate, ordering: .relaxed)
        engine = try IOEngine(
            periodFrames: periodFrames, sampleRate: sampleRate, inputChannels: inputs.count, outputChannels: outputs.count,
            outputOffsetFrames: 0, monitor: monitor)
        engine.procedure = procedure
    }

    deinit {
        inputs.deallocate()
        outputs.deallocate()
    }

    var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Registers every callback on `client` (inactive) with this processor as their argument.
    func install(on client: OpaquePointer) {
        self.client = client
        sonora_jack_set_process_callback(client, jackProcess, context)
        sonora_jack_set_buffer_size_callback(client, jackBufferSize, context)
        sonora_jack_set_sample_rate_callback(client, jackSampleRate, context)
        sonora_jack_set_xrun_callback(client, jackXrun, context)
        sonora_jack_set_latency_callback(client, jackLatency, context)
        sonora_jack_on_info_shutdown(client, jackShutdown, context)
    }

    /// One JACK period, on JACK's realtime thread: ports → input list, procedure,
    /// output list → ports. No allocation, lock, log or reference counting.
    @inline(__always)
    func process(_ frames: Int) {
        guard frames == periodFrames else {
            // The server changed the period before the control thread re-made the engine:
            // play silence until it has.
            for channel in 0..<outputCount {
                if let buffer = sonora_jack_port_get_buffer(outputs[channel], jack_nframes_t(frames)) {
                    buffer.assumingMemoryBound(to: Float.self).update(repeating: 0, count: frames)
                }
            }
            formatChanged.store(true, ordering: .releasing)
            return
        }
        let wake = HostTime.now
        postXruns()
        engine.periodBoundary(at: wake.seconds)
        let input = engine.inputList
        for channel in 0..<inputCount {
            if let buffer = sonora_jack_port_get_buffer(inputs[channel], jack_nframes_t(frames)) {
                input.samples(channel).update(from: buffer.assumingMemoryBound(to: Float.self), count: frames)
            } else {
                input.samples(channel).update(repeating: 0, count: frames)
            }
        }
        _ = engine.render()
        let output = engine.outputList
        for channel in 0..<outputCount {
            if let buffer = sonora_jack_port_get_buffer(outputs[channel], jack_nframes_t(frames)) {
                buffer.assumingMemoryBound(to: Float.self).update(from: output.samples(channel), count: frames)
            }
        }
        engine.recordLoad(since: wake.nanoseconds)
    }

    /// Posts the xruns JACK reported since the last cycle, as ALSA's playback underruns.
    @inline(__always)
    private func postXruns() {
        let reported = xrunsReported.load(ordering: .acquiring)
        guard reported != xrunsPosted else { return }
        let delay = xrunDelayNanoseconds.exchange(0, ordering: .relaxed)
        monitor.add(monitor.playbackXruns, reported &- xrunsPosted)
        monitor.xrunNanoseconds.wrappingAdd(delay, ordering: .relaxed)
        monitor.post(.xrun(.playback, nanoseconds: delay, sampleTime: engine.sampleTime))
        xrunsPosted = reported
        engine.restartClock(at: HostTime.now.seconds)
    }

    /// JACK's latency callback: Sonora adds no latency of its own beyond JACK's period,
    /// so each port's range passes through — capture latency from the inputs onto the
    /// outputs, playback latency from the outputs onto the inputs.
    func propagateLatency(_ mode: jack_latency_callback_mode_t) {
        if mode == JackCaptureLatency {
            let range = Self.union(of: inputs, count: inputCount, mode: mode)
            for channel in 0..<outputCount { Self.set(range, on: outputs[channel], mode: mode) }
        } else {
            let range = Self.union(of: outputs, count: outputCount, mode: mode)
            for channel in 0..<inputCount { Self.set(range, on: inputs[channel], mode: mode) }
        }
    }

    /// The widest range over `ports` (0…0 for none).
    static func union(of ports: UnsafeMutablePointer<OpaquePointer?>, count: Int, mode: jack_latency_callback_mode_t) -> ClosedRange<Int> {
        var low = Int.max
        var high = 0
        for index in 0..<count {
            var range = jack_latency_range_t()
            sonora_jack_port_get_latency_range(ports[index], mode, &range)
            low = min(low, Int(range.min))
            high = max(high, Int(range.max))
        }
        return low == .max ? 0...0 : low...max(low, high)
    }

    private static func set(_ range: ClosedRange<Int>, on port: OpaquePointer?, mode: jack_latency_callback_mode_t) {
        var value = jack_latency_range_t(min: jack_nframes_t(range.lowerBound), max: jack_nframes_t(range.upperBound))
        sonora_jack_port_set_latency_range(port, mode, &value)
    }
}

// MARK: The C callbacks (arg: an unretained JACKProcessor)

private func jackProcess(_ frames: jack_nframes_t, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    Unmanaged<JACKProcessor>.fromOpaque(arg!)._withUnsafeGuaranteedRef { $0.process(Int(frames)) }
    return 0
}

private func jackBufferSize(_ frames: jack_nframes_t, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    Unmanaged<JACKProcessor>.fromOpaque(arg!)._withUnsafeGuaranteedRef { processor in
        processor.announcedFrames.store(Int(frames), ordering: .relaxed)
        if Int(frames) != processor.periodFrames { processor.formatChanged.store(true, ordering: .releasing) }
    }
    return 0
}

private func jackSampleRate(_ rate: jack_nframes_t, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    Unmanaged<JACKProcessor>.fromOpaque(arg!)._withUnsafeGuaranteedRef { processor in
        let previous = processor.announcedRate.exchange(Int(rate), ordering: .relaxed)
        if previous != Int(rate) { processor.formatChanged.store(true, ordering: .releasing) }
    }
    return 0
}

private func jackXrun(_ arg: UnsafeMutableRawPointer?) -> Int32 {
    Unmanaged<JACKProcessor>.fromOpaque(arg!)._withUnsafeGuaranteedRef { processor in
        let delay = processor.client.map { sonora_jack_get_xrun_delayed_usecs($0) } ?? 0
        processor.xrunDelayNanoseconds.wrappingAdd(UInt64(max(0, delay * 1000)), ordering: .relaxed)
        processor.xrunsReported.wrappingAdd(1, ordering: .releasing)
    }
    return 0
}

private func jackLatency(_ mode: jack_latency_callback_mode_t, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<JACKProcessor>.fromOpaque(arg!)._withUnsafeGuaranteedRef { $0.propagateLatency(mode) }
}

private func jackShutdown(_ code: jack_status_t, _ reason: UnsafePointer<CChar>?, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<JACKProcessor>.fromOpaque(arg!)._withUnsafeGuaranteedRef { $0.serverGone.store(true, ordering: .releasing) }
}
