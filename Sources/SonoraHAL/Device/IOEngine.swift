import SonoraCore

/// The part of every driver's I/O cycle that is not about the device: the period
/// buffers, the cycle record, time stamps from the delay-locked loop, the call of the
/// procedure, load accounting. Used only on the I/O thread once started.
final class IOEngine: @unchecked Sendable {
    let input: OwnedAudioBufferList
    let output: OwnedAudioBufferList
    let periodFrames: Int
    let sampleRate: Double
    let periodSeconds: Double
    /// Frames between a cycle's input and its output being heard, beyond the period.
    let outputOffsetFrames: Int
    let monitor: DeviceMonitor
    let cycle: UnsafeMutablePointer<IOCycle>
    var procedure: IOProcedure?
    var loop: DelayLockedLoop
    private(set) var sampleTime: Double = 0

    init(periodFrames: Int, sampleRate: Int, inputChannels: Int, outputChannels: Int, outputOffsetFrames: Int, monitor: DeviceMonitor) throws(AudioError) {
        self.periodFrames = periodFrames
        self.sampleRate = Double(sampleRate)
        periodSeconds = Double(periodFrames) / Double(sampleRate)
        self.outputOffsetFrames = outputOffsetFrames
        self.monitor = monitor
        // Zero-channel lists still need a valid channel array; capacity 1 provides it.
        input = try OwnedAudioBufferList(channelCount: max(1, inputChannels), frameCapacity: periodFrames)
        output = try OwnedAudioBufferList(channelCount: max(1, outputChannels), frameCapacity: periodFrames)
        cycle = .allocate(capacity: 1)
        ownInputList = input.list(frameCount: periodFrames).channels(prefix: inputChannels)
        ownOutputList = output.list(frameCount: periodFrames).channels(prefix: outputChannels)
        cycle.initialize(to: IOCycle(
            input: ownInputList, output: ownOutputList,
            frameCount: periodFrames, inputTime: AudioTimeStamp(), outputTime: AudioTimeStamp()))
        loop = DelayLockedLoop(periodSeconds: periodSeconds)
    }

    deinit { cycle.deallocate() }

    var inputList: AudioBufferList { cycle.pointee.input }
    var outputList: AudioBufferList { cycle.pointee.output }
    /// The engine's own period buffers as the cycle's lists (what `inputList`/`outputList`
    /// are unless a driver lends the device's buffers for a cycle).
    private(set) var ownInputList: AudioBufferList
    private(set) var ownOutputList: AudioBufferList

    /// The cycle reads and fills the device's own buffers (a driver whose device hands it
    /// whole-period, non-interleaved Float32 channels: no copy in or out). Both lists must
    /// have the engine's channel counts and period.
    @inline(__always)
    func lend(input: AudioBufferList, output: AudioBufferList) {
        cycle.pointee.input = input
        cycle.pointee.output = output
    }

    /// Back to the engine's own period buffers (after `lend`).
    @inline(__always)
    func useOwnBuffers() {
        cycle.pointee.input = ownInputList
        cycle.pointee.output = ownOutputList
    }

    /// Restarts the clock (stream start or restart after an xrun); sample time continues.
    func restartClock(at seconds: Double) {
        loop.reset(at: seconds)
    }

    /// Marks a period boundary seen at `seconds`; records wake-up lateness.
    @inline(__always)
    func periodBoundary(at seconds: Double) {
        let lateness = loop.update(at: seconds)
        monitor.recordJitter(Int(lateness * 1e9))
        monitor.rateScalarBits.store(loop.rateScalar.bitPattern, ordering: .relaxed)
    }

    /// Calls the procedure for one period (input already captured into `inputList`),
    /// output cleared first. Returns the procedure's status.
    @inline(__always)
    func render() -> Int32 {
        clearOutput()
        let rate = loop.rateScalar
        let periodStart = loop.periodStart
        // (An option-set array literal would allocate in debug builds.)
        let flags = AudioTimeStamp.Flags(rawValue: AudioTimeStamp.Flags.sampleHostTimeValid.rawValue | AudioTimeStamp.Flags.rateScalarValid.rawValue)
        let inputHost = periodStart - periodSeconds / rate
        let outputHost = periodStart + Double(outputOffsetFrames) / sampleRate / rate
        cycle.pointee.inputTime = AudioTimeStamp(
            sampleTime: sampleTime, hostTime: UInt64(max(0, inputHost) * 1e9), rateScalar: rate,
            flags: flags)
        cycle.pointee.outputTime = AudioTimeStamp(
            sampleTime: sampleTime + Double(outputOffsetFrames + periodFrames), hostTime: UInt64(max(0, outputHost) * 1e9),
            rateScalar: rate, flags: flags)
        var status: Int32 = 0
        if let procedure { status = procedure(cycle) }
        if status != 0 {
            cycle.pointee.output.clear()
            monitor.add(monitor.renderErrors)
            monitor.post(.renderError(status: status, sampleTime: sampleTime))
        }
        sampleTime += Double(periodFrames)
        monitor.sampleTimeBits.store(sampleTime.bitPattern, ordering: .relaxed)
        monitor.add(monitor.cycles)
        return status
    }

    /// `cycle.output.clear()` written out here: SonoraCore's `@inlinable` clear was left a
    /// call, one more code page to bring back in each cycle (profile in BENCHMARKS.md).
    @inline(__always)
    private func clearOutput() {
        let output = cycle.pointee.output
        for channel in 0..<output.channelCount {
            output.samples(channel).update(repeating: 0, count: output.frameCount)
        }
    }

    /// Adds frames the device skipped (xrun) so sample time keeps following the device.
    func skip(frames: Int) { sampleTime += Double(frames) }

    /// Records the cycle's load; returns the host time it read (ns) for a caller that needs "now" too.
    @inline(__always) @discardableResult
    func recordLoad(since start: UInt64) -> UInt64 {
        let now = HostTime.now.nanoseconds
        recordLoad(from: start, to: now)
        return now
    }

    /// Records the load of a cycle from `start` to `end` (ns), both read by the caller.
    @inline(__always)
    func recordLoad(from start: UInt64, to end: UInt64) {
        // Int64, not UInt64, to Double: the same value for any cycle shorter than 292 years,
        // one instruction instead of two and a constant from .rodata.
        monitor.recordLoad(Double(Int64(bitPattern: end &- start)) / 1e9 / periodSeconds)
    }
}
