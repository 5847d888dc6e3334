import SonoraCore

/// What is asked of a device: the engine format and the I/O thread's settings. The
/// device reports what it granted in `DeviceFormat`.
public struct AudioDeviceConfiguration: Hashable, Sendable {
    public var sampleRate: Int
    /// Frames per period: what one I/O cycle reads, renders and writes.
    public var periodFrames: Int
    /// Periods in the playback buffer; the round trip is `periods × periodFrames`.
    public var periods: Int
    /// Capture channels (0: no capture).
    public var inputChannels: Int
    /// Playback channels (0: no playback).
    public var outputChannels: Int
    /// The device sample format, or nil for the best one the device offers.
    public var sampleFormat: DeviceSampleFormat?
    /// The access type, or nil for mmap (non-interleaved, then interleaved), then read/write.
    public var access: DeviceAccess?
    /// Refuse (with an explanation) a period size or count the device does not grant
    /// exactly, instead of taking the nearest. Rate and channel counts are always exact.
    public var requiresExactPeriod: Bool
    /// SCHED_FIFO priority of the I/O thread, or nil for normal scheduling.
    public var realtimePriority: Int32?
    /// CPU to pin the I/O thread to.
    public var cpu: Int?
    /// Lock the process's memory (`mlockall`) when the device starts.
    public var locksMemory: Bool
    /// Whether capture is resampled to follow playback's clock (two devices).
    public var driftCorrection: DriftCorrection
    /// How the I/O thread waits for each period (ALSA devices; other drivers have their own clock).
    public var wakeUp: WakeUp = .poll

    /// How the ALSA I/O thread learns that a period is ready.
    public enum WakeUp: Hashable, Sendable {
        /// Sleep in `poll` until ALSA says a period is ready (the device's interrupt).
        case poll
        /// Predict, with a delay-locked loop on the hardware pointer, when the next period
        /// is ready; sleep on an absolute CLOCK_MONOTONIC timer until `headroomMicroseconds`
        /// before it, then read the pointer until the period is there (PipeWire's "tsched").
        /// Falls back to `poll` for cycles whose pointer does not keep its promise, and for
        /// the rest of the run when it keeps failing (a pointer that cannot be trusted).
        case timer(headroomMicroseconds: Int)

        /// The default headroom: above this machine's typical wake-up lateness (30–100 µs).
        public static let defaultHeadroomMicroseconds = 150
        /// Headroom accepted by `validate()`.
        public static let headroomRange = 0...20_000
    }

    public enum DriftCorrection: String, Hashable, Sendable, CaseIterable {
        /// On when capture and playback are on two different sound cards.
        case automatic
        case on
        case off
    }

    public init(
        sampleRate: Int = 48000, periodFrames: Int = 256, periods: Int = 2,
        inputChannels: Int = 2, outputChannels: Int = 2,
        sampleFormat: DeviceSampleFormat? = nil, access: DeviceAccess? = nil,
        requiresExactPeriod: Bool = false, realtimePriority: Int32? = 70, cpu: Int? = nil,
        locksMemory: Bool = false, driftCorrection: DriftCorrection = .automatic
    ) {
        self.driftCorrection = driftCorrection
        self.sampleRate = sampleRate
        self.periodFrames = periodFrames
        self.periods = periods
        self.inputChannels = inputChannels
        self.outputChannels = outputChannels
        self.sampleFormat = sampleFormat
        self.access = access
        self.requiresExactPeriod = requiresExactPeriod
        self.realtimePriority = realtimePriority
        self.cpu = cpu
        self.locksMemory = locksMemory
    }

    /// Checks the numbers before any device is touched.
    public func validate() throws(AudioError) {
        var problems: [String] = []
        if sampleRate < 1000 || sampleRate > 768_000 { problems.append("sample rate \(sampleRate) out of 1000…768000") }
        if periodFrames < 16 || periodFrames > 65536 { problems.append("period \(periodFrames) frames out of 16…65536") }
        if periods < 2 || periods > 64 { problems.append("\(periods) periods out of 2…64") }
        if inputChannels < 0 || inputChannels > 64 { problems.append("\(inputChannels) input channels out of 0…64") }
        if outputChannels < 0 || outputChannels > 64 { problems.append("\(outputChannels) output channels out of 0…64") }
        if inputChannels == 0 && outputChannels == 0 { problems.append("neither input nor output channels") }
        if let priority = realtimePriority, priority < 1 || priority > 99 { problems.append("realtime priority \(priority) out of 1…99") }
        if case .timer(let headroom) = wakeUp, !WakeUp.headroomRange.contains(headroom) {
            problems.append("wake-up headroom \(headroom) µs out of \(WakeUp.headroomRange.lowerBound)…\(WakeUp.headroomRange.upperBound)")
        }
        guard problems.isEmpty else { throw AudioError(.parameterError, problems.joined(separator: "; ")) }
    }
}

/// What one direction of a device granted.
public struct DeviceStreamFormat: Hashable, Sendable, Codable {
    public var pcmName: String
    public var channels: Int
    public var sampleFormat: String
    public var access: String
    public var periodFrames: Int
    public var periods: Int
    public var bufferFrames: Int

    public init(pcmName: String, channels: Int, sampleFormat: String, access: String, periodFrames: Int, periods: Int, bufferFrames: Int) {
        self.pcmName = pcmName
        self.channels = channels
        self.sampleFormat = sampleFormat
        self.access = access
        self.periodFrames = periodFrames
        self.periods = periods
        self.bufferFrames = bufferFrames
    }
}

/// What a device granted: the rate, the period every cycle renders, and each direction.
public struct DeviceFormat: Hashable, Sendable, Codable {
    public var sampleRate: Int
    public var periodFrames: Int
    public var periods: Int
    public var capture: DeviceStreamFormat?
    public var playback: DeviceStreamFormat?
    /// Notes on what differs from the request (nearest period taken, read/write fallback …).
    public var notes: [String]

    public init(sampleRate: Int, periodFrames: Int, periods: Int, capture: DeviceStreamFormat?, playback: DeviceStreamFormat?, notes: [String] = []) {
        self.sampleRate = sampleRate
        self.periodFrames = periodFrames
        self.periods = periods
        self.capture = capture
        self.playback = playback
        self.notes = notes
    }

    public var inputChannels: Int { capture?.channels ?? 0 }
    public var outputChannels: Int { playback?.channels ?? 0 }

    /// The round trip Sonora adds on this device: the playback buffer, prefilled.
    public var roundTripFrames: Int { (playback?.bufferFrames ?? periods * periodFrames) }
}
